"""flow_connector_rules: flow-has-all-connectors and flow-connectors-agree, each with input that passes and
input that fails, asserting the exact findings."""

from __future__ import annotations

from flow_connector_rules import flow_connectors_agree, flow_has_all_connectors

from .builders import (
    DEFAULT_POLICY,
    IDENTITY_POLICY,
    UNKNOWN_MAP,
    connector,
    flow,
    messages,
    replication_flow,
    run_stack,
)

# --- flow-has-all-connectors ----------------------------------------------------------------


def test_flow_without_heartbeat_and_checkpoint_connectors() -> None:
    resources = replication_flow("a", "b", kinds=("source",))
    [(message, where)] = run_stack(flow_has_all_connectors, resources)
    assert message.startswith(f"Flow a->b ({resources[0].urn}): no MirrorCheckpointConnector")
    assert "no MirrorHeartbeatConnector" in message
    assert "no MirrorSourceConnector" not in message
    assert "expected mm2-a-to-b-checkpoint, mm2-a-to-b-heartbeat" in message
    assert where == resources[0].urn


def test_connectors_without_a_component_still_need_all_three() -> None:
    resources = [connector("a", "b", "checkpoint"), connector("a", "b", "heartbeat")]
    [(message, where)] = run_stack(flow_has_all_connectors, resources)
    assert "no MirrorSourceConnector (no records are replicated)" in message
    assert where == resources[0].urn


def test_complete_flows_and_preview_unknown_configs_pass() -> None:
    resources = [
        *replication_flow("a", "b"),
        flow("b", "a"),
        *(connector("b", "a", kind, config=UNKNOWN_MAP) for kind in ("source", "checkpoint", "heartbeat")),
        flow("c", "a", enabled=False),
    ]
    assert run_stack(flow_has_all_connectors, resources) == []


# --- flow-connectors-agree ------------------------------------------------------------------


def test_source_and_checkpoint_disagree_on_separator() -> None:
    component = flow("a", "b")
    resources = [
        component,
        connector("a", "b", "source", parent=component),
        connector("a", "b", "checkpoint", parent=component, **{"replication.policy.separator": "_"}),
        connector("a", "b", "heartbeat", parent=component),
    ]
    [(message, where)] = run_stack(flow_connectors_agree, resources)
    assert message.startswith(
        "Flow a->b: replication.policy.separator differs between mm2-a-to-b-source ('.') and "
        "mm2-a-to-b-checkpoint ('_')."
    )
    assert "Fix: set replication.policy.separator once at the flow level" in message
    assert where == resources[2].urn


def test_default_versus_explicit_policy_and_topic_lists() -> None:
    resources = [
        connector("a", "b", "source", **{"replication.policy.class": None, "topics": "orders,payments"}),
        connector("a", "b", "checkpoint", **{"topics": " orders ,  payments "}),
    ]
    assert run_stack(flow_connectors_agree, resources) == []
    resources.append(connector("a", "b", "checkpoint", **{"offset-syncs.topic.location": "target"}))
    [message] = messages(run_stack(flow_connectors_agree, resources))
    assert "offset-syncs.topic.location differs between mm2-a-to-b-source ('source')" in message


def test_identity_on_source_only_is_reported_with_default_marker() -> None:
    resources = [
        connector("a", "b", "source", IDENTITY_POLICY),
        connector("a", "b", "checkpoint", **{"replication.policy.class": None}),
    ]
    [message] = messages(run_stack(flow_connectors_agree, resources))
    assert f"('{IDENTITY_POLICY}') and mm2-a-to-b-checkpoint ('{DEFAULT_POLICY}' by default)" in message
