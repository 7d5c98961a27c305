"""spark/flow_validation.py: the heartbeat check covers reverse heartbeats (Kafka reads faked)."""

from __future__ import annotations

import argparse
import time
from typing import Any

import pytest

from components.outputs.contract import FlowExport
from spark import flow_validation, kafka_io
from spark.report import FlowReport, Status

FLOW = FlowExport(
    name="primary->dr",
    source="primary",
    target="dr",
    topics={"orders": "primary.orders"},
    checkpoints_topic="primary.checkpoints.internal",
    offset_syncs_topic="mm2-offset-syncs.dr.internal",
    heartbeats_topic="heartbeats",
    reverse_heartbeats_connector="mm2-primary-to-dr-reverse-heartbeat",
)


def _run(src_topics: dict[str, int]) -> Any:
    run = object.__new__(flow_validation.FlowRun)
    run.flow, run.src, run.tgt, run.src_topics, run.latency = FLOW, "SRC", "TGT", src_topics, None
    return run


def _check(monkeypatch: pytest.MonkeyPatch, newest: dict[tuple[str, str, str], int | None], src: dict[str, int]) -> Any:
    def tail(cluster: str, topic: str, source: str | None, target: str | None) -> kafka_io.HeartbeatTail:
        found = newest.get((cluster, str(source), str(target)))
        return kafka_io.HeartbeatTail(1 if found else 0, found)

    monkeypatch.setattr(kafka_io, "heartbeat_tail", tail)
    rep = FlowReport(name=FLOW.name, source=FLOW.source, target=FLOW.target, exactly_once=False)
    args = argparse.Namespace(heartbeat_max_age=60.0)
    return flow_validation.check_heartbeats(_run(src), rep, args, {"heartbeats": 1}), rep


def test_fresh_heartbeats_both_ways_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    now = int(time.time() * 1000)
    fresh = {("TGT", "primary", "dr"): now, ("SRC", "dr", "primary"): now}
    check, rep = _check(monkeypatch, fresh, {"heartbeats": 1})
    assert check.status is Status.PASS and "reverse heartbeat on primary" in check.detail
    assert rep.heartbeats["reverse"]["connector"] == "mm2-primary-to-dr-reverse-heartbeat"


@pytest.mark.parametrize(
    ("reverse", "src", "detail"),
    [
        (None, {"heartbeats": 1}, "none from (dr, primary) in heartbeats on primary"),
        (-600_000, {"heartbeats": 1}, "newest in heartbeats on primary is 600s old"),
        (0, {}, "heartbeats does not exist on primary"),
    ],
)
def test_missing_or_stale_reverse_heartbeats_fail(
    monkeypatch: pytest.MonkeyPatch, reverse: int | None, src: dict[str, int], detail: str
) -> None:
    now = int(time.time() * 1000)
    newest = {("TGT", "primary", "dr"): now, ("SRC", "dr", "primary"): None if reverse is None else now + reverse}
    check, _ = _check(monkeypatch, newest, src)
    assert check.status is Status.FAIL and detail in check.detail
