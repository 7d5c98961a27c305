"""durability_rules: replication-factor-within-broker-count, disaster-recovery-syncs-group-offsets and
source-connector-min-tasks, each with input that passes and input that fails, asserting the exact findings."""

from __future__ import annotations

import pytest
from durability_rules import (
    disaster_recovery_syncs_group_offsets,
    replication_factor_within_broker_count,
    source_connector_min_tasks,
)

from .builders import (
    UNKNOWN,
    UNKNOWN_MAP,
    cluster,
    connector,
    flow,
    messages,
    replication_flow,
    run_resource,
    run_stack,
)

# --- replication-factor-within-broker-count -------------------------------------------------


def test_replication_factor_above_target_broker_count() -> None:
    resources = [cluster("a", brokers=3), cluster("b", brokers=1), *replication_flow("a", "b")]
    found = run_stack(replication_factor_within_broker_count, resources)
    # Remote topics, checkpoints and heartbeats live on b (1 broker); offset syncs on a (3 brokers).
    assert [(m.split(":")[0], where) for m, where in found] == [
        ("Connector mm2-a-to-b-source (flow a->b)", resources[3].urn),
        ("Connector mm2-a-to-b-checkpoint (flow a->b)", resources[4].urn),
        ("Connector mm2-a-to-b-heartbeat (flow a->b)", resources[5].urn),
    ]
    assert (
        "replication.factor is 3, but it creates the remote topics on cluster 'b', which has 1 broker(s)"
        in (found[0][0])
    )
    assert "Fix: set replication.factor to at most 1" in found[0][0]
    assert "checkpoints.topic.replication.factor is 3" in found[1][0]
    assert "heartbeats.topic.replication.factor is 3" in found[2][0]


def test_replication_factors_that_fit() -> None:
    resources = [cluster("a", brokers=3), cluster("b", brokers=3.0), *replication_flow("a", "b")]
    assert run_stack(replication_factor_within_broker_count, resources) == []


def test_offset_syncs_topic_follows_its_location() -> None:
    resources = [
        cluster("a", brokers=1),
        cluster("b", brokers=3),
        *replication_flow("a", "b", **{"offset-syncs.topic.location": "source"}),
    ]
    [message] = messages(run_stack(replication_factor_within_broker_count, resources))
    assert "offset-syncs.topic.replication.factor is 3, but it creates the offset-syncs topic on cluster 'a'" in message
    moved = [
        cluster("a", brokers=1),
        cluster("b", brokers=3),
        *replication_flow("a", "b", **{"offset-syncs.topic.location": "target"}),
    ]
    assert run_stack(replication_factor_within_broker_count, moved) == []


def test_unset_replication_factor_uses_mm2_default_unless_configured_off() -> None:
    resources = [
        cluster("a", brokers=1),
        cluster("b", brokers=1),
        connector("a", "b", "heartbeat", **{"heartbeats.topic.replication.factor": None}),
    ]
    [message] = messages(run_stack(replication_factor_within_broker_count, resources))
    assert "heartbeats.topic.replication.factor is not set, so MM2's default 3" in message
    assert run_stack(replication_factor_within_broker_count, resources, {"applyMm2Defaults": False}) == []


def test_replication_factor_minus_one_and_unknowns_are_skipped() -> None:
    resources = [
        cluster("a", brokers=1),
        cluster("b", brokers=UNKNOWN),
        cluster("c", brokers=1),
        connector("a", "c", "source", **{"replication.factor": "-1", "offset-syncs.topic.replication.factor": "1"}),
        connector("a", "c", "heartbeat", **{"heartbeats.topic.replication.factor": UNKNOWN}),
        connector("a", "b", "source"),
        connector("a", "c", "checkpoint", config=UNKNOWN_MAP),
    ]
    found = messages(run_stack(replication_factor_within_broker_count, resources))
    # Only a->b's offset-syncs topic on a (1 broker) can be judged, and it is too big.
    assert len(found) == 1 and "mm2-a-to-b-source" in found[0] and "offset-syncs" in found[0]


# --- disaster-recovery-syncs-group-offsets --------------------------------------------------


def test_dr_flow_without_offset_sync() -> None:
    resources = replication_flow("a", "b", disaster_recovery=True, **{"sync.group.offsets.enabled": None})
    [(message, where)] = run_stack(disaster_recovery_syncs_group_offsets, resources)
    assert message.startswith(
        "Flow a->b is marked disasterRecovery but its checkpoint connector mm2-a-to-b-checkpoint: "
        "sync.group.offsets.enabled is not true."
    )
    assert 'Fix: set sync.group.offsets.enabled: "true"' in message
    assert where == resources[2].urn


def test_dr_flow_without_checkpoints() -> None:
    resources = replication_flow("a", "b", disaster_recovery=True, **{"emit.checkpoints.enabled": "false"})
    [message] = messages(run_stack(disaster_recovery_syncs_group_offsets, resources))
    assert "emit.checkpoints.enabled is false" in message


def test_dr_flow_with_offset_sync_and_non_dr_flow_pass() -> None:
    resources = [
        *replication_flow("a", "b", disaster_recovery=True),
        *replication_flow("b", "a", **{"sync.group.offsets.enabled": "false"}),
    ]
    assert run_stack(disaster_recovery_syncs_group_offsets, resources) == []


def test_dr_flow_falls_back_to_the_component_when_connector_config_is_unknown() -> None:
    component = flow("a", "b", disaster_recovery=True, sync_group_offsets=False)
    resources = [component, connector("a", "b", "checkpoint", config=UNKNOWN_MAP)]
    [(message, where)] = run_stack(disaster_recovery_syncs_group_offsets, resources)
    assert "syncGroupOffsets is false" in message and where == component.urn
    unknown = [flow("a", "b", disaster_recovery=True, sync_group_offsets=UNKNOWN), resources[1]]
    assert run_stack(disaster_recovery_syncs_group_offsets, unknown) == []


# --- source-connector-min-tasks -------------------------------------------------------------


def test_single_task_source_connector_outside_dev(prod_stack: str) -> None:
    [message] = run_resource(source_connector_min_tasks, connector("a", "b", "source", **{"tasks.max": "1"}))
    assert message.startswith("Source connector mm2-a-to-b-source (flow a->b): tasks.max is 1 on stack 'prod'")
    assert "Fix: set tasksMax (tasks.max) to at least 2 for the flow." in message
    [unset] = run_resource(source_connector_min_tasks, connector("a", "b", "source", **{"tasks.max": None}))
    assert "tasks.max is not set (Connect's default 1)" in unset
    [higher] = run_resource(source_connector_min_tasks, connector("a", "b", "source"), {"minTasks": 8})
    assert "at least 8" in higher


def test_enough_tasks_dev_and_other_connectors_pass(prod_stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_resource(source_connector_min_tasks, connector("a", "b", "source", **{"tasks.max": "2"})) == []
    assert run_resource(source_connector_min_tasks, connector("a", "b", "checkpoint", **{"tasks.max": "1"})) == []
    assert run_resource(source_connector_min_tasks, connector("a", "b", "source", **{"tasks.max": UNKNOWN})) == []
    monkeypatch.setenv("PULUMI_STACK", "dev")
    assert run_resource(source_connector_min_tasks, connector("a", "b", "source", **{"tasks.max": "1"})) == []
