"""components/topology/parse/cluster_security.py: secure defaults, secret references, TLS stores."""

from __future__ import annotations

from components.topology import (
    TopologyError,
    parse_topology,
)
from tests.unit.topology.helpers import dev_config, problem_at, problems, secure_config, tls_config


def test_local_tls_rejects_stores_and_passwords_from_config() -> None:
    config = tls_config()
    config["clusters"]["primary"]["security"] = {"protocol": "SASL_SSL", "keystoreLocation": "/k.p12"}
    problem = problem_at(config, "mm2:clusters.primary.security.keystoreLocation")
    assert "platform: external" in problem.fix
    config["clusters"]["primary"]["security"] = {
        "protocol": "SSL",
        "truststorePassword": {"secret": "my.ts.password"},
    }
    problem = problem_at(config, "mm2:clusters.primary.security.truststorePassword")
    assert 'mm2:secrets["tls.truststore.password"]' in problem.fix


def test_external_truststore_password_needs_a_location() -> None:
    config = dev_config()
    config["clusters"]["dr"] = {
        "platform": "external",
        "brokers": 3,
        "bootstrap": "dr:9093",
        "security": {"protocol": "SSL", "truststorePassword": {"secret": "dr.ssl.truststore.password"}},
    }
    config["workerGroups"]["mm2"] = {"cluster": "dr", "url": "https://connect.dr:8443"}
    assert "truststoreLocation" in problem_at(config, "mm2:clusters.dr.security.truststorePassword").fix


def test_local_clusters_default_to_scram_with_a_generated_mm2_password() -> None:
    topology = parse_topology(secure_config())
    security = topology.clusters["primary"].security
    assert security.protocol.value == "SASL_PLAINTEXT"
    assert security.sasl_mechanism is not None and security.sasl_mechanism.value == "SCRAM-SHA-512"
    assert security.username == "mm2"
    assert security.password is not None and security.password.key == "primary.mm2.password"


def test_plain_text_password_must_be_a_secret_reference() -> None:
    config = dev_config()
    config["clusters"]["primary"]["security"] = {
        "protocol": "SASL_PLAINTEXT",
        "saslMechanism": "PLAIN",
        "username": "mm2",
        "password": "hunter2",
    }
    problem = problem_at(config, "mm2:clusters.primary.security.password")
    assert "plain text" in problem.message
    assert '{secret: "primary.mm2.password"}' in problem.fix
    assert "hunter2" not in str(TopologyError(problems(config)))


def test_local_tls_stores_come_from_the_stack_not_from_config() -> None:
    config = dev_config()
    config["clusters"]["primary"]["security"] = {"protocol": "SASL_SSL", "truststoreLocation": "/tmp/ts.p12"}
    assert "generates" in problem_at(config, "mm2:clusters.primary.security.truststoreLocation").message
    config["clusters"]["primary"]["security"] = {"protocol": "SSL"}
    assert parse_topology(config).clusters["primary"].security.protocol.value == "SSL"


def external_ssl(**security: object) -> dict:
    config = dev_config()
    config["clusters"]["dr"] = {
        "platform": "external",
        "brokers": 3,
        "bootstrap": "dr:9093",
        "security": {"protocol": "SSL", **security},
    }
    config["workerGroups"]["mm2"] = {"cluster": "dr", "url": "https://connect.dr:8443"}
    return config


def test_a_non_local_tls_cluster_may_name_the_ca_this_machine_trusts_it_with() -> None:
    topology = parse_topology(external_ssl(caLocation="/etc/mm2/dr-ca.pem"))
    assert topology.clusters["dr"].security.ca_location == "/etc/mm2/dr-ca.pem"
    assert parse_topology(external_ssl()).clusters["dr"].security.ca_location is None


def test_ca_location_is_refused_where_it_has_no_effect() -> None:
    config = tls_config()
    config["clusters"]["primary"]["security"]["caLocation"] = "/ca.pem"
    assert "Remove caLocation" in problem_at(config, "mm2:clusters.primary.security.caLocation").fix
    plain = external_ssl(caLocation="/ca.pem")
    plain["clusters"]["dr"]["security"]["protocol"] = "PLAINTEXT"
    assert "SSL or SASL_SSL" in problem_at(plain, "mm2:clusters.dr.security.caLocation").fix
