"""Generated throughput tuning: client settings and tasks.max, their precedence and overrides."""

from __future__ import annotations

from dataclasses import replace

import pytest

from components.topology import Topology, flow_connectors, parse_topology
from components.topology.connectors import (
    MAX_TASKS_PER_WORKER,
    TUNED_SOURCE_CLIENT,
    flow_tasks_max,
    replicated_partitions,
)
from components.topology.settings import KNOWN_SETTINGS, ROLE_SETTINGS, SOURCE_CLIENT_TUNING
from tests.unit.topology.helpers import dev_config, problem_at

FLOW = "mm2:flows.primary->dr"


def derived(topology: Topology) -> Topology:
    """The topology with tasks.max left to the generator, as when a flow gives no tasksMax."""
    return replace(topology, flows=tuple(replace(f, tasks_max=None) for f in topology.flows))


def test_every_tuned_key_is_a_known_source_setting() -> None:
    # Otherwise a user could not override a default the generator emits.
    assert set(TUNED_SOURCE_CLIENT) == SOURCE_CLIENT_TUNING
    assert SOURCE_CLIENT_TUNING <= KNOWN_SETTINGS
    assert ROLE_SETTINGS["source"] >= SOURCE_CLIENT_TUNING
    assert not SOURCE_CLIENT_TUNING & (ROLE_SETTINGS["checkpoint"] | ROLE_SETTINGS["heartbeat"])


def test_source_connector_gets_the_tuning_and_the_others_do_not() -> None:
    topology = parse_topology(dev_config())
    connectors = flow_connectors(topology, topology.flows[0])
    source = dict(connectors.source.config)
    assert {k: source[k] for k in TUNED_SOURCE_CLIENT} == {
        "producer.override.enable.idempotence": "true",
        "producer.override.max.in.flight.requests.per.connection": "5",
        "producer.override.linger.ms": "10",
        "producer.override.batch.size": "262144",
        "producer.override.compression.type": "lz4",
        "source.consumer.fetch.min.bytes": "65536",
        "source.consumer.fetch.max.wait.ms": "100",
        "source.consumer.max.poll.records": "2000",
        "source.consumer.max.partition.fetch.bytes": "2097152",
    }
    for spec in (connectors.checkpoint, connectors.heartbeat):
        assert not set(spec.config) & set(TUNED_SOURCE_CLIENT)


def test_cluster_client_overrides_beat_the_tuning() -> None:
    config = dev_config()
    config["clusters"]["primary"]["client"] = {"consumer.fetch.min.bytes": "1"}
    config["clusters"]["dr"]["client"] = {"producer.linger.ms": "0", "producer.compression.type": "zstd"}
    topology = parse_topology(config)
    source = flow_connectors(topology, topology.flows[0]).source.config
    assert source["source.consumer.fetch.min.bytes"] == "1"
    assert source["producer.override.linger.ms"] == "0"
    assert source["producer.override.compression.type"] == "zstd"
    assert source["producer.override.batch.size"] == "262144"


def test_flow_settings_override_the_tuning_for_that_flow_only() -> None:
    config = dev_config()
    config["clusters"]["dr"]["client"] = {"producer.compression.type": "zstd"}
    config["flows"]["primary->dr"]["settings"] = {
        "producer.override.compression.type": "none",
        "source.consumer.max.poll.records": "500",
    }
    config["clusters"]["other"] = {
        "platform": "local",
        "brokers": 1,
        "port": 19292,
        "security": {"protocol": "PLAINTEXT"},
    }
    config["flows"]["other->dr"] = {"workerGroup": "mm2", "topics": ["t"]}
    topology = parse_topology(config)
    tuned = flow_connectors(topology, topology.flow("primary->dr")).source.config
    assert tuned["producer.override.compression.type"] == "none"
    assert tuned["source.consumer.max.poll.records"] == "500"
    assert tuned["producer.override.linger.ms"] == "10"
    untouched = flow_connectors(topology, topology.flow("other->dr")).source.config
    assert untouched["producer.override.compression.type"] == "zstd"
    assert untouched["source.consumer.max.poll.records"] == "2000"


def test_defaults_level_can_switch_tuning_off_everywhere() -> None:
    config = dev_config()
    config["defaults"]["settings"]["producer.override.linger.ms"] = "0"
    topology = parse_topology(config)
    assert flow_connectors(topology, topology.flows[0]).source.config["producer.override.linger.ms"] == "0"


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("producer.override.compression.type", "brotli", "must be one of none, gzip, snappy, lz4, zstd"),
        ("producer.override.batch.size", "256k", "must be a whole number"),
        ("source.consumer.max.poll.records", "lots", "must be a whole number"),
        ("producer.override.enable.idempotence", "yes", "must be true or false"),
    ],
)
def test_bad_tuning_values_fail_at_parse(key: str, value: str, expected: str) -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {key: value}
    problem = problem_at(config, f'{FLOW}.settings["{key}"]')
    assert expected in problem.message


def test_other_client_keys_still_belong_to_the_cluster_client_map() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {"producer.override.buffer.memory": "1"}
    problem = problem_at(config, f'{FLOW}.settings["producer.override.buffer.memory"]')
    assert "owned by a typed field" in problem.message
    assert "clusters.<target>.client" in problem.fix


def test_tasks_max_defaults_to_the_replicated_partitions() -> None:
    # dev: orders 3 + payments 3 partitions, two workers.
    topology = derived(parse_topology(dev_config()))
    flow = topology.flows[0]
    assert replicated_partitions(topology, flow) == 6
    connectors = flow_connectors(topology, flow)
    assert connectors.source.config["tasks.max"] == "6"
    assert connectors.checkpoint.config["tasks.max"] == "6"
    assert connectors.heartbeat.config["tasks.max"] == "1"


def test_tasks_max_counts_only_topics_the_filter_replicates() -> None:
    config = dev_config()
    config["clusters"]["primary"]["topics"]["audit.internal"] = {"partitions": 5}
    config["clusters"]["primary"]["topics"]["orders-eu"] = {"partitions": 2}
    config["flows"]["primary->dr"]["topics"] = ["orders.*", "audit.*"]
    topology = derived(parse_topology(config))
    # orders (3) and orders-eu (2); payments is not included, audit.internal is excluded by default.
    assert flow_tasks_max(topology, topology.flows[0]) == 5


def test_tasks_max_is_capped_per_worker() -> None:
    config = dev_config()
    config["clusters"]["primary"]["topics"]["orders"] = {"partitions": 64}
    topology = derived(parse_topology(config))
    assert flow_tasks_max(topology, topology.flows[0]) == MAX_TASKS_PER_WORKER * 2


def test_tasks_max_is_one_per_worker_when_no_topic_is_declared() -> None:
    config = dev_config()
    del config["clusters"]["primary"]["topics"]
    topology = derived(parse_topology(config))
    assert flow_tasks_max(topology, topology.flows[0]) == 2


def test_explicit_tasks_max_wins_over_the_derived_value() -> None:
    topology = parse_topology(dev_config())  # tasksMax: 3
    assert flow_connectors(topology, topology.flows[0]).source.config["tasks.max"] == "3"
