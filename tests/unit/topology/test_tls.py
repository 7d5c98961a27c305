"""TLS in the pure model: what the stack CA issues, where it lives, what configs reference."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from components.topology import (
    SecurityProtocol,
    broker_properties,
    flow_connectors,
    parse_topology,
    worker_properties,
    worker_rest_urls,
)
from components.topology.runtime_config import broker_secret_keys, worker_secret_keys
from components.topology.security import (
    admin_bootstrap_client,
    generated_secret_keys,
    group_secret_keys,
    librdkafka_client,
    required_secret_keys,
    security_problems,
)
from components.topology.tls import (
    LOOPBACK_SANS,
    needs_renewal,
    tls_plan,
)
from tests.unit.topology.helpers import LAYOUT, SECRETS, dev_config, tls_config, tls_topology


def test_plan_issues_one_certificate_per_tls_cluster_and_https_group() -> None:
    plan = tls_plan(tls_topology(), "dev")
    assert plan.ca_common_name == "mm2 dev CA"
    assert [leaf.name for leaf in plan.leaves] == ["cluster-dr", "cluster-primary", "rest-mm2"]
    assert all(leaf.sans == LOOPBACK_SANS == ("IP:127.0.0.1", "DNS:localhost") for leaf in plan.leaves)
    assert all(0 < leaf.validity_days <= 398 for leaf in plan.leaves)  # browsers' cap for leaf certificates
    assert plan.secret_keys == (
        "dr.ssl.keystore.password",
        "mm2.rest.keystore.password",
        "primary.ssl.keystore.password",
        "tls.ca.password",
        "tls.truststore.password",
    )


def test_no_tls_no_plan_and_no_tls_secrets() -> None:
    topology = parse_topology(dev_config())
    assert tls_plan(topology, "dev").leaves == ()
    assert not any("ssl" in k or k.startswith("tls.") for k in generated_secret_keys(topology))


def test_tls_passwords_are_generated_and_required() -> None:
    topology = tls_topology()
    generated = set(generated_secret_keys(topology))
    assert {"tls.ca.password", "tls.truststore.password", "mm2.rest.keystore.password"} <= generated
    # Every key a placeholder references can be resolved: nothing required is left ungenerated.
    assert set(required_secret_keys(topology)) <= generated


def test_local_tls_clusters_point_at_the_stack_truststore() -> None:
    topology = tls_topology(primary="SASL_SSL", dr="SASL_PLAINTEXT", rest_tls=False)
    primary, dr = topology.clusters["primary"].security, topology.clusters["dr"].security
    assert primary.truststore_location == "/run/unit/tls/truststore.p12"
    assert primary.truststore_password is not None and primary.truststore_password.key == "tls.truststore.password"
    assert dr.truststore_location is None and dr.truststore_password is None


def test_connectors_reach_tls_clusters_through_placeholders_only() -> None:
    topology = tls_topology()
    flow = topology.flow("primary->dr")
    source = flow_connectors(topology, flow).source.config
    assert source["source.cluster.security.protocol"] == "SASL_SSL"
    assert source["source.cluster.ssl.truststore.location"] == "/run/unit/tls/truststore.p12"
    assert source["source.cluster.ssl.truststore.password"] == f"${{file:{SECRETS}:tls.truststore.password}}"
    assert source["target.cluster.security.protocol"] == "SSL"
    assert source["target.cluster.ssl.truststore.password"].startswith("${file:")
    assert "tls.truststore.password" in group_secret_keys(topology, topology.worker_groups["mm2"])


def test_sasl_ssl_broker_listens_with_the_cluster_keystore() -> None:
    topology = tls_topology()
    cluster = topology.clusters["primary"]
    props = broker_properties(cluster, 0, "/data", secrets_file="/b/secrets.properties", tls=LAYOUT)
    assert props["listener.security.protocol.map"] == "CLIENT:SASL_SSL,CONTROLLER:SASL_PLAINTEXT"
    assert props["listener.name.client.ssl.keystore.location"] == "/run/unit/tls/cluster-primary.p12"
    assert props["listener.name.client.ssl.keystore.type"] == "PKCS12"
    assert (
        props["listener.name.client.ssl.keystore.password"]
        == props["listener.name.client.ssl.key.password"]
        == "${file:/b/secrets.properties:primary.ssl.keystore.password}"
    )
    assert props["listener.name.client.ssl.truststore.location"] == "/run/unit/tls/truststore.p12"
    assert props["listener.name.client.ssl.client.auth"] == "none"
    assert props["authorizer.class.name"].endswith("StandardAuthorizer")
    assert broker_secret_keys(cluster) == (
        "primary.admin.password",
        "primary.ssl.keystore.password",
        "tls.truststore.password",
    )


def test_ssl_broker_encrypts_without_sasl_users() -> None:
    cluster = tls_topology().clusters["dr"]
    props = broker_properties(cluster, 0, "/data", secrets_file="/b/s.properties", tls=LAYOUT)
    assert props["listener.security.protocol.map"] == "CLIENT:SSL,CONTROLLER:PLAINTEXT"
    assert props["config.providers"] == "file"
    assert "authorizer.class.name" not in props
    assert broker_secret_keys(cluster) == ("dr.ssl.keystore.password", "tls.truststore.password")


def test_tls_broker_without_a_layout_is_a_programming_error() -> None:
    import pytest

    with pytest.raises(ValueError, match="TLS layout"):
        broker_properties(tls_topology().clusters["primary"], 0, "/data")


def test_https_worker_group() -> None:
    topology = tls_topology()
    group = topology.worker_groups["mm2"]
    assert worker_rest_urls(group) == ("https://127.0.0.1:18083", "https://127.0.0.1:18084")
    props = worker_properties(topology, group, 1, worker_secrets_file="/w/ws.properties", tls=LAYOUT)
    assert props["listeners"] == "https://127.0.0.1:18084"
    assert props["rest.advertised.listener"] == "https"
    assert props["listeners.https.ssl.keystore.location"] == "/run/unit/tls/rest-mm2.p12"
    assert props["listeners.https.ssl.keystore.password"] == "${file:/w/ws.properties:mm2.rest.keystore.password}"
    # Forwarding to the leader is an HTTPS client call: it trusts the stack CA too.
    assert props["listeners.https.ssl.truststore.location"] == "/run/unit/tls/truststore.p12"
    # The worker's own Kafka clients reach the SSL storage cluster through the truststore.
    assert props["security.protocol"] == "SSL"
    assert props["producer.ssl.truststore.password"] == "${file:/w/ws.properties:tls.truststore.password}"
    assert worker_secret_keys(topology, group) == ("mm2.rest.keystore.password", "tls.truststore.password")


def test_no_secret_value_in_any_generated_config() -> None:
    topology = tls_topology()
    group = topology.worker_groups["mm2"]
    configs = [
        broker_properties(topology.clusters["primary"], 0, "/d", secrets_file="/s", tls=LAYOUT),
        worker_properties(topology, group, 0, worker_secrets_file="/w", tls=LAYOUT),
        *(dict(spec.config) for spec in flow_connectors(topology, topology.flows[0]).all()),
    ]
    for config in configs:
        for key, value in config.items():
            if "password" in key:
                assert value.startswith("${file:"), key


def test_librdkafka_clients_carry_the_pem_ca() -> None:
    security = tls_topology().clusters["primary"].security
    client = librdkafka_client(security, "admin", "pw", "/run/unit/tls/ca.pem")
    assert client["security.protocol"] == "SASL_SSL"
    assert client["ssl.ca.location"] == "/run/unit/tls/ca.pem"
    assert admin_bootstrap_client(security, "pw", "/ca.pem")["ssl.ca.location"] == "/ca.pem"
    plain = parse_topology(dev_config()).clusters["primary"].security
    assert "ssl.ca.location" not in librdkafka_client(plain, "u", "p", "/ca.pem")


def test_renewal_window() -> None:
    now = datetime(2026, 11, 22, tzinfo=timezone.utc)
    assert needs_renewal(now + timedelta(days=29), now)
    assert needs_renewal(now - timedelta(days=1), now)  # expired
    assert not needs_renewal(now + timedelta(days=31), now)


def test_local_tls_cluster_needs_workers_that_can_read_its_truststore() -> None:
    config = tls_config(dr="SASL_PLAINTEXT", rest_tls=False)
    config["workerGroups"]["mm2"] = {"cluster": "dr", "url": "http://connect.example:8083"}
    problems = security_problems(parse_topology(config))
    assert len(problems) == 1
    assert problems[0].startswith("mm2:flows.primary->dr.workerGroup:")
    assert "'primary'" in problems[0] and "Fix:" in problems[0]


def test_mixed_protocols_are_bridged_not_rejected() -> None:
    for primary, dr in (("SASL_SSL", "SASL_PLAINTEXT"), ("SSL", "SASL_SSL"), ("SASL_SSL", "PLAINTEXT")):
        topology = parse_topology(tls_config(primary=primary, dr=dr))
        assert topology.clusters["primary"].security.protocol is SecurityProtocol(primary)
        assert security_problems(topology) == []
