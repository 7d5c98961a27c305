"""FlowRun: which isolation level each side of a flow is read with (watermarks stubbed)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from components.outputs.contract import FlowExport
from spark import flow_run, flow_validation, kafka_io
from spark.outputs import ClusterAccess, ValidationScope
from spark.report import FlowReport, Report, render_table
from tests.unit.spark.test_flow_checks import FLOW


def _flow(exactly_once: bool) -> FlowExport:
    return replace(FLOW, exactly_once=exactly_once, offset_syncs_cluster="primary")


def _run(monkeypatch: pytest.MonkeyPatch, exactly_once: bool) -> tuple[flow_run.FlowRun, list[Any]]:
    reads: list[Any] = []

    def watermarks(cluster: ClusterAccess, topic: str, partitions: int, isolation: str = "read_uncommitted") -> Any:
        reads.append((cluster.alias, topic, isolation))
        return {p: (0, 10) for p in range(partitions)}

    monkeypatch.setattr(kafka_io, "watermarks", watermarks)
    monkeypatch.setattr(kafka_io, "list_topics", lambda cluster: {"primary.orders": 2})
    clusters = {
        a: ClusterAccess(alias=a, bootstrap="127.0.0.1:1", security_protocol="PLAINTEXT") for a in ("primary", "dr")
    }
    flow = _flow(exactly_once)
    run = flow_run.FlowRun(flow, ValidationScope(clusters, (flow,)), {"primary": {"orders": 2}})
    run.snapshot = flow_validation.target_ranges(run)
    return run, reads


@pytest.mark.parametrize(("exactly_once", "source"), [(False, "read_uncommitted"), (True, "read_committed")])
def test_the_target_is_read_committed_and_the_source_as_mm2_reads_it(
    monkeypatch: pytest.MonkeyPatch, exactly_once: bool, source: str
) -> None:
    # An at-least-once flow's target may hold aborted transactions (written while the flow, or
    # another on its workers, was exactly-once): a read_committed consumer never sees them, so
    # the stage must not count them as duplicates.
    run, reads = _run(monkeypatch, exactly_once)
    assert reads == [("primary", "orders", source), ("dr", "primary.orders", "read_committed")]
    src, tgt = flow_validation.fast_reads([run])[0][2:]
    assert (src.isolation, tgt.isolation) == (source, "read_committed")


def test_the_report_names_the_isolation_levels() -> None:
    flow = FlowReport("primary->dr", "primary", "dr", exactly_once=False)
    flow.isolation = {"source": "read_uncommitted", "target": "read_committed"}
    report = Report(meta={}, flows=[flow])
    assert report.to_dict()["flows"]["primary->dr"]["isolation"] == flow.isolation
    assert "read read_uncommitted on primary, read_committed on dr" in render_table(report)
