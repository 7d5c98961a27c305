"""components/platform/container_broker.py: the properties every container broker shares."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from components.platform.container_broker import (
    BrokerNetwork,
    container_broker_properties,
    container_broker_secret_keys,
)
from components.topology import parse_topology
from components.topology.config_provider import FILE_PROVIDER_PROPERTIES
from components.topology.model import Cluster, SecretRef, frozen_map
from tests.unit.topology.helpers import dev_config

from .helpers import topology

NETWORK = BrokerNetwork(voter_host="b-{ordinal}", advertised_host="b-{ordinal}")


def test_brokers_resolve_file_placeholders() -> None:
    props = container_broker_properties(parse_topology(dev_config()).clusters["primary"], NETWORK)
    assert props.items() >= FILE_PROVIDER_PROPERTIES.items()


def test_owned_keys_in_a_hand_built_cluster_are_refused_as_on_the_local_platform() -> None:
    cluster = parse_topology(dev_config()).clusters["primary"]
    with pytest.raises(ValueError, match=r'cluster primary brokerConfig: "node\.id" is owned by a typed field'):
        container_broker_properties(replace(cluster, broker_config=frozen_map({"node.id": "7"})), NETWORK)


KUBE = BrokerNetwork(voter_host="b-{ordinal}.b", advertised_host="b-{ordinal}.b", own_listeners=True)


def _cluster(protocol: str, mechanism: str = "SCRAM-SHA-512", platform: str = "kubernetes") -> Cluster:
    security: dict[str, Any] = {"protocol": protocol}
    if "SASL" in protocol:
        security.update(saslMechanism=mechanism, username="mm2", password={"secret": "a.mm2.password"})
    if "SSL" in protocol:
        security.update(truststoreLocation="/t/a.p12", truststorePassword={"secret": "a.ts"})
    config = {"clusters": {"a": {"platform": platform, "brokers": 3, "security": security, "port": 29092}}}
    return topology(config).clusters["a"]


def test_tls_brokers_authenticate_each_other_by_certificate_as_one_super_user() -> None:
    props = container_broker_properties(_cluster("SASL_SSL"), KUBE)
    assert props["listener.security.protocol.map"] == "CLIENT:SASL_SSL,CONTROLLER:SSL,REPLICATION:SSL"
    assert props["listener.name.replication.ssl.client.auth"] == "required"
    assert props["listener.name.controller.ssl.client.auth"] == "required"
    assert props["ssl.principal.mapping.rules"] == "RULE:^.*$/kafka-broker/"
    assert props["super.users"] == "User:admin;User:kafka-broker"
    assert props["authorizer.class.name"].endswith("StandardAuthorizer")
    assert props["allow.everyone.if.no.acl.found"] == "false"
    # Clients: SCRAM for everyone, PLAIN for admin alone (the stack's way in before any SCRAM user).
    assert props["listener.name.client.sasl.enabled.mechanisms"] == "SCRAM-SHA-512,PLAIN"
    assert 'user_admin="${file:' in props["listener.name.client.plain.sasl.jaas.config"]
    assert "user_mm2" not in props["listener.name.client.plain.sasl.jaas.config"]


def test_sasl_plaintext_brokers_are_admin_to_each_other_over_plain() -> None:
    props = container_broker_properties(_cluster("SASL_PLAINTEXT"), KUBE)
    assert props["listener.security.protocol.map"] == (
        "CLIENT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT,REPLICATION:SASL_PLAINTEXT"
    )
    for listener in ("replication", "controller"):
        assert props[f"listener.name.{listener}.sasl.enabled.mechanisms"] == "PLAIN"
    assert props["sasl.mechanism.controller.protocol"] == "PLAIN"
    assert props["super.users"] == "User:admin"
    assert "ssl.principal.mapping.rules" not in props


def test_a_plain_cluster_holds_every_stack_user_in_its_table_and_file() -> None:
    cluster = _cluster("SASL_PLAINTEXT", mechanism="PLAIN")
    users = {"mm2": SecretRef("a.mm2.password"), "connect-g": SecretRef("g.worker.password")}
    props = container_broker_properties(cluster, KUBE, users=users)
    table = props["listener.name.client.plain.sasl.jaas.config"]
    assert "user_mm2=" in table and "user_connect-g=" in table
    assert container_broker_secret_keys(cluster, users) == ("a.admin.password", "a.mm2.password", "g.worker.password")
    assert container_broker_secret_keys(_cluster("SASL_PLAINTEXT")) == ("a.admin.password",)


def test_without_sasl_there_is_no_authorizer_and_plaintext_stays_plaintext() -> None:
    props = container_broker_properties(_cluster("PLAINTEXT"), KUBE)
    assert props["listener.security.protocol.map"] == "CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT,REPLICATION:PLAINTEXT"
    assert "authorizer.class.name" not in props
    ssl = container_broker_properties(_cluster("SSL"), KUBE)
    assert ssl["listener.name.replication.ssl.client.auth"] == "required" and "authorizer.class.name" not in ssl


def test_docker_brokers_keep_one_user_and_inter_broker_traffic_on_the_client_listener() -> None:
    cluster = _cluster("SASL_PLAINTEXT", platform="docker")
    props = container_broker_properties(cluster, NETWORK)
    assert props["inter.broker.listener.name"] == "CLIENT"
    assert props["listener.security.protocol.map"] == "CLIENT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"
    assert "authorizer.class.name" not in props and "REPLICATION" not in props["listeners"]
    assert container_broker_secret_keys(cluster) == ("a.mm2.password",)
