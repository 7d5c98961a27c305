"""Which source groups a flow must checkpoint (MM2's group filter), bounded polling, heartbeats both ways."""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from components.outputs.contract import FlowExport
from spark import kafka_io
from spark.flow_checks import check_checkpoints_emitted, check_heartbeats, poll_until, replicated_groups
from spark.report import Check, Status


def test_replicated_groups_follow_the_flow_filter_and_mm2_excludes() -> None:
    groups = {"app", "billing", "console-consumer-1", "connect-mm2", "__x", "mm2-validate-ab12"}
    assert replicated_groups([".*"], groups) == {"app", "billing"}
    assert replicated_groups([], groups) == {"app", "billing"}  # MM2's default groups=.*
    assert replicated_groups(["bill.*"], groups) == {"billing"}
    assert replicated_groups(["app|console-consumer-1"], groups) == {"app"}


def test_poll_until_stops_when_nothing_is_missing_or_time_is_up() -> None:
    left = [{"a", "b"}, {"b"}, set()]
    missing, waited = poll_until(lambda: left.pop(0), 10, every_s=0.01)
    assert missing == set() and not left and waited < 5
    missing, waited = poll_until(lambda: {"never"}, 0.05, every_s=0.01)
    assert missing == {"never"} and waited >= 0.05


@pytest.mark.parametrize(("declared", "waits"), [("RUNNING", True), ("STOPPED", False), ("PAUSED", False)])
def test_checkpoints_are_waited_for_only_from_a_checkpoint_connector_declared_running(
    monkeypatch: pytest.MonkeyPatch, declared: str, waits: bool
) -> None:
    """A group on the source and no checkpoint: FAIL either way, but only a RUNNING connector is
    waited for (a stopped one will write nothing; waiting only delays the same verdict)."""
    monkeypatch.setattr(kafka_io, "committed_group_offsets", lambda c, t: [kafka_io.GroupOffset("app", "orders", 0, 5)])
    reads: list[str] = []
    monkeypatch.setattr(kafka_io, "read_checkpoints", lambda c, t: reads.append(t) or [])
    flow = replace(
        FLOW, connectors={"checkpoint": "mm2-primary-to-dr-checkpoint"}, desired_states={"checkpoint": declared}
    )
    run = SimpleNamespace(flow=flow, src="SRC", tgt="TGT", cut={"orders": {}})
    started = time.monotonic()
    check, groups = check_checkpoints_emitted(run, 1.5)  # type: ignore[arg-type]
    waited = time.monotonic() - started
    assert check.status is Status.FAIL and groups == {"app"}
    # Waiting is reading again (a 1 s step): counted, not clocked, since on a loaded machine a run
    # that does not wait can take 1.5 s too. A wait lasts at least its bound.
    assert (len(reads) > 1) is waits, reads
    assert waited >= 1.5 or not waits, waited
    if not waits:
        assert f"(checkpoint connector declared {declared})" in check.detail


# -- heartbeats, both ways (Kafka reads faked) --------------------------------------------------

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


def _heartbeats(
    monkeypatch: pytest.MonkeyPatch, newest: dict[tuple[str, str, str], int | None], src_topics: set[str]
) -> tuple[Check, dict[str, Any]]:
    """check_heartbeats on FLOW, the source cluster "SRC" and target "TGT" answering from `newest`."""

    def tail(cluster: str, topic: str, source: str | None, target: str | None) -> kafka_io.HeartbeatTail:
        found = newest.get((cluster, str(source), str(target)))
        return kafka_io.HeartbeatTail(1 if found else 0, found)

    monkeypatch.setattr(kafka_io, "heartbeat_tail", tail)
    monkeypatch.setattr(
        kafka_io, "list_topics", lambda c: dict.fromkeys(src_topics if c == "SRC" else {"heartbeats"}, 1)
    )
    run = SimpleNamespace(flow=FLOW, src="SRC", tgt="TGT")
    info: dict[str, Any] = {"latencyMs": {}}
    return check_heartbeats(run, info, max_age_s=1.0), info  # type: ignore[arg-type]


def test_fresh_heartbeats_both_ways_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    now = int(time.time() * 1000)
    check, info = _heartbeats(
        monkeypatch, {("TGT", "primary", "dr"): now, ("SRC", "dr", "primary"): now}, {"heartbeats"}
    )
    assert check.status is Status.PASS and "reverse heartbeat on primary" in check.detail
    assert info["reverse"]["connector"] == "mm2-primary-to-dr-reverse-heartbeat"


@pytest.mark.parametrize(
    ("reverse", "src_topics", "detail"),
    [
        (None, {"heartbeats"}, "none from (dr, primary) in heartbeats on primary"),
        (-600_000, {"heartbeats"}, "newest in heartbeats on primary is 60"),  # 600-601 s: the check polls 1 s
        (0, set(), "none from (dr, primary) in heartbeats on primary"),
    ],
)
def test_missing_or_stale_reverse_heartbeats_fail(
    monkeypatch: pytest.MonkeyPatch, reverse: int | None, src_topics: set[str], detail: str
) -> None:
    now = int(time.time() * 1000)
    newest = {("TGT", "primary", "dr"): now, ("SRC", "dr", "primary"): None if reverse is None else now + reverse}
    check, _ = _heartbeats(monkeypatch, newest, src_topics)
    assert check.status is Status.FAIL and "reverse heartbeat connector silent" in check.detail
    assert detail in check.detail


def test_a_flow_without_reverse_heartbeats_checks_the_target_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "FLOW", replace(FLOW, reverse_heartbeats_connector=None))
    check, info = _heartbeats(monkeypatch, {("TGT", "primary", "dr"): int(time.time() * 1000)}, set())
    assert check.status is Status.PASS and "reverse" not in info
