"""Health rules, lag translation and rendering of `bin/status` (pure)."""

from __future__ import annotations

import json

import pytest

from components.mm2_records import OffsetSync
from components.ops.status_view import (
    ConnectorView,
    ExporterReading,
    FlowStatus,
    HeartbeatView,
    InClusterService,
    PairView,
    SentinelView,
    TaskView,
    flow_lag,
    in_cluster_service,
    newest_syncs,
    pair_lines,
    partition_lag,
    problems_of,
    render_status_table,
    sentinel_json,
    sentinel_lines,
    sentinel_problems,
    sentinel_view,
    to_json,
    topic_view,
)
from components.ops.throughput import Throughput
from components.outputs.contract import LinkExport
from components.watch.lag import (
    CAUSE,
    DELETED,
    Expiry,
    FlowLag,
    PartitionLag,
    Recreation,
    SentinelState,
    expiries_document,
    exposition,
)
from tests.unit.ops.helpers import incident

GONE = CAUSE[DELETED]  # the reports' words for records deleted before MM2 copied them

RUNNING = (
    ConnectorView("source", "mm2-a-to-b-source", "RUNNING", "RUNNING", "w1", "", (TaskView(0, "RUNNING", "w1"),)),
    ConnectorView("checkpoint", "mm2-a-to-b-checkpoint", "RUNNING", "RUNNING", "w2"),
    ConnectorView("heartbeat", "mm2-a-to-b-heartbeat", "RUNNING", "RUNNING", "w1", "", (TaskView(0, "RUNNING", "w2"),)),
)
FRESH = HeartbeatView("heartbeats", 1.5)


def test_lag_translates_the_target_end_through_the_newest_sync() -> None:
    # Source record 1000 landed at target offset 400: target end 450 is source position 1050.
    assert partition_lag(1100, 450, OffsetSync("orders", 0, 1000, 400)) == 50
    assert partition_lag(1050, 450, OffsetSync("orders", 0, 1000, 400)) == 0
    assert partition_lag(1000, 10, OffsetSync("orders", 0, 1000, 400)) == 0  # never below zero


def test_lag_without_a_sync_is_unknown_unless_the_source_is_empty() -> None:
    assert partition_lag(0, 0, None) == 0
    assert partition_lag(5, 0, None) is None


def test_newest_sync_per_partition_is_the_last_read() -> None:
    syncs = newest_syncs([OffsetSync("o", 0, 1, 1), OffsetSync("o", 1, 5, 5), OffsetSync("o", 0, 9, 7)])
    assert syncs[("o", 0)].upstream_offset == 9 and syncs[("o", 1)].upstream_offset == 5


def test_topic_view_sums_partitions_and_names_missing_topics() -> None:
    syncs = {("o", 0): OffsetSync("o", 0, 10, 10), ("o", 1): OffsetSync("o", 1, 0, 0)}
    assert topic_view("o", "a.o", {0: 20, 1: 3}, {0: 15, 1: 3}, syncs).lag == 5
    assert topic_view("o", "a.o", None, None, syncs).note == "missing on the source"
    assert topic_view("o", "a.o", {0: 1}, None, syncs).note == "not yet created on the target"
    assert topic_view("o", "a.o", {0: 20, 2: 4}, {0: 20}, syncs).lag is None


def test_a_running_flow_with_fresh_heartbeats_is_healthy() -> None:
    assert problems_of(RUNNING, FRESH, 60) == ()


def test_failed_task_is_unhealthy_with_its_first_trace_line() -> None:
    source = ConnectorView(
        "source",
        "mm2-a-to-b-source",
        "RUNNING",
        "RUNNING",
        "w1",
        "",
        (TaskView(0, "FAILED", "w2", "org.apache.kafka.common.errors.TopicAuthorizationException: denied"),),
    )
    [problem] = problems_of((source, *RUNNING[1:]), FRESH, 60)
    assert "source task 0 on w2 is FAILED" in problem and "TopicAuthorizationException" in problem


def test_state_other_than_declared_is_unhealthy_and_declared_pause_is_not() -> None:
    paused = ConnectorView("source", "s", "PAUSED", "RUNNING", "w1")
    assert problems_of((paused, *RUNNING[1:]), FRESH, 60) == (
        "source connector s is PAUSED, the stack declares RUNNING",
    )
    declared = ConnectorView("source", "s", "PAUSED", "PAUSED", "w1", "", (TaskView(0, "PAUSED", "w1"),))
    assert problems_of((declared, *RUNNING[1:]), FRESH, 60) == ()


def test_missing_connector_and_stale_or_absent_heartbeats() -> None:
    missing = ConnectorView("checkpoint", "c", "MISSING", "RUNNING")
    found = problems_of((RUNNING[0], missing, RUNNING[2]), HeartbeatView("heartbeats", 300.0), 60)
    assert any("does not exist" in p for p in found)
    assert any("300 s old" in p for p in found)
    assert problems_of(RUNNING, HeartbeatView("heartbeats", None), 60) == ("no heartbeat in heartbeats yet",)


def test_stopped_heartbeat_connector_by_declaration_is_not_judged_on_heartbeats() -> None:
    stopped = ConnectorView("heartbeat", "h", "STOPPED", "STOPPED")
    assert problems_of((*RUNNING[:2], stopped), HeartbeatView("heartbeats", 900.0), 60) == ()


def test_table_and_json_say_why() -> None:
    bad = FlowStatus(
        "a->b",
        "mm2",
        RUNNING,
        (topic_view("o", "a.o", {0: 20}, {0: 15}, {("o", 0): OffsetSync("o", 0, 10, 10)}),),
        checkpoint_age_s=4.0,
        heartbeat=HeartbeatView("a.heartbeats", 2.0, 0.5),
        problems=("source task 0 is FAILED",),
    )
    good = FlowStatus("b->a", "mm2", RUNNING, heartbeat=FRESH)
    table = render_status_table([bad, good])
    assert "flow a->b  (worker group mm2)  UNHEALTHY" in table and "why unhealthy: source task 0 is FAILED" in table
    assert "flow b->a  (worker group mm2)  healthy" in table
    assert "newest checkpoint age 4.0s; heartbeat age 2.0s latency 0.5s (a.heartbeats)" in table
    data = json.loads(json.dumps(to_json([bad, good])))
    assert data["healthy"] is False
    assert data["flows"]["a->b"]["topics"][0]["lag"] == 5 and data["flows"]["b->a"]["healthy"] is True


# -- the data-loss sentinel (what the worker group's lag exporter found) ---------------------


def _exposition(flow: str, records: int, seconds: float) -> str:
    lags = (PartitionLag("orders", 0, records, seconds), PartitionLag("orders", 1, 1, 0.5))
    other = FlowLag("b->a", "b", "a", 60, (PartitionLag("orders", 0, 999, 99.0),))
    return exposition([FlowLag(flow, "a", "b", 60, lags), other], SentinelState({}))


def test_the_flow_lag_is_read_from_the_exporters_own_metrics_text() -> None:
    assert flow_lag(_exposition("a->b", 40, 12.25), "a->b") == (40, 12.25)
    assert flow_lag(_exposition('a"x\\->b', 7, 3.0), 'a"x\\->b') == (7, 3.0)  # label escapes undone
    assert flow_lag(_exposition("a->b", 40, 12.25), "c->d") == (None, None)
    assert flow_lag(None, "a->b") == (None, None)


def test_the_sentinel_view_keeps_the_flows_own_findings() -> None:
    state = SentinelState(
        {},
        (Expiry("a->b", "o", 0, 10, 30, DELETED, 1), Expiry("b->a", "o", 0, 1, 2, DELETED, 1)),
        {("a->b", "o"): 2, ("a->b", "p"): 0, ("b->a", "o"): 1},
    )
    view = sentinel_view(ExporterReading("http://x", expiries_document(state), _exposition("a->b", 3, 1.0)), "a->b")
    assert [(e.topic, e.first, e.end) for e in view.findings.expired] == [("o", 10, 30)]
    assert view.findings.recreated == (Recreation("a->b", "o", 2),)
    assert (view.lag_records, view.lag_seconds) == (3, 1.0)
    [retention, recreated] = sentinel_problems(view)
    assert retention.startswith("20 source record(s) in 1 partition(s) were deleted from the source")
    assert recreated.startswith("source topic o was deleted and created again (2 time(s)): 0 record(s)")


def test_an_exporter_without_findings_or_without_an_answer_gives_no_reason() -> None:
    quiet = sentinel_view(ExporterReading("http://x", {"expired": [], "recreated": []}), "a->b")
    assert sentinel_problems(quiet) == () and not quiet.found and quiet.error == ""
    silent = sentinel_view(ExporterReading("http://x", error="timed out"), "a->b")
    assert sentinel_problems(silent) == () and silent.error == "timed out"
    [line] = sentinel_lines(silent)
    assert "lag exporter http://x did not answer within 2 s (timed out)" in line
    assert sentinel_problems(None) == () and sentinel_lines(None) == [] and sentinel_json(None) is None


def test_a_local_exporter_not_answering_is_started_again_by_pulumi_up() -> None:
    silent = sentinel_view(ExporterReading("http://127.0.0.1:41234", error="Connection refused"), "a->b")
    assert sentinel_lines(silent, "mm2") == [
        "  note: lag exporter http://127.0.0.1:41234 did not answer within 2 s (Connection refused): "
        "expired records not checked (`bin/pulumi up` starts it again)"
    ]


def test_an_in_cluster_exporter_not_reachable_from_here_says_how_to_read_it() -> None:
    url = "http://mm2-lag-exporter.kafka.svc:9404"
    silent = sentinel_view(ExporterReading(url, error="[Errno -2] Name or service not known"), "a->b")
    assert sentinel_problems(silent) == ()
    [line] = sentinel_lines(silent, "mm2")
    assert line == (
        f"  note: lag exporter {url} runs inside the Kubernetes cluster and is not reachable from here "
        "([Errno -2] Name or service not known): expired records not checked. To read it from here: "
        "`kubectl port-forward -n kafka svc/mm2-lag-exporter 9404` in another shell, then "
        "`bin/status --lag-url mm2=http://127.0.0.1:9404` with this run's other options"
    )
    assert "starts it again" not in line
    # The table names the flow's own worker group in the option.
    table = render_status_table([FlowStatus("a->b", "east", RUNNING, heartbeat=FRESH, sentinel=silent)])
    assert "`bin/status --lag-url east=http://127.0.0.1:9404`" in table and "healthy" in table


def test_an_exporter_given_with_lag_url_not_answering_says_to_check_it() -> None:
    reading = ExporterReading("http://127.0.0.1:9404", error="Connection refused", given=True)
    [line] = sentinel_lines(sentinel_view(reading, "a->b"), "mm2")
    assert "given with --lag-url: check it, or the port-forward" in line and "starts it again" not in line


@pytest.mark.parametrize(
    ("url", "service"),
    [
        ("http://mm2-lag-exporter.kafka.svc:9404", InClusterService("mm2-lag-exporter", "kafka", 9404)),
        ("http://mm2-lag-exporter.kafka.svc.cluster.local:9404/", InClusterService("mm2-lag-exporter", "kafka", 9404)),
        ("https://lag.ops.svc.cluster.local.", InClusterService("lag", "ops", 443)),
        ("http://lag.cluster.local", InClusterService("lag", "<namespace>", 80)),
        ("http://127.0.0.1:41234", None),
        ("http://localhost:9404", None),
        ("http://lag.svc.example.com:9404", None),
        ("http://x", None),
        ("http://lag.kafka.svc:notaport", None),
    ],
)
def test_in_cluster_names_are_told_by_their_dns_suffix(url: str, service: InClusterService | None) -> None:
    assert in_cluster_service(url) == service


# -- the flow's loss acknowledgement (mm2:flows.<flow>.lossAcknowledged) ---------------------------

AT = 1_795_000_000_000  # 2026-11-18T11:06:40Z
INCIDENT = incident("a->b", "o", (0, 10, 30), (1, 5, 8), AT, 2_500)


def _view(acknowledged_at_ms: int | None, state: SentinelState = INCIDENT) -> SentinelView:
    return sentinel_view(ExporterReading("http://x", expiries_document(state)), "a->b", acknowledged_at_ms)


def _status(view: SentinelView) -> FlowStatus:
    return FlowStatus("a->b", "mm2", RUNNING, problems=sentinel_problems(view), sentinel=view)


def test_findings_at_or_before_the_acknowledgement_are_listed_acknowledged_and_leave_the_flow_healthy() -> None:
    view = _view(AT + 2_500)
    assert sentinel_problems(view) == ()
    assert _status(view).healthy
    lines = sentinel_lines(view)
    assert lines[1:] == [
        "  expired: o[0] offsets 10..29: 20 record(s) "
        f"{GONE}"
        " before MM2 copied them "
        "(first found 2026-11-18T11:06:40Z; acknowledged by lossAcknowledged 2026-11-18T11:06:42.500Z)",
        "  expired: o[1] offsets 5..7: 3 record(s) lost with the topic when it was created again before MM2 copied "
        "them (first found 2026-11-18T11:06:42Z; acknowledged by lossAcknowledged 2026-11-18T11:06:42.500Z)",
        "  re-created: source topic o (1 time(s), last found 2026-11-18T11:06:42Z; acknowledged by lossAcknowledged "
        "2026-11-18T11:06:42.500Z)",
    ]
    doc = sentinel_json(view)
    assert doc is not None and doc["loss_acknowledged_at"] == "2026-11-18T11:06:42.500Z"
    assert [e["acknowledged"] for e in doc["expired"]] == [True, True]
    assert doc["recreated"] == [{"topic": "o", "count": 1, "lastAtMs": AT + 2_500, "acknowledged": True}]


def test_what_was_found_after_the_acknowledgement_still_makes_the_flow_unhealthy() -> None:
    view = _view(AT)  # covers the retention range, not the re-creation found 2.5 s later
    [recreated] = sentinel_problems(view)
    assert recreated.startswith("source topic o was deleted and created again (1 time(s)): 3 record(s)")
    assert not _status(view).healthy
    lines = sentinel_lines(view)
    assert lines[1].endswith(
        "(first found 2026-11-18T11:06:40Z; acknowledged by lossAcknowledged 2026-11-18T11:06:40Z)"
    )
    assert lines[2].endswith("(first found 2026-11-18T11:06:42Z)")  # not acknowledged
    assert lines[-1] == (
        '  to acknowledge: once the losses above are reviewed, declare mm2:flows.a->b.lossAcknowledged "2026-11-18T'
        '11:06:43Z" (when the last was found) or later and `bin/pulumi up`: what was found by then stays listed, '
        "marked acknowledged, and no longer makes the flow unhealthy"
    )
    nothing = _view(None)
    assert len(sentinel_problems(nothing)) == 2 and "acknowledged" not in "".join(sentinel_lines(nothing)[1:-1])


def test_a_recreation_the_exporter_kept_no_time_of_is_never_acknowledged() -> None:
    undated = SentinelState({}, (), {("a->b", "o"): 1})  # an exporter from before re-creation times
    view = _view(AT + 10_000, undated)
    assert [p.split(":")[0] for p in sentinel_problems(view)] == [
        "source topic o was deleted and created again (1 time(s))"
    ]
    assert "last found not known)" in sentinel_lines(view)[1]
    assert "after the lag exporter is restarted" in sentinel_lines(view)[-1]


def test_a_pair_never_switched_and_without_a_fence_read_is_a_note_not_a_reason() -> None:
    view = PairView("a<->b", "a", "b", (), None, not_read="the stack's outputs predate its export")
    assert pair_lines([view]) == [
        "pair a<->b  active a, passive b  healthy",
        "  fence on b: not read (the stack's outputs predate its export)",
        "  no switchover yet",
    ]
    assert to_json([], [view])["healthy"] is True


def test_a_pair_whose_fence_lacks_bindings_names_each_and_fails_the_stack() -> None:
    view = PairView("a<->b", "a", "b", ("User:app", "User:etl"), ("User:etl on orders", "User:etl on pay"))
    lines = pair_lines([view])
    assert lines[0] == "pair a<->b  active a, passive b  UNHEALTHY"
    assert lines[-1].startswith("  why unhealthy: the fence on b lacks User:etl on orders, User:etl on pay:")
    data = json.loads(json.dumps(to_json([], [view])))
    assert data["healthy"] is False and data["failover"]["a<->b"]["fence_missing"] == list(view.fence_missing or ())


def test_a_flows_copy_rate_is_one_line_in_the_table_and_a_figure_in_json() -> None:
    link = LinkExport("dc1<->dc2", 20.0, 4e6)
    flow = FlowStatus("a->b", "mm2", RUNNING, heartbeat=FRESH, throughput=Throughput(250_000.0, link))
    table = render_status_table([flow])
    assert "  throughput 2 Mbit/s over the workers' last minute (MM2 byte-rate), 50% of the link dc1<->dc2" in table
    assert to_json([flow])["flows"]["a->b"]["throughput"]["bytes_per_s"] == 250_000.0
    assert "throughput" not in render_status_table([FlowStatus("a->b", "mm2", RUNNING, heartbeat=FRESH)])
