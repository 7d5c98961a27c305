"""The stack-outputs contract: JSON round trip, inference for older stacks, every problem listed, secrets hidden."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from components.outputs.contract import (
    ClusterExport,
    ConnectGroupExport,
    FlowExport,
    LinkExport,
    OutputsError,
    PairExport,
    PartitionCut,
    StackExports,
    pattern_document,
    patterns_from_document,
)

FLOW = FlowExport(
    name="primary->dr",
    source="primary",
    target="dr",
    topics={"orders": "primary.orders"},
    checkpoints_topic="primary.checkpoints.internal",
    offset_syncs_topic="mm2-offset-syncs.dr.internal",
    heartbeats_topic="heartbeats",
    worker_group="mm2",
    connectors={"source": "mm2-primary-to-dr-source"},
    states={"mm2-primary-to-dr-source": "RUNNING"},
    desired_states={"source": "RUNNING"},
    groups=("app",),
    separator=".",
    offset_syncs_cluster="primary",
    rpo_seconds=300,
    outage_budget_seconds=86400,
    loss_acknowledged_at_ms=1_795_000_000_000,  # 2026-11-18T11:06:40Z
    link=LinkExport("dc1<->dc2", 50.0, 200e6),
)
EXPORTS = StackExports(
    clusters={
        "primary": ClusterExport("primary", "127.0.0.1:19092", client={"sasl.password": "s3cret"}, users={"u": "pw"}),
        "dr": ClusterExport("dr", "127.0.0.1:19192"),
    },
    connect={
        "mm2": ConnectGroupExport(
            "mm2",
            "http://127.0.0.1:18083",
            "dr",
            {"username": "u", "password": "p"},
            offset_topic="mm2-offsets",
            metrics_urls=("http://127.0.0.1:19500/metrics",),
        ),
        "to-eu": ConnectGroupExport(
            "to-eu",
            "http://127.0.0.1:30083",
            "dr",
            pods={"context": "", "namespace": "mm2", "selector": "app.kubernetes.io/instance=to-eu", "port": "9404"},
        ),
    },
    flows={"primary->dr": FLOW},
)


def test_json_round_trip_keeps_every_field() -> None:
    assert StackExports.from_json(EXPORTS.to_json()) == EXPORTS


def test_exported_keys_stay_those_existing_stacks_have() -> None:
    data = EXPORTS.to_json()
    assert set(data) == {"clusters", "connect", "flows"}
    assert set(data["clusters"]["dr"]) == {
        "bootstrap",
        "securityProtocol",
        "saslMechanism",
        "client",
        "users",
        "caLocation",
    }
    assert set(data["connect"]["mm2"]) == {
        "url", "cluster", "auth", "caPem", "offsetTopic", "workerUrls", "lagUrl", "metricsUrls",
    }  # fmt: skip
    old_flow_keys = {
        "source", "target", "workerGroup", "connectors", "states", "desiredStates", "topics", "checkpointsTopic",
        "offsetSyncsTopic", "heartbeatsTopic", "exactlyOnce", "offsetLagMax", "groups",
    }  # fmt: skip
    assert set(data["flows"]["primary->dr"]) - old_flow_keys == {
        "separator",
        "namePreserving",
        "offsetSyncsCluster",
        "enabled",
        "reverseHeartbeats",
        "transforms",
        "rpoSeconds",
        "outageBudgetSeconds",
        "lossAcknowledgedAt",
        "link",
    }


def _older_flow(**changes: Any) -> dict[str, Any]:
    data = FLOW.to_json()
    for key in ("separator", "namePreserving", "offsetSyncsCluster", "enabled", "transforms"):
        data.pop(key)
    return {**data, **changes}


def _decode_flow(flow: dict[str, Any]) -> FlowExport:
    data = {**EXPORTS.to_json(), "flows": {"primary->dr": flow}}
    return StackExports.from_json(data).flows["primary->dr"]


def test_older_stacks_infer_separator_offset_syncs_cluster_and_identity() -> None:
    assert _decode_flow(_older_flow(rpoSeconds=300, outageBudgetSeconds=86400)) == FLOW
    dashed = _decode_flow(_older_flow(checkpointsTopic="primary-checkpoints-internal"))
    assert dashed.separator == "-"
    on_target = _decode_flow(_older_flow(offsetSyncsTopic="mm2-offset-syncs.primary.internal"))
    assert on_target.offset_syncs_cluster == "dr"
    assert _decode_flow(_older_flow(topics={"orders": "orders"})).name_preserving


def test_objectives_absent_in_older_outputs_decode_as_undeclared() -> None:
    older = FLOW.to_json()
    del older["rpoSeconds"], older["outageBudgetSeconds"]
    flow = _decode_flow(older)
    assert (flow.rpo_seconds, flow.outage_budget_seconds) == (None, None)


@pytest.mark.parametrize("bad", ["5m", -1, 0, 1.5, True])
def test_an_objective_that_is_not_whole_positive_seconds_is_listed(bad: Any) -> None:
    with pytest.raises(OutputsError, match=r'flows\["primary->dr"\].rpoSeconds is not a positive whole number'):
        _decode_flow({**FLOW.to_json(), "rpoSeconds": bad})


def test_the_loss_acknowledgement_is_exported_as_its_utc_instant() -> None:
    assert FLOW.to_json()["lossAcknowledgedAt"] == "2026-11-18T11:06:40Z"
    assert replace(FLOW, loss_acknowledged_at_ms=1_795_000_000_250).loss_acknowledged_at == "2026-11-18T11:06:40.250Z"
    assert replace(FLOW, loss_acknowledged_at_ms=None).to_json()["lossAcknowledgedAt"] is None
    # written with an offset by hand: the same instant
    assert _decode_flow({**FLOW.to_json(), "lossAcknowledgedAt": "2026-11-18T12:06:40+01:00"}) == FLOW


def test_outputs_without_a_loss_acknowledgement_acknowledge_nothing() -> None:
    older = FLOW.to_json()
    del older["lossAcknowledgedAt"]
    assert _decode_flow(older).loss_acknowledged_at_ms is None


@pytest.mark.parametrize("bad", ["2026-11-18T11:06:40", "yesterday", 1_795_000_000_000])
def test_a_loss_acknowledgement_that_is_no_instant_is_listed(bad: Any) -> None:
    with pytest.raises(OutputsError, match=r'flows\["primary->dr"\].lossAcknowledgedAt is not an ISO-8601 instant'):
        _decode_flow({**FLOW.to_json(), "lossAcknowledgedAt": bad})


def test_a_flow_without_a_link_and_older_outputs_have_none() -> None:
    older = FLOW.to_json()
    del older["link"]
    assert _decode_flow(older).link is None
    assert _decode_flow({**FLOW.to_json(), "link": None}).link is None
    assert _decode_flow(FLOW.to_json()).link == LinkExport("dc1<->dc2", 50.0, 200e6)


@pytest.mark.parametrize("bad", ["dc1<->dc2", {"name": "dc1<->dc2"}, {"name": "x", "rttMs": 0, "bandwidthBps": 1e6}])
def test_a_link_that_is_not_one_is_listed(bad: Any) -> None:
    with pytest.raises(OutputsError, match=r'flows\["primary->dr"\].link'):
        _decode_flow({**FLOW.to_json(), "link": bad})


def test_explicit_fields_win_over_inference() -> None:
    flow = _decode_flow(_older_flow(separator="_", offsetSyncsCluster="dr", namePreserving=False))
    assert (flow.separator, flow.offset_syncs_cluster, flow.name_preserving) == ("_", "dr", False)


def test_every_problem_is_listed_together() -> None:
    with pytest.raises(OutputsError) as err:
        StackExports.from_json({"clusters": {"primary": {}}, "flows": {"a->b": {"source": "a"}, "x": 1}})
    text = str(err.value)
    assert 'clusters["primary"] has no "bootstrap"' in text
    assert 'flows["a->b"] lacks target, topics' in text
    assert 'flows["x"] is not an object' in text


def test_hidden_secrets_say_how_to_show_them() -> None:
    data = EXPORTS.to_json()
    data["clusters"]["primary"]["client"] = "[secret]"
    with pytest.raises(OutputsError, match=r'clusters\["primary"\].client is hidden .*--show-secrets'):
        StackExports.from_json(data)


def test_connect_auth_nested_or_flat() -> None:
    nested = StackExports.from_json(EXPORTS.to_json()).connect["mm2"]
    assert nested.auth == {"username": "u", "password": "p"}
    flat = {**EXPORTS.to_json(), "connect": {"mm2": {"url": "http://c", "auth": None, "username": "v", "password": ""}}}
    assert StackExports.from_json(flat).connect["mm2"].auth == {"username": "v", "password": ""}


def test_repr_never_shows_secrets() -> None:
    assert "s3cret" not in repr(EXPORTS) and "pw" not in repr(EXPORTS.clusters) and "'p'" not in repr(EXPORTS)


def test_reverse_heartbeats_round_trip_and_are_absent_in_older_outputs() -> None:
    from dataclasses import replace

    flow = replace(FLOW, reverse_heartbeats_connector="mm2-primary-to-dr-reverse-heartbeat")
    data = flow.to_json()
    assert data["reverseHeartbeats"] == {
        "connector": "mm2-primary-to-dr-reverse-heartbeat",
        "cluster": "primary",
        "topic": FLOW.heartbeats_topic,
    }
    exports = StackExports.from_json({**EXPORTS.to_json(), "flows": {"primary->dr": data}})
    assert exports.flows["primary->dr"].reverse_heartbeats_connector == "mm2-primary-to-dr-reverse-heartbeat"
    older = {k: v for k, v in FLOW.to_json().items() if k != "reverseHeartbeats"}
    exports = StackExports.from_json({**EXPORTS.to_json(), "flows": {"primary->dr": older}})
    assert exports.flows["primary->dr"].reverse_heartbeats_connector is None


PAIR = PairExport(
    "primary<->dr",
    "dr",
    {"primary->dr": (PartitionCut("orders", 0, 250, 250),)},
    principals=("User:app",),
    patterns={"primary->dr": (("orders",), ()), "dr->primary": (("orders", "pay.*"), ("pay.tmp",))},
    last={"from": "primary", "to": "dr", "fencedSeconds": 8.6, "rpoRecords": 0, "unplanned": False},
)


def test_a_pair_round_trips_with_what_its_fence_holds() -> None:
    exports = replace(EXPORTS, pairs={PAIR.name: PAIR})
    data = exports.to_json()
    assert set(data["failover"]["primary<->dr"]) == {"active", "cuts", "principals", "patterns", "unplanned", "last"}
    assert data["failover"]["primary<->dr"]["patterns"]["dr->primary"] == {
        "topics": ["orders", "pay.*"],
        "topicsExclude": ["pay.tmp"],
    }
    assert StackExports.from_json(data) == exports


def test_a_pair_exported_before_its_fence_was_decodes_with_none() -> None:
    older = {"active": "dr", "cuts": {}, "last": None}
    pair = StackExports.from_json({**EXPORTS.to_json(), "failover": {"primary<->dr": older}}).pairs["primary<->dr"]
    assert (pair.principals, pair.patterns, pair.unplanned, pair.last) == ((), {}, False, None)


def test_patterns_round_trip_through_their_document() -> None:
    patterns = {"primary->dr": (("orders",), ()), "dr->primary": (("orders", "pay.*"), ("pay.tmp",))}
    doc = {flow: pattern_document(*p) for flow, p in patterns.items()}
    assert doc["primary->dr"] == {"topics": ["orders"], "topicsExclude": []}
    assert patterns_from_document(doc) == patterns
    # a document written without exclusions, and none at all
    assert patterns_from_document({"primary->dr": {"topics": ["orders"]}}) == {"primary->dr": (("orders",), ())}
    assert patterns_from_document(None) == {}


def test_a_flows_remote_topics_and_connectors_as_the_ops_commands_name_them() -> None:
    flow = FlowExport(
        "primary->dr",
        "primary",
        "dr",
        {"orders": "primary.orders"},
        "primary.checkpoints.internal",
        "mm2-offset-syncs.dr.internal",
        "heartbeats",
        connectors={"source": "s", "checkpoint": "c"},
        separator="_",
        reverse_heartbeats_connector="r",
    )
    assert flow.remote_topic_of("orders") == "primary.orders", "the outputs' own name first"
    assert flow.remote_topic_of("payments") == "primary_payments", "a topic created since: the policy's name"
    assert replace(flow, name_preserving=True).remote_topic_of("payments") == "payments"
    assert flow.connector_names == ("s", "c", "r")
    assert replace(flow, reverse_heartbeats_connector=None).connector_names == ("s", "c")
