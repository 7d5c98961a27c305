"""shared_target_rules: shared-target-settings-consistent, with input that passes and input that fails,
asserting the exact findings."""

from __future__ import annotations

from shared_target_rules import shared_target_settings_consistent

from .builders import (
    IDENTITY_POLICY,
    UNKNOWN,
    cluster,
    flow,
    messages,
    replication_flow,
    run_stack,
)

# --- shared-target-settings-consistent ------------------------------------------------------


def test_flows_into_one_target_with_different_separators() -> None:
    target = cluster("c")
    resources = [
        target,
        *replication_flow("a", "c"),
        *replication_flow("b", "c", **{"replication.policy.separator": "_"}),
    ]
    [(message, where)] = run_stack(shared_target_settings_consistent, resources)
    assert message.startswith(
        "Flows into cluster 'c' disagree on replication.policy.separator: "
        "a->c: '.' (mm2-a-to-c-source); b->c: '_' (mm2-b-to-c-source)."
    )
    assert "Fix: set replication.policy.separator once in mm2:defaults.settings" in message
    assert where == target.urn


def test_policy_class_must_match_but_heartbeat_emission_is_per_flow() -> None:
    resources = [
        *replication_flow("a", "c", IDENTITY_POLICY, **{"emit.heartbeats.interval.seconds": "5"}),
        *replication_flow("b", "c", **{"heartbeats.topic.replication.factor": None}),
    ]
    found = messages(run_stack(shared_target_settings_consistent, resources))
    assert [m.split(":")[0] for m in found] == [
        "Flows into cluster 'c' disagree on replication.policy.class",
    ]  # heartbeats RF: unset means MM2's 3, the same as a->c's explicit 3
    # Each heartbeat connector emits its own (source, target) records at its own rate; a stack that
    # wants equal rates anyway can still list the key.
    [message] = messages(
        run_stack(shared_target_settings_consistent, resources, {"sharedKeys": ["emit.heartbeats.interval.seconds"]})
    )
    assert message.startswith("Flows into cluster 'c' disagree on emit.heartbeats.interval.seconds")


def test_consistent_flows_and_distinct_targets_pass() -> None:
    resources = [
        *replication_flow("a", "c"),
        *replication_flow("b", "c", **{"replication.policy.separator": None}),
        *replication_flow("c", "a", **{"replication.policy.separator": "_"}),
        flow("d", "c", UNKNOWN),
    ]
    assert run_stack(shared_target_settings_consistent, resources) == []


def test_shared_keys_are_configurable() -> None:
    resources = [
        *replication_flow("a", "c", **{"sync.topic.acls.enabled": "false"}),
        *replication_flow("b", "c"),
    ]
    assert run_stack(shared_target_settings_consistent, resources) == []
    [message] = messages(
        run_stack(shared_target_settings_consistent, resources, {"sharedKeys": ["sync.topic.acls.enabled"]})
    )
    assert "a->c: 'false' (mm2-a-to-c-source); b->c: '(unset)' (mm2-b-to-c-source)" in message
