"""components/topology/runtime_config.py: broker and Connect worker properties."""

from __future__ import annotations

from dataclasses import replace

import pytest

from components.topology import (
    SecretRef,
    broker_properties,
    parse_topology,
    worker_metrics_urls,
    worker_properties,
    worker_rest_urls,
)
from components.topology.connectors import wants_exactly_once
from components.topology.model import frozen_map
from components.topology.runtime_config import next_exactly_once_stage, with_exactly_once_stage
from tests.unit.topology.helpers import dev_config, example


def test_broker_properties_three_node_local_cluster() -> None:
    config = dev_config()
    config["clusters"]["primary"]["brokers"] = 3
    config["clusters"]["primary"]["brokerConfig"] = {"num.partitions": "6"}
    cluster = parse_topology(config).clusters["primary"]
    assert broker_properties(cluster, 1, "/data/primary-1") == {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": "0@127.0.0.1:19093,1@127.0.0.1:19095,2@127.0.0.1:19097",
        "listeners": "CLIENT://127.0.0.1:19094,CONTROLLER://127.0.0.1:19095",
        "advertised.listeners": "CLIENT://127.0.0.1:19094",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "CLIENT",
        "listener.security.protocol.map": "CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": "/data/primary-1",
        "offsets.topic.replication.factor": "3",
        "transaction.state.log.replication.factor": "3",
        "transaction.state.log.min.isr": "2",
        "share.coordinator.state.topic.replication.factor": "3",
        "share.coordinator.state.topic.min.isr": "2",
        "default.replication.factor": "3",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "false",
        "num.partitions": "6",
    }


def test_broker_properties_sasl_plain_uses_placeholders() -> None:
    config = dev_config()
    config["clusters"]["primary"]["security"] = {
        "protocol": "SASL_PLAINTEXT",
        "saslMechanism": "PLAIN",
        "username": "mm2",
        "password": {"secret": "primary.mm2.password"},
    }
    users = {"mm2": SecretRef("primary.mm2.password")}
    props = broker_properties(
        parse_topology(config).clusters["primary"], 0, "/d", secrets_file="/s.properties", users=users
    )
    assert props["listener.security.protocol.map"] == "CLIENT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
    assert props["listener.name.client.sasl.enabled.mechanisms"] == "PLAIN"
    # The brokers' own identity is admin; a PLAIN cluster's user table lists every user.
    assert props["listener.name.client.plain.sasl.jaas.config"] == (
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="${file:/s.properties:primary.admin.password}" '
        'user_admin="${file:/s.properties:primary.admin.password}" '
        'user_mm2="${file:/s.properties:primary.mm2.password}";'
    )
    assert props["config.providers"] == "file"
    assert props["super.users"] == "User:admin"
    assert props["allow.everyone.if.no.acl.found"] == "false"


def test_broker_properties_refuse_owned_keys_in_hand_built_clusters() -> None:
    cluster = parse_topology(dev_config()).clusters["primary"]
    with pytest.raises(ValueError, match=r"node\.id"):
        broker_properties(replace(cluster, broker_config=frozen_map({"node.id": "7"})), 0, "/d")
    with pytest.raises(ValueError, match="outside"):
        broker_properties(cluster, 1, "/d")


def test_worker_properties_dev_group() -> None:
    topology = parse_topology(dev_config())
    assert worker_properties(topology, topology.worker_groups["mm2"], 1) == {
        "bootstrap.servers": "127.0.0.1:19192",
        "security.protocol": "PLAINTEXT",
        "producer.security.protocol": "PLAINTEXT",
        "consumer.security.protocol": "PLAINTEXT",
        "admin.security.protocol": "PLAINTEXT",
        "group.id": "mm2-mm2",
        "config.storage.topic": "mm2-mm2-configs",
        "offset.storage.topic": "mm2-mm2-offsets",
        "status.storage.topic": "mm2-mm2-status",
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "header.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "listeners": "http://127.0.0.1:18084",
        "rest.advertised.host.name": "127.0.0.1",
        "rest.advertised.port": "18084",
        "plugin.discovery": "service_load",
        "scheduled.rebalance.max.delay.ms": "1000",
        "offset.flush.interval.ms": "5000",
        "config.providers": "file",
        "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
        # The source connector's tuned producer settings are producer.override.* keys.
        "connector.client.config.override.policy": "All",
    }
    assert worker_rest_urls(topology.worker_groups["mm2"]) == ("http://127.0.0.1:18083", "http://127.0.0.1:18084")


def test_worker_metrics_urls_where_the_local_workers_run_the_agent() -> None:
    config = dev_config()
    assert worker_metrics_urls(parse_topology(config).worker_groups["mm2"]) == ()  # no metricsPort
    config["workerGroups"]["mm2"]["metricsPort"] = 19500
    assert worker_metrics_urls(parse_topology(config).worker_groups["mm2"]) == (
        "http://127.0.0.1:19500/metrics",
        "http://127.0.0.1:19501/metrics",
    )


def test_override_policy_only_on_groups_whose_connectors_override_clients() -> None:
    fan_out = parse_topology(example("fan-out.yaml"))
    assert (
        worker_properties(fan_out, fan_out.worker_groups["hub"], 0)["connector.client.config.override.policy"] == "All"
    )
    # Workers on the target of PLAINTEXT clusters: only the generated producer tuning overrides.
    dev = parse_topology(dev_config())
    assert worker_properties(dev, dev.worker_groups["mm2"], 0)["connector.client.config.override.policy"] == "All"
    # A group with no enabled flow runs no connector: nothing to allow.
    idle = dev_config()
    idle["flows"]["primary->dr"]["enabled"] = False
    idle_topology = parse_topology(idle)
    props = worker_properties(idle_topology, idle_topology.worker_groups["mm2"], 0)
    assert "connector.client.config.override.policy" not in props
    # With SASL the framework producer writes as the target's MM2 user, through an override.
    aggregation = parse_topology(example("aggregation.yaml"))
    assert (
        worker_properties(aggregation, aggregation.worker_groups["central"], 0)[
            "connector.client.config.override.policy"
        ]
        == "All"
    )


def test_worker_properties_exactly_once_rest_auth_and_overrides() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["exactlyOnce"] = True
    config["workerGroups"]["mm2"]["restAuth"] = True
    config["workerGroups"]["mm2"]["workerConfig"] = {"plugin.path": "/opt/plugins"}
    topology = parse_topology(config)
    group = topology.worker_groups["mm2"]
    props = worker_properties(topology, group, 0)
    assert props["exactly.once.source.support"] == "enabled"
    assert props["rest.extension.classes"].endswith("BasicAuthSecurityRestExtension")
    assert props["plugin.path"] == "/opt/plugins"
    assert group.rest_password is not None and group.rest_password.key == "mm2.rest.password"


@pytest.mark.parametrize(
    ("deployed", "stage"),
    [
        ([], "enabled"),  # a new group starts at enabled
        (["disabled", "disabled"], "preparing"),
        (["preparing", "disabled"], "preparing"),  # a half-done first step is finished first
        (["preparing", "preparing"], "enabled"),
        (["enabled", "preparing"], "enabled"),
        (["enabled"], "enabled"),
    ],
)
def test_exactly_once_rollout_steps(deployed: list[str], stage: str) -> None:
    assert next_exactly_once_stage(deployed) == stage


@pytest.mark.parametrize(
    ("deployed", "stage"),
    [
        ([], None),
        (["disabled", "disabled"], None),
        (["enabled", "disabled"], "disabling"),  # a half-done roll to disabled keeps the grants
        (["preparing"], "disabling"),
    ],
)
def test_exactly_once_turned_off_steps(deployed: list[str], stage: str | None) -> None:
    assert next_exactly_once_stage(deployed, wanted=False) == stage


def test_a_disabling_group_starts_its_workers_without_exactly_once() -> None:
    topology = with_exactly_once_stage(parse_topology(dev_config()), "mm2", "disabling")
    assert "exactly.once.source.support" not in worker_properties(topology, topology.worker_groups["mm2"], 0)


def test_worker_properties_follow_the_rollout_stage() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["exactlyOnce"] = True
    topology = with_exactly_once_stage(parse_topology(config), "mm2", "preparing")
    group = topology.worker_groups["mm2"]
    assert wants_exactly_once(topology, group)
    assert worker_properties(topology, group, 1)["exactly.once.source.support"] == "preparing"
    plain = parse_topology(dev_config())
    assert "exactly.once.source.support" not in worker_properties(plain, plain.worker_groups["mm2"], 0)
