"""components/topology/parse/flows.py: flow keys, worker groups, merged settings and connector states."""

from __future__ import annotations

import pytest

from components.topology import parse_topology
from tests.unit.topology.helpers import FLOW, dev_config, problem_at


def test_settings_merge_flow_beats_cluster_beats_defaults() -> None:
    config = dev_config()
    config["defaults"]["settings"] = {"offset.lag.max": "1", "admin.timeout.ms": "1000"}
    config["clusters"]["primary"]["settings"] = {"offset.lag.max": "2", "consumer.poll.timeout.ms": "700"}
    config["flows"]["primary->dr"]["settings"] = {"offset.lag.max": "3"}
    flow = parse_topology(config).flows[0]
    assert flow.settings["offset.lag.max"] == "3"
    assert flow.settings["consumer.poll.timeout.ms"] == "700"
    assert flow.settings["admin.timeout.ms"] == "1000"
    # the cluster level applies to flows whose *source* is that cluster only
    config["clusters"]["dr"]["settings"] = {"offset.lag.max": "9"}
    assert parse_topology(config).flows[0].settings["offset.lag.max"] == "3"


def test_unknown_cluster_in_flow_suggests_the_close_alias() -> None:
    config = dev_config()
    config["flows"]["primary->dr2"] = config["flows"].pop("primary->dr")
    problem = problem_at(config, "mm2:flows.primary->dr2")
    assert '"dr2"' in problem.message
    assert 'Did you mean "dr"' in problem.fix


def test_flow_from_a_cluster_to_itself() -> None:
    config = dev_config()
    config["flows"]["dr->dr"] = {"workerGroup": "mm2"}
    assert "into itself" in problem_at(config, "mm2:flows.dr->dr").message


def test_duplicate_flow_after_whitespace_normalisation() -> None:
    config = dev_config()
    config["flows"]["primary -> dr"] = {"workerGroup": "mm2"}
    problem = problem_at(config, "mm2:flows.primary -> dr")
    assert "duplicate flow primary->dr" in problem.message


@pytest.mark.parametrize("key", ["primary=>dr", "primary->dr->x", "->dr", "primary"])
def test_malformed_flow_key(key: str) -> None:
    config = dev_config()
    config["flows"][key] = {}
    problem = problem_at(config, f"mm2:flows.{key}")
    assert "source->target" in problem.message


def test_replication_factor_above_target_brokers() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {"replication.factor": "3"}
    problem = problem_at(config, f'{FLOW}.settings["replication.factor"]')
    assert "1 broker(s) of cluster dr" in problem.message
    assert "at most 1" in problem.fix


def test_replication_factor_from_defaults_names_the_defaults_key() -> None:
    config = dev_config()
    config["defaults"]["settings"]["checkpoints.topic.replication.factor"] = "2"
    problem_at(config, 'mm2:defaults.settings["checkpoints.topic.replication.factor"]')


def test_offset_syncs_replication_factor_is_checked_where_the_topic_lives() -> None:
    config = dev_config()
    config["clusters"]["dr"]["brokers"] = 3
    config["flows"]["primary->dr"]["settings"] = {"offset-syncs.topic.replication.factor": "3"}
    # default location is the source (1 broker)
    assert "cluster primary" in problem_at(config, f'{FLOW}.settings["offset-syncs.topic.replication.factor"]').message
    config["flows"]["primary->dr"]["settings"]["offset-syncs.topic.location"] = "target"
    parse_topology(config)  # dr has 3 brokers


def test_unknown_worker_group_in_flow() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["workerGroup"] = "mm3"
    problem = problem_at(config, f"{FLOW}.workerGroup")
    assert 'Did you mean "mm2"' in problem.fix


@pytest.mark.parametrize("key", ["emit.checkpoints.enabled", "emit.offset-syncs.enabled"])
def test_settings_that_stop_the_checkpoint_connector_are_rejected(key: str) -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {key: "false"}
    problem_at(config, f'{FLOW}.settings["{key}"]')


def test_flow_state_and_per_role_overrides() -> None:
    from components.topology import ConnectorState

    config = dev_config()
    assert parse_topology(config).flows[0].state_of("source") is ConnectorState.RUNNING
    config["flows"]["primary->dr"]["state"] = "Paused"
    config["flows"]["primary->dr"]["connectorStates"] = {"heartbeat": "running", "checkpoint": "stopped"}
    flow = parse_topology(config).flows[0]
    states = {role: flow.state_of(role).connect_state for role in ("source", "checkpoint", "heartbeat")}
    assert states == {"source": "PAUSED", "checkpoint": "STOPPED", "heartbeat": "RUNNING"}


def test_unknown_connector_state_and_role_name_the_key_and_the_choices() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["state"] = "halted"
    config["flows"]["primary->dr"]["connectorStates"] = {"sink": "paused"}
    state = problem_at(config, "mm2:flows.primary->dr.state")
    assert "'halted'" in state.message and "running, paused, stopped" in state.message
    role = problem_at(config, "mm2:flows.primary->dr.connectorStates.sink")
    assert "source, checkpoint, heartbeat" in role.fix


def test_reverse_heartbeats_parse_and_fail_at_preview_when_the_connector_cannot_write_to_the_source() -> None:
    from components.topology import parse_topology
    from tests.unit.topology.helpers import dev_config, problem_at

    config = dev_config()
    config["flows"]["primary->dr"]["reverseHeartbeats"] = True
    assert parse_topology(config).flows[0].reverse_heartbeats is True
    key = "mm2:flows.primary->dr.reverseHeartbeats"

    off = dev_config()
    off["flows"]["primary->dr"].update(reverseHeartbeats=True, settings={"emit.heartbeats.enabled": "false"})
    assert "emit.heartbeats.enabled" in problem_at(off, key).message

    external = dev_config()
    external["clusters"]["primary"] = {
        "platform": "external",
        "brokers": 3,
        "bootstrap": "primary:9092",
        "security": {"protocol": "SASL_SSL", "saslMechanism": "SCRAM-SHA-512", "username": "reader",
                     "password": {"secret": "primary.mm2.password"}},
    }  # fmt: skip
    external["flows"]["primary->dr"]["reverseHeartbeats"] = True
    problem = problem_at(external, key)
    assert "'reader'" in problem.message and "WRITE and CREATE on heartbeats" in problem.message
    assert "Remove reverseHeartbeats" in problem.fix

    no_override = dev_config()
    no_override["workerGroups"]["mm2"]["workerConfig"] = {"connector.client.config.override.policy": "None"}
    no_override["flows"]["primary->dr"]["reverseHeartbeats"] = True
    assert "producer.override" in problem_at(no_override, key).message

    not_bool = dev_config()
    not_bool["flows"]["primary->dr"]["reverseHeartbeats"] = "sometimes"
    problem_at(not_bool, key)


@pytest.mark.parametrize(
    ("where", "key", "value", "expected"),
    [
        ("flow", "producer.override.enable.idempotence", "false", "needs idempotence"),
        ("target", "producer.enable.idempotence", "false", "needs enable.idempotence=true"),
        ("target", "producer.acks", "1", "needs acks=all"),
    ],
)
def test_exactly_once_refuses_settings_that_rule_out_transactions(
    where: str, key: str, value: str, expected: str
) -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["exactlyOnce"] = True
    if where == "flow":
        config["flows"]["primary->dr"]["settings"] = {key: value}
        at = f'{FLOW}.settings["{key}"]'
    else:
        config["clusters"]["dr"]["client"] = {key: value}
        at = f'mm2:clusters.dr.client["{key}"]'
    problem = problem_at(config, at)
    assert expected in problem.message
    assert "exactlyOnce: false" in problem.fix
    del config["flows"]["primary->dr"]["exactlyOnce"]
    parse_topology(config)  # fine without exactly-once
