"""Source records gone before MM2 copied them (spark.expired): the lag exporter's findings as a
check of their own, apart from records MM2 lost, and what the report and the console show."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from pyspark.sql import SparkSession

from components.outputs.contract import FlowExport
from components.watch.lag import CAUSE, DELETED, RECREATED, Expiry, SentinelState, expiries_document
from spark import checks, expired, flow_validation, html_report
from spark.report import FlowReport, Report, Status, render_table
from spark.topic_checks import partition_rows, record_checks
from tests.unit.ops.helpers import ServedState, incident, serving
from tests.unit.spark.helpers import projection, rec
from tests.unit.spark.test_flow_checks import FLOW

GONE, LOST = CAUSE[DELETED], CAUSE[RECREATED]  # the reports' words for each reason

FOUND = SentinelState(
    {},
    (
        Expiry("primary->dr", "orders", 0, 100, 180, DELETED, 1),
        Expiry("primary->dr", "orders", 0, 180, 300, DELETED, 2),  # the next reading's: one range
        Expiry("primary->dr", "orders", 2, 40, 90, RECREATED, 3),
        Expiry("dr->primary", "orders", 0, 1, 1000, DELETED, 1),  # another flow of the worker group
    ),
    {("primary->dr", "orders"): 1, ("primary->dr", "payments"): 0, ("dr->primary", "orders"): 4},
)
OTHER_CHECKS = {"checkpoints", "group_offsets", "heartbeats"}


def _reading(
    state: SentinelState = FOUND, url: str = "http://127.0.0.1:9", flow: FlowExport = FLOW
) -> expired.SentinelReading:
    return expired.from_document(url, expiries_document(state), flow)


def test_records_gone_before_replication_fail_a_check_naming_partitions_offsets_and_counts() -> None:
    result = expired.check(_reading(), "mm2")
    assert result.name == "source_records_expired" and result.status is Status.FAIL
    assert result.detail == (
        "250 source record(s) in 2 partition(s) gone before MM2 copied them (200 "
        f"{GONE}"
        ", "
        "50 lost with the topic when it was created again), apart from records MM2 lost (completeness): "
        "orders[0] offsets 100..299: 200 record(s) "
        f"{GONE}"
        " before MM2 copied them; "
        "orders[2] offsets 40..89: 50 record(s) lost with the topic when it was created again before MM2 copied them; "
        "source topic orders deleted and created again 1 time(s) (lag exporter http://127.0.0.1:9)"
    )


def test_a_topic_created_again_fails_even_with_no_record_counted() -> None:
    # What was written to the old topic after the exporter's last reading of it is not known.
    result = expired.check(_reading(SentinelState({}, (), {("primary->dr", "orders"): 2})), "mm2")
    assert result.status is Status.FAIL
    assert result.detail.startswith("source topic(s) deleted and created again: records MM2 had not copied")
    assert "source topic orders deleted and created again 2 time(s)" in result.detail


def test_nothing_found_passes_and_another_flows_findings_are_not_this_ones() -> None:
    others = SentinelState({}, (Expiry("dr->primary", "orders", 0, 1, 9, DELETED, 1),), {("dr->primary", "o"): 1})
    result = expired.check(_reading(others), "mm2")
    assert result.status is Status.PASS
    assert result.detail == "lag exporter http://127.0.0.1:9: no source record gone before replication"


# -- the flow's loss acknowledgement (mm2:flows.<flow>.lossAcknowledged, exported lossAcknowledgedAt) --

AT = 1_795_000_000_000  # 2026-11-18T11:06:40Z
INCIDENT = incident("primary->dr", "orders", (0, 100, 180), (2, 40, 90), AT, 1000)


def _acknowledged(at_ms: int | None) -> FlowExport:
    return replace(FLOW, loss_acknowledged_at_ms=at_ms)


def test_findings_at_or_before_the_acknowledgement_pass_and_stay_named() -> None:
    result = expired.check(_reading(INCIDENT, flow=_acknowledged(AT + 1000)), "mm2")
    assert result.status is Status.PASS
    assert result.detail == (
        "lag exporter http://127.0.0.1:9: no source record gone before replication since the loss acknowledged at "
        "2026-11-18T11:06:41Z (lossAcknowledged); acknowledged: orders[0] offsets 100..179: 80 record(s) "
        f"{GONE}"
        " before MM2 copied them; orders[2] offsets 40..89: 50 record(s) "
        f"{LOST}"
        " before MM2 copied them; source topic orders deleted and created again 1 time(s)"
    )


def test_an_acknowledgement_before_a_finding_leaves_it_failing() -> None:
    # A millisecond short of the re-creation: the deleted range is acknowledged, the rest is not.
    reading = _reading(INCIDENT, flow=_acknowledged(AT + 999))
    result = expired.check(reading, "mm2")
    assert result.status is Status.FAIL
    assert result.detail == (
        "50 source record(s) in 1 partition(s) gone before MM2 copied them after the loss acknowledged at "
        "2026-11-18T11:06:40.999Z (50 "
        f"{LOST}"
        "), apart from records MM2 lost (completeness): "
        "orders[2] offsets 40..89: 50 record(s) "
        f"{LOST}"
        " before MM2 copied them; source topic orders deleted and "
        "created again 1 time(s); 1 finding(s) acknowledged (lossAcknowledged 2026-11-18T11:06:40.999Z) "
        "(lag exporter http://127.0.0.1:9)"
    )
    assert [(e["first"], e["acknowledged"]) for e in reading.to_json()["expired"]] == [(100, True), (40, False)]
    assert expired.check(_reading(INCIDENT, flow=_acknowledged(None)), "mm2").status is Status.FAIL


def test_a_range_found_after_the_acknowledgement_is_not_merged_into_an_acknowledged_one() -> None:
    state = SentinelState(
        {},
        (
            Expiry("primary->dr", "orders", 0, 100, 180, DELETED, AT),
            Expiry("primary->dr", "orders", 0, 180, 300, DELETED, AT + 5000),  # follows on, found later
        ),
    )
    result = expired.check(_reading(state, flow=_acknowledged(AT)), "mm2")
    assert result.status is Status.FAIL
    assert f"orders[0] offsets 180..299: 120 record(s) {GONE}" in result.detail and "100..299" not in result.detail


def test_a_recreation_of_unknown_time_is_never_acknowledged() -> None:
    # An exporter that kept no time of the re-creation (lastAtMs absent) cannot show it came before.
    doc = {"expired": [], "recreated": [{"flow": "primary->dr", "topic": "orders", "count": 1}]}
    reading = expired.from_document("http://127.0.0.1:9", doc, _acknowledged(AT))
    assert expired.check(reading, "mm2").status is Status.FAIL
    dated = {"expired": [], "recreated": [{**doc["recreated"][0], "lastAtMs": AT}]}
    assert expired.check(expired.from_document("http://x", dated, _acknowledged(AT)), "mm2").status is Status.PASS


def test_the_report_and_the_page_mark_what_was_acknowledged() -> None:
    reading = _reading(INCIDENT, flow=_acknowledged(AT))
    doc = reading.to_json()
    assert doc["lossAcknowledgedAt"] == "2026-11-18T11:06:40Z"
    assert doc["recreated"] == [{"topic": "orders", "count": 1, "lastAtMs": AT + 1000, "acknowledged": False}]
    page = html_report.render(
        Report(meta={}, flows=[_flow_report(reading)]).to_dict()  # the check fails on the re-creation
    )
    assert "<td>deleted</td><td>acknowledged (2026-11-18T11:06:40Z)</td>" in page
    assert "<td>recreated</td><td></td>" in page


def _flow_report(reading: expired.SentinelReading) -> FlowReport:
    flow = FlowReport("primary->dr", "primary", "dr", exactly_once=False)
    flow.checks.append(expired.check(reading, "mm2"))
    flow.sentinel = reading.to_json()
    return flow


def test_without_a_lag_url_the_check_is_not_run_and_says_why() -> None:
    reading = expired.read_sentinel("", FLOW, fetch=_no_fetch)
    result = expired.check(reading, "mm2")
    assert result.status is Status.SKIP
    assert result.detail.startswith("no lag exporter in the outputs (worker group mm2 exports no lagUrl")


def test_an_exporter_not_answering_is_not_run_with_the_reason_not_failed() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, not listening: refused
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
        reading = expired.read_sentinel(url, FLOW, timeout=1.0)
    result = expired.check(reading, "mm2")
    assert result.status is Status.SKIP
    assert result.detail.startswith(f"lag exporter {url} did not answer within 1 s as the exporter does (")
    assert "refused" in result.detail and result.detail.endswith(": not checked")
    garbled = expired.read_sentinel(url, FLOW, fetch=lambda u, t: b"<html>")
    assert expired.check(garbled, "mm2").status is Status.SKIP


def _no_fetch(url: str, timeout: float) -> bytes:
    raise AssertionError("no lagUrl: nothing to ask")


@pytest.fixture
def exporter() -> Iterator[ServedState]:
    """A lag exporter's own HTTP server over FOUND."""
    with serving(FOUND) as served:
        yield served


def test_the_flow_level_checks_ask_the_exporter_once_and_keep_what_it_found(
    exporter: ServedState, capsys: pytest.CaptureFixture[str]
) -> None:
    run = SimpleNamespace(flow=FLOW, lag_url=exporter.url, sentinel=None)
    args = SimpleNamespace()
    level, _beats = flow_validation.flow_level_checks(run, args, OTHER_CHECKS, None)  # type: ignore[arg-type]
    assert [(c.name, c.status) for c in level] == [("source_records_expired", Status.FAIL)]
    assert f"orders[0] offsets 100..299: 200 record(s) {GONE}" in level[0].detail
    assert run.sentinel is not None and run.sentinel.to_json()["expired"][0]["count"] == 200
    [line] = capsys.readouterr().err.splitlines()  # one console line per flow
    assert line.endswith(
        "primary->dr: source_records_expired FAIL: 250 source record(s) in 2 partition(s) gone before MM2 copied "
        "them (200 "
        f"{GONE}"
        ", 50 "
        f"{LOST}"
        "), apart "
        "from records MM2 lost (completeness)"
    )
    run.sentinel = None
    skipped, _ = flow_validation.flow_level_checks(run, args, OTHER_CHECKS | {expired.CHECK}, None)  # type: ignore[arg-type]
    assert skipped == [] and run.sentinel is None


def test_the_report_lists_the_ranges_and_fails_on_this_check_alone(tmp_path: Any) -> None:
    reading = _reading()
    flow = FlowReport("primary->dr", "primary", "dr", exactly_once=False)
    flow.checks.append(expired.check(reading, "mm2"))
    flow.sentinel = reading.to_json()
    report = Report(meta={}, flows=[flow])
    data = report.to_dict()
    assert data["failedChecks"] == ["primary->dr: source_records_expired"]
    ranges = data["flows"]["primary->dr"]["sentinel"]["expired"]
    assert [(e["topic"], e["partition"], e["first"], e["end"], e["count"], e["reason"]) for e in ranges] == [
        ("orders", 0, 100, 300, 200, "deleted"),
        ("orders", 2, 40, 90, 50, "recreated"),
    ]
    assert data["flows"]["primary->dr"]["sentinel"]["recreated"] == [
        {"topic": "orders", "count": 1, "lastAtMs": None, "acknowledged": False}
    ]
    assert "FAIL  source_records_expired 250 source record(s)" in render_table(report)
    page = html_report.render(data)
    assert "Source records gone before replication" in page
    assert "<td>orders</td><td>0</td><td>100</td><td>299</td><td>200</td><td>deleted</td>" in page
    assert "Source topic orders deleted and created again 1 time(s)." in page


def test_records_gone_before_the_cut_are_not_missing_for_completeness(spark: SparkSession) -> None:
    """The source deleted offsets 0..4 (MM2 had copied 0..1): the cut starts at 5. Completeness
    passes (the copies of 0..1 are a tolerated prefix) and only the sentinel's check names 2..4."""
    source = projection(spark, {0: [rec(i) for i in range(5, 10)]}, start=5)
    target = projection(spark, {0: [rec(i) for i in (0, 1, *range(5, 10))]})
    matched = checks.match_records(source, target)
    summary = checks.summarize_findings(checks.explain_unmatched(matched, {0: 5}, {0: True}))
    counts = {int(r["part"]): r.asDict() for r in checks.kind_counts(matched).collect()}
    rows = partition_rows({0: (5, 10)}, {0: (0, 7)}, counts, summary, {0: 0})
    verdicts = {c.name: c.status for c in record_checks(rows, [], exactly_once=False)}
    assert set(verdicts.values()) == {Status.PASS}, verdicts
    assert rows[0]["missing"] == 0 and rows[0]["prefix"] == 2
    gone = SentinelState({}, (Expiry("primary->dr", "orders", 0, 2, 5, DELETED, 1),))
    result = expired.check(_reading(gone), "mm2")
    assert result.status is Status.FAIL and f"orders[0] offsets 2..4: 3 record(s) {GONE}" in result.detail
