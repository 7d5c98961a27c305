"""Validating one flow: wait for the target to cover the cut, then compare every topic with Spark.

`FlowRun` is what the stage captured for a flow before waiting (its cut). `validate_flow` waits
(bounded) for the target, reads the flow's offset syncs and checkpoints once, compares each
topic (`validate_topic`), and checks the flow's group offsets and heartbeats. The verdicts
themselves are built in `spark.topic_checks`; the Spark computations live in `spark.checks`.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import Future
from datetime import datetime
from typing import Any

from components.outputs.contract import FlowExport
from spark import catchup, checks, kafka_io
from spark.catchup import Range
from spark.outputs import ValidationScope
from spark.report import Check, FlowReport, Status, TopicReport
from spark.topic_checks import checkpoint_check, offset_sync_check, partition_rows, record_checks


def log(msg: str) -> None:
    print(f"[validate {datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class FlowRun:
    """What the stage captured for one flow before waiting: its cut and the topics present."""

    def __init__(self, flow: FlowExport, outputs: ValidationScope, topics: dict[str, dict[str, int]]) -> None:
        self.flow = flow
        self.src = outputs.clusters[flow.source]
        self.tgt = outputs.clusters[flow.target]
        self.isolation = "read_committed" if flow.exactly_once else "read_uncommitted"
        self.src_topics = topics[flow.source]
        self.cut: dict[str, dict[int, Range]] = {}
        self.absent_source: list[str] = []
        for topic in sorted(flow.topics):
            if topic not in self.src_topics:
                self.absent_source.append(topic)
                continue
            self.cut[topic] = kafka_io.watermarks(self.src, topic, self.src_topics[topic], self.isolation)
        self.latency: Future[dict[str, list[int]]] | None = None


def target_ranges(run: FlowRun) -> dict[str, dict[int, Range] | None]:
    present = kafka_io.list_topics(run.tgt)
    out: dict[str, dict[int, Range] | None] = {}
    for topic in run.cut:
        remote = run.flow.topics[topic]
        out[topic] = kafka_io.watermarks(run.tgt, remote, present[remote], run.isolation) if remote in present else None
    return out


def validate_topic(
    spark: Any,
    run: FlowRun,
    topic: str,
    snapshot: dict[int, Range] | None,
    lag: dict[int, int],
    syncs: Any,
    ckpts: Any,
    skip: set[str],
) -> TopicReport:
    from pyspark import StorageLevel

    from spark.transforms import project

    flow, remote = run.flow, run.flow.topics[topic]
    rep = TopicReport(topic, remote)
    cut = run.cut[topic]
    if snapshot is None:
        rep.checks.append(Check("completeness", Status.FAIL, f"remote topic {remote} does not exist on {flow.target}"))
        rep.partitions = [{"partition": p, "sourceRange": list(r), "lag": r[1] - r[0]} for p, r in sorted(cut.items())]
        return rep
    n_src, n_tgt = sum(hi - lo for lo, hi in cut.values()), sum(hi - lo for lo, hi in snapshot.values())
    log(
        f"{flow.name}: {topic} -> {remote}: comparing {n_src} source and {n_tgt} target offsets "
        f"over {len(cut)} partition(s)"
    )
    src = project(kafka_io.spark_read(spark, run.src, topic, cut, run.isolation))
    tgt = project(kafka_io.spark_read(spark, run.tgt, remote, snapshot, run.isolation))
    matched = checks.match_records(src, tgt).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        t0 = time.monotonic()
        counts = {int(r["part"]): r.asDict() for r in checks.kind_counts(matched).collect()}
        log(f"{flow.name}: {topic}: matched records in {time.monotonic() - t0:.1f}s")
        caught = {p: lag.get(p, 0) == 0 for p in cut}
        parts = [checks.order_violations(matched), checks.duplicates(matched)]
        if any(c["missing"] or c["extra"] for c in counts.values()):
            parts.append(checks.explain_unmatched(matched, {p: lo for p, (lo, _) in cut.items()}, caught))
        found = parts[0]
        for df in parts[1:]:
            found = found.unionByName(df)
        t0 = time.monotonic()
        summary = checks.summarize_findings(found)
        log(f"{flow.name}: {topic}: order, duplicates and unmatched records in {time.monotonic() - t0:.1f}s")
        rep.partitions = partition_rows(cut, snapshot, counts, summary, lag)
        rep.checks += record_checks(rep.partitions, sorted(set(cut) - set(snapshot)), flow.exactly_once)
        if "offset_syncs" not in skip and syncs is not None:
            _check_offset_syncs(rep, run, topic, matched, syncs, snapshot, n_src)
        if "checkpoints" not in skip and ckpts is not None:
            _check_checkpoints(rep, run, topic, matched, ckpts, snapshot)
    finally:
        matched.unpersist()
    rep.checks = [c for c in rep.checks if c.name not in skip]
    return rep


def _check_offset_syncs(
    rep: TopicReport, run: FlowRun, topic: str, matched: Any, syncs: Any, snapshot: dict[int, Range], n_src: int
) -> None:
    from pyspark.sql import functions as F

    res = checks.offset_sync_results(matched, syncs.filter(F.col("topic") == topic), run.cut[topic], snapshot)
    t0 = time.monotonic()
    st = checks.summarize_status(res, ("part", "u", "d"))
    log(f"{run.flow.name}: {topic}: offset syncs in {time.monotonic() - t0:.1f}s")
    rep.offset_syncs = {k: {"count": v.count, "examples": v.examples} for k, v in st.items()}
    rep.checks.append(offset_sync_check(st, n_src))


def _check_checkpoints(
    rep: TopicReport, run: FlowRun, topic: str, matched: Any, ckpts: Any, snapshot: dict[int, Range]
) -> None:
    from pyspark.sql import functions as F

    remote = run.flow.topics[topic]
    mine = ckpts.filter(F.col("topic") == remote)
    log_end = {p: hi for p, (_, hi) in kafka_io.watermarks(run.tgt, remote, len(snapshot), run.isolation).items()}
    res = checks.checkpoint_results(
        matched,
        mine,
        {p: hi for p, (_, hi) in run.cut[topic].items()},
        {p: hi for p, (_, hi) in snapshot.items()},
        log_end,
    )
    t0 = time.monotonic()
    st = checks.summarize_status(res, ("group", "part", "U", "D", "exact", "bound"))
    log(f"{run.flow.name}: {topic}: checkpoints in {time.monotonic() - t0:.1f}s")
    rep.checkpoints = {k: {"count": v.count, "examples": v.examples} for k, v in st.items()}
    rep.checks.append(checkpoint_check(st))


def _read_internal(spark: Any, cluster: Any, topic: str, partitions: int, decoder: Any) -> Any:
    from pyspark.sql import functions as F

    ranges = kafka_io.watermarks(cluster, topic, partitions)
    if not any(hi > lo for lo, hi in ranges.values()):
        return None
    raw = kafka_io.spark_read(spark, cluster, topic, ranges)
    cols = decoder(F.col("key"), F.col("value"))
    return raw.select(*[c.alias(k) for k, c in cols.items()], F.col("offset").alias("ckpt_offset")).filter("valid")


def validate_flow(spark: Any, run: FlowRun, args: argparse.Namespace, skip: set[str]) -> FlowReport:
    from pyspark import StorageLevel

    from spark import decoders

    flow = run.flow
    rep = FlowReport(flow.name, flow.source, flow.target, flow.exactly_once)
    started = time.monotonic()
    for topic in run.absent_source:
        t = TopicReport(topic, flow.topics[topic])
        t.checks.append(Check("completeness", Status.FAIL, f"source topic {topic} does not exist on {flow.source}"))
        rep.topics.append(t)

    # Offset syncs live on the source by default, on the target with location=target.
    sync_cluster = run.src if flow.offset_syncs_cluster == flow.source else run.tgt
    sync_topics = kafka_io.list_topics(sync_cluster)
    result = _wait_for_target(run, sync_cluster, flow.offset_syncs_topic in sync_topics, args.catch_up_timeout)
    rep.catch_up = {"caughtUp": result.caught_up, "waitedSeconds": round(result.waited_s, 1), "lag": result.total()}
    snapshot = target_ranges(run)

    tgt_topics = kafka_io.list_topics(run.tgt)
    syncs = ckpts = None
    if "offset_syncs" not in skip:
        if flow.offset_syncs_topic not in sync_topics:
            rep.checks.append(
                Check("offset_syncs", Status.FAIL, f"{flow.offset_syncs_topic} does not exist on {sync_cluster.alias}")
            )
        else:
            syncs = _read_internal(
                spark,
                sync_cluster,
                flow.offset_syncs_topic,
                sync_topics[flow.offset_syncs_topic],
                decoders.offset_sync_columns,
            )
    if "checkpoints" not in skip:
        if flow.checkpoints_topic not in tgt_topics:
            rep.checks.append(
                Check(
                    "checkpoints",
                    Status.WARN,
                    f"{flow.checkpoints_topic} does not exist on {flow.target} (no checkpoints emitted yet)",
                )
            )
        else:
            ckpts = _read_internal(
                spark, run.tgt, flow.checkpoints_topic, tgt_topics[flow.checkpoints_topic], decoders.checkpoint_columns
            )
    for df in (syncs, ckpts):
        if df is not None:
            df.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        for topic in sorted(run.cut):
            rep.topics.append(
                validate_topic(spark, run, topic, snapshot.get(topic), result.lag.get(topic, {}), syncs, ckpts, skip)
            )
    finally:
        for df in (syncs, ckpts):
            if df is not None:
                df.unpersist()

    if "group_offsets" not in skip:
        rep.checks.append(check_group_offsets(run))
    if "heartbeats" not in skip:
        rep.checks.append(check_heartbeats(run, rep, args, tgt_topics))
    rep.catch_up["validationSeconds"] = round(time.monotonic() - started, 1)
    return rep


def _wait_for_target(run: FlowRun, sync_cluster: Any, has_syncs: bool, timeout_s: float) -> catchup.CatchUp:
    """Wait (bounded) until the target provably covers the cut, following the offset syncs."""
    flow = run.flow
    tracker = None
    if has_syncs:
        tracker = kafka_io.OffsetSyncTracker(sync_cluster, flow.offset_syncs_topic, run.cut)
    log(f"{flow.name}: waiting up to {timeout_s:.0f}s for {flow.target} to cover the cut")

    def syncs_now() -> dict[tuple[str, int], tuple[int, int]]:
        if tracker is None:
            return {}
        tracker.poll()
        return tracker.latest

    try:
        result = catchup.wait_for_catch_up(run.cut, lambda: target_ranges(run), syncs_now, timeout_s, flow.name)
    finally:
        if tracker is not None:
            tracker.close()
    log(
        f"{flow.name}: "
        + ("caught up" if result.caught_up else f"{result.total()} record(s) still behind")
        + f" after {result.waited_s:.1f}s"
    )
    return result


def check_group_offsets(run: FlowRun) -> Check:
    remotes = [run.flow.topics[t] for t in run.cut]
    committed = kafka_io.committed_group_offsets(run.tgt, remotes)
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
    groups = len({g.group for g in committed})
    return Check(
        "group_offsets", Status.PASS, f"{len(committed)} committed offset(s) of {groups} group(s) within the log end"
    )


def check_heartbeats(run: FlowRun, rep: FlowReport, args: argparse.Namespace, tgt_topics: dict[str, int]) -> Check:
    """Heartbeats on the target; with reverseHeartbeats also those the target side emits into the source."""
    forward = _check_forward_heartbeats(run, rep, args, tgt_topics)
    if not run.flow.reverse_heartbeats_connector or forward.status is Status.FAIL:
        return forward
    reverse = check_reverse_heartbeats(run, rep, args)
    if reverse.status is Status.FAIL:
        return reverse
    return Check("heartbeats", forward.status, f"{forward.detail}; {reverse.detail}")


def _check_forward_heartbeats(
    run: FlowRun, rep: FlowReport, args: argparse.Namespace, tgt_topics: dict[str, int]
) -> Check:
    flow = run.flow
    hb = flow.heartbeats_topic
    info: dict[str, Any] = {"topic": hb, "maxAgeSeconds": args.heartbeat_max_age}
    latencies = run.latency.result() if run.latency is not None else {}
    info["latencyMs"] = {
        t: {
            **kafka_io.percentiles(v),
            "measures": (
                "emission on the source cluster -> visible on the target (MM2 data path)"
                if t == flow.replicated_heartbeats_topic
                else "heartbeat connector emission -> visible on the target"
            ),
        }
        for t, v in latencies.items()
    }
    rep.heartbeats = info
    if hb not in tgt_topics:
        return Check("heartbeats", Status.FAIL, f"{hb} does not exist on {flow.target}")
    tail = kafka_io.heartbeat_tail(run.tgt, hb, flow.source, flow.target)
    now_ms = int(time.time() * 1000)  # after the read: the newest heartbeat may be younger than the call
    if flow.replicated_heartbeats_topic in tgt_topics:
        rtail = kafka_io.heartbeat_tail(run.tgt, flow.replicated_heartbeats_topic, None, None)
        info["replicated"] = {
            "topic": flow.replicated_heartbeats_topic,
            "ageSeconds": None if rtail.newest_ms is None else round((now_ms - rtail.newest_ms) / 1000, 1),
        }
    if tail.newest_ms is None:
        return Check(
            "heartbeats", Status.FAIL, f"no heartbeat from ({flow.source}, {flow.target}) in {hb} on {flow.target}"
        )
    age = (now_ms - tail.newest_ms) / 1000
    info["ageSeconds"] = round(age, 1)
    lat = info["latencyMs"].get(hb, {})
    lat_txt = (
        f"; latency p50={lat.get('p50')}ms p99={lat.get('p99')}ms max={lat.get('max')}ms over {lat.get('samples')}"
        if lat.get("samples")
        else ""
    )
    if age > args.heartbeat_max_age:
        return Check(
            "heartbeats", Status.FAIL, f"newest heartbeat in {hb} is {age:.0f}s old (max {args.heartbeat_max_age:.0f}s)"
        )
    return Check("heartbeats", Status.PASS, f"newest heartbeat {age:.1f}s old{lat_txt}")


def check_reverse_heartbeats(run: FlowRun, rep: FlowReport, args: argparse.Namespace) -> Check:
    """`reverseHeartbeats`: heartbeats keyed (target, source) in `heartbeats` on the source, fresh."""
    flow = run.flow
    hb = flow.heartbeats_topic
    info: dict[str, Any] = {"topic": hb, "cluster": flow.source, "connector": flow.reverse_heartbeats_connector}
    rep.heartbeats["reverse"] = info
    if hb not in run.src_topics:
        return Check("heartbeats", Status.FAIL, f"reverse heartbeats: {hb} does not exist on {flow.source}")
    tail = kafka_io.heartbeat_tail(run.src, hb, flow.target, flow.source)
    if tail.newest_ms is None:
        return Check(
            "heartbeats",
            Status.FAIL,
            f"reverse heartbeats: none from ({flow.target}, {flow.source}) in {hb} on {flow.source}",
        )
    age = (int(time.time() * 1000) - tail.newest_ms) / 1000
    info["ageSeconds"] = round(age, 1)
    if age > args.heartbeat_max_age:
        return Check(
            "heartbeats",
            Status.FAIL,
            f"reverse heartbeats: newest in {hb} on {flow.source} is {age:.0f}s old"
            f" (max {args.heartbeat_max_age:.0f}s)",
        )
    return Check("heartbeats", Status.PASS, f"reverse heartbeat on {flow.source} {age:.1f}s old")
