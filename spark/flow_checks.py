"""Flow-level checks on live MM2 behaviour: checkpoints emitted, groups synced, heartbeats alive.

Strict by design: a flow that should emit something and has not, after a bounded wait, FAILs
with the reason. What "should" means comes from the data and the declared/live configuration:
- checkpoints: a consumer group (matching the flow's `groups`, outside MM2's default excludes)
  has committed offsets on the source for a replicated topic, so MM2's checkpoint connector must
  have written at least one checkpoint for it;
- group offsets: when `sync.group.offsets.enabled` is true on the live checkpoint connector,
  every checkpointed group must also have committed offsets on the target, none beyond the log end;
- heartbeats: the heartbeat connector's (source, target) heartbeat must be younger than the limit.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from spark import kafka_io
from spark.flow_run import FlowRun
from spark.report import Check, Status

# MM2's default groups.exclude (DefaultGroupFilter), plus the validator's own throwaway groups.
GROUP_EXCLUDES = ("console-consumer-.*", "connect-.*", "__.*", "mm2-validate-.*")
HEARTBEAT_SAMPLE_CAP = 2000


def replicated_groups(patterns: Iterable[str], groups: Iterable[str]) -> set[str]:
    """The groups MM2 checkpoints for a flow: matching its `groups`, none of the default excludes."""
    pats = [re.compile(p) for p in (list(patterns) or [".*"])]
    excl = [re.compile(p) for p in GROUP_EXCLUDES]
    return {g for g in groups if any(p.fullmatch(g) for p in pats) and not any(x.fullmatch(g) for x in excl)}


def poll_until(probe: Callable[[], set[str]], timeout_s: float, every_s: float = 1.0) -> tuple[set[str], float]:
    """Call `probe` (what is still missing) until it returns nothing or `timeout_s` passes."""
    started = time.monotonic()
    while True:
        missing = probe()
        waited = time.monotonic() - started
        if not missing or waited >= timeout_s:
            return missing, waited
        time.sleep(every_s)


def checkpoint_wait(run: FlowRun, wait_s: float) -> float:
    """How long to wait for checkpoints and synced group offsets: none when the stack declares the
    checkpoint connector paused or stopped (nothing will come; the verdict is the same, at once)."""
    return wait_s if run.flow.desired_states.get("checkpoint", "RUNNING") == "RUNNING" else 0.0


def _checkpointed_groups(run: FlowRun) -> set[str]:
    """Groups with at least one checkpoint for a replicated topic of this flow (read from the tail)."""
    remotes = {run.flow.topics[t] for t in run.cut}
    return {c.group for c in kafka_io.read_checkpoints(run.tgt, run.flow.checkpoints_topic) if c.topic in remotes}


def check_checkpoints_emitted(run: FlowRun, wait_s: float) -> tuple[Check, set[str]]:
    """FAIL when a replicated source group still has no checkpoint after `wait_s`; returns the groups."""
    flow = run.flow
    committed = kafka_io.committed_group_offsets(run.src, list(run.cut))
    expected = replicated_groups(flow.groups, {g.group for g in committed})
    if not expected:
        return Check(
            "checkpoints", Status.SKIP, "no replicated consumer group has offsets on the source: nothing to checkpoint"
        ), set()
    if "checkpoint" not in flow.connectors:
        return Check("checkpoints", Status.FAIL, f"groups {sorted(expected)[:5]} but no checkpoint connector"), expected
    missing, waited = poll_until(lambda: expected - _checkpointed_groups(run), checkpoint_wait(run, wait_s))
    if missing:
        declared = flow.desired_states.get("checkpoint", "RUNNING")
        why = f" (checkpoint connector declared {declared})" if declared != "RUNNING" else ""
        return Check(
            "checkpoints",
            Status.FAIL,
            f"{len(missing)} of {len(expected)} replicated group(s) have offsets on {flow.source} but no checkpoint "
            f"in {flow.checkpoints_topic} after {waited:.0f}s{why}: {', '.join(sorted(missing)[:5])}",
        ), expected
    return Check("checkpoints", Status.PASS, f"{len(expected)} replicated group(s) checkpointed"), expected


def check_group_offsets(run: FlowRun, groups: set[str], sync_enabled: bool | None, wait_s: float) -> Check:
    """Committed target offsets within the log end; with group sync on, every checkpointed group synced."""
    remotes = [run.flow.topics[t] for t in run.cut]
    committed = kafka_io.committed_group_offsets(run.tgt, remotes)
    if sync_enabled and groups:

        def unsynced() -> set[str]:
            nonlocal committed
            committed = kafka_io.committed_group_offsets(run.tgt, remotes)
            return groups - {g.group for g in committed}

        missing, waited = poll_until(unsynced, checkpoint_wait(run, wait_s))
        if missing:
            return Check(
                "group_offsets",
                Status.FAIL,
                f"sync.group.offsets.enabled=true but {len(missing)} group(s) have no committed offset on "
                f"{run.flow.target} after {waited:.0f}s: {', '.join(sorted(missing)[:5])}",
            )
    present = kafka_io.list_topics(run.tgt)
    ends: dict[str, dict[int, int]] = {}
    beyond = []
    for g in committed:
        if g.topic not in ends:
            ends[g.topic] = {
                p: hi for p, (_, hi) in kafka_io.watermarks(run.tgt, g.topic, present.get(g.topic, 0)).items()
            }
        end = ends[g.topic].get(g.partition)
        if end is None or g.offset > end:
            beyond.append(f"group {g.group} {g.topic}-{g.partition} at {g.offset} > log end {end}")
    if beyond:
        return Check(
            "group_offsets",
            Status.FAIL,
            f"{len(beyond)} committed offset(s) beyond the log end: {'; '.join(beyond[:3])}",
        )
    n_groups = len({g.group for g in committed})
    sync = {True: "; group sync on", False: "; group sync off", None: ""}[sync_enabled]
    return Check(
        "group_offsets",
        Status.PASS,
        f"{len(committed)} committed offset(s) of {n_groups} group(s) within the log end{sync}",
    )


def heartbeat_info(run: FlowRun, max_age_s: float) -> dict[str, Any]:
    """Latency percentiles and raw samples per heartbeat topic (what the live window measured)."""
    flow = run.flow
    samples = run.latency.result() if run.latency is not None else {}
    info: dict[str, Any] = {"topic": flow.heartbeats_topic, "maxAgeSeconds": max_age_s}
    info["latencyMs"] = {
        t: {
            **kafka_io.percentiles([lat for _, lat in v]),
            "measures": (
                "emission on the source cluster -> visible on the target (MM2 data path)"
                if t == flow.replicated_heartbeats_topic
                else "heartbeat connector emission -> visible on the target"
            ),
        }
        for t, v in samples.items()
    }
    info["samples"] = {t: [list(s) for s in v[-HEARTBEAT_SAMPLE_CAP:]] for t, v in samples.items()}
    return info


def check_heartbeats(run: FlowRun, info: dict[str, Any], max_age_s: float) -> Check:
    """Heartbeats on the target; with `reverseHeartbeats` also those the target side emits into the source."""
    forward = _forward_heartbeats(run, info, max_age_s)
    if not run.flow.reverse_heartbeats_connector or forward.status is Status.FAIL:
        return forward
    reverse = _reverse_heartbeats(run, info, max_age_s)
    if reverse.status is Status.FAIL:
        return reverse
    return Check("heartbeats", forward.status, f"{forward.detail}; {reverse.detail}")


def _newest_fresh(newest: Callable[[], int | None], max_age_s: float) -> int | None:
    """The newest heartbeat's timestamp, polling (bounded by `max_age_s`) until one is that fresh."""
    newest_ms = newest()
    started = time.monotonic()
    while (newest_ms is None or time.time() * 1000 - newest_ms > max_age_s * 1000) and (
        time.monotonic() - started < max_age_s
    ):
        time.sleep(1.0)
        newest_ms = newest()
    return newest_ms


def _reverse_heartbeats(run: FlowRun, info: dict[str, Any], max_age_s: float) -> Check:
    """`reverseHeartbeats`: heartbeats keyed (target, source) in `heartbeats` on the source, fresh."""
    flow = run.flow
    hb = flow.heartbeats_topic
    reverse: dict[str, Any] = {"topic": hb, "cluster": flow.source, "connector": flow.reverse_heartbeats_connector}
    info["reverse"] = reverse

    def newest() -> int | None:
        if hb not in kafka_io.list_topics(run.src):
            return None
        return kafka_io.heartbeat_tail(run.src, hb, flow.target, flow.source).newest_ms

    newest_ms = _newest_fresh(newest, max_age_s)
    if newest_ms is None:
        return Check(
            "heartbeats",
            Status.FAIL,
            f"reverse heartbeat connector silent: none from ({flow.target}, {flow.source}) in {hb} on {flow.source}",
        )
    age = (int(time.time() * 1000) - newest_ms) / 1000
    reverse["ageSeconds"] = round(age, 1)
    if age > max_age_s:
        return Check(
            "heartbeats",
            Status.FAIL,
            f"reverse heartbeat connector silent: newest in {hb} on {flow.source} is {age:.0f}s old"
            f" (max {max_age_s:.0f}s)",
        )
    return Check("heartbeats", Status.PASS, f"reverse heartbeat on {flow.source} {age:.1f}s old")


def _forward_heartbeats(run: FlowRun, info: dict[str, Any], max_age_s: float) -> Check:
    """The (source, target) heartbeat must exist and be younger than `max_age_s`, waiting up to that long."""
    flow = run.flow
    hb = flow.heartbeats_topic

    def newest() -> int | None:
        if hb not in kafka_io.list_topics(run.tgt):
            return None
        return kafka_io.heartbeat_tail(run.tgt, hb, flow.source, flow.target).newest_ms

    newest_ms = _newest_fresh(newest, max_age_s)
    now_ms = int(time.time() * 1000)  # after the read: the newest heartbeat may be younger than the call
    tgt_topics = kafka_io.list_topics(run.tgt)
    if flow.replicated_heartbeats_topic in tgt_topics:
        rtail = kafka_io.heartbeat_tail(run.tgt, flow.replicated_heartbeats_topic, None, None)
        info["replicated"] = {
            "topic": flow.replicated_heartbeats_topic,
            "ageSeconds": None if rtail.newest_ms is None else round((now_ms - rtail.newest_ms) / 1000, 1),
        }
    if hb not in tgt_topics:
        return Check("heartbeats", Status.FAIL, f"{hb} does not exist on {flow.target} after {max_age_s:.0f}s")
    if newest_ms is None:
        return Check(
            "heartbeats",
            Status.FAIL,
            f"heartbeat connector silent: no heartbeat from ({flow.source}, {flow.target}) in {hb} on {flow.target}",
        )
    age = (now_ms - newest_ms) / 1000
    info["ageSeconds"] = round(age, 1)
    if age > max_age_s:
        return Check(
            "heartbeats",
            Status.FAIL,
            f"heartbeat connector silent: newest heartbeat in {hb} is {age:.0f}s old (max {max_age_s:.0f}s)",
        )
    lat = info["latencyMs"].get(hb, {})
    lat_txt = (
        f"; latency p50={lat.get('p50')}ms p99={lat.get('p99')}ms max={lat.get('max')}ms over {lat.get('samples')}"
        if lat.get("samples")
        else ""
    )
    return Check("heartbeats", Status.PASS, f"newest heartbeat {age:.1f}s old{lat_txt}")
