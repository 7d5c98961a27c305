"""Validating flows: wait for the targets to cover the cut, then compare every topic in two tiers.

`FlowRun` is what the stage captured for a flow before waiting (its cut). `prepare_flow` waits
(bounded) for the target and snapshots it; `run_fast_path` reduces every topic of every flow to
per-partition aggregates in one Spark job (`spark.fast_path`); `validate_flow` then reads the
flow's offset syncs and checkpoints once, sends only the partitions the fast path could not
decide to the exact matching (`spark.checks`), and runs the flow-level checks
(`spark.flow_checks`). Verdicts are built in `spark.topic_checks`.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import Future
from typing import Any

from spark import alignment, catchup, checks, expired, fast_path, flow_checks, kafka_io, progress
from spark.catchup import Range
from spark.console import log
from spark.fast_path import EXACT, FAST, SideRead
from spark.flow_run import FlowLevel, FlowRun, InternalTopics
from spark.internal_topics import check_checkpoints, check_offset_syncs, read_internal_topics
from spark.report import Check, FlowReport, Status, TopicReport
from spark.topic_checks import partition_rows, record_checks


def target_ranges(run: FlowRun) -> dict[str, dict[int, Range] | None]:
    present = kafka_io.list_topics(run.tgt)
    out: dict[str, dict[int, Range] | None] = {}
    for topic in run.cut:
        remote = run.flow.topics[topic]
        out[topic] = (
            kafka_io.watermarks(run.tgt, remote, present[remote], run.target_isolation) if remote in present else None
        )
    return out


def prepare_flow(run: FlowRun, args: argparse.Namespace) -> None:
    """Wait (bounded) for the target to cover the cut, then take the target's snapshot."""
    sync_topics = kafka_io.list_topics(run.sync_cluster)
    run.caught = _wait_for_target(
        run,
        run.sync_cluster,
        run.flow.offset_syncs_topic in sync_topics,
        args.catch_up_timeout,
        args.catch_up_quiet,
    )
    run.snapshot = target_ranges(run)


def fast_reads(runs: list[FlowRun]) -> list[tuple[FlowRun, str, SideRead, SideRead]]:
    """The two sides of every topic the fast path can look at (present on both, records untransformed)."""
    out = []
    for run in runs:
        if run.transforms:
            continue
        for topic, cut in sorted(run.cut.items()):
            snapshot = run.snapshot.get(topic)
            if snapshot is None:
                continue
            remote = run.flow.topics[topic]
            target = fast_path.target_window(cut, snapshot)
            sizes = {p: hi - lo for p, (lo, hi) in cut.items()}
            source = cut
            if any(hi - lo > sizes.get(p, 0) for p, (lo, hi) in target.items()):
                # The target already holds records after the cut: read the source's next ones too.
                ends = {p: hi for p, (_, hi) in kafka_io.watermarks(run.src, topic, len(cut), run.isolation).items()}
                source = fast_path.source_window(cut, target, ends)
            out.append(
                (
                    run,
                    topic,
                    SideRead(run.src, topic, source, run.isolation, sizes),
                    SideRead(run.tgt, remote, target, run.target_isolation, sizes),
                )
            )
    return out


def run_fast_path(spark: Any, runs: list[FlowRun]) -> None:
    """Tier 1 for every topic of every flow, in one Spark job; results land in each run's `fast`."""
    plan = fast_reads(runs)
    n = sum(hi - lo for run, topic, _, _ in plan for lo, hi in run.cut[topic].values())
    t0 = time.monotonic()
    aggs = fast_path.aggregate(spark, [r for _, _, s, t in plan for r in (s, t)])
    for i, (run, topic, _, _) in enumerate(plan):
        run.fast[topic] = (aggs[2 * i], aggs[2 * i + 1])
    log(f"fast path: {len(plan)} topic(s), {n} source record(s) fingerprinted in {time.monotonic() - t0:.1f}s")


def validate_topic(
    spark: Any, run: FlowRun, topic: str, lag: dict[int, int], internal: InternalTopics, skip: set[str]
) -> TopicReport:
    flow, remote = run.flow, run.flow.topics[topic]
    rep = TopicReport(topic, remote)
    cut, snapshot = run.cut[topic], run.snapshot.get(topic)
    if snapshot is None:
        return _absent_target(rep, run, cut)
    if run.transforms:
        return _transformed(rep, run, cut, snapshot, lag)
    decisions = fast_path.decide(cut, snapshot, *run.fast.get(topic, ({}, {})))
    healthy = {p for p, d in decisions.items() if d.path == FAST}
    deferred = {p: d.reason for p, d in decisions.items() if d.path == EXACT}
    for p, (t_lo, t_hi) in snapshot.items():
        if p not in cut and t_hi > t_lo:
            deferred[p] = "partition only on the target"
    rows = {p: fast_path.fast_row(p, cut[p], snapshot[p], lag.get(p, 0)) for p in healthy}
    shift = fast_path.position_map(cut, snapshot, healthy)
    log(
        f"{flow.name}: {topic} -> {remote}: {len(healthy)} partition(s) healthy by fingerprint"
        + (f", {len(deferred)} to exact matching: {_reasons(deferred)}" if deferred else "")
    )
    if not deferred:
        _finish_topic(rep, run, topic, None, rows, shift, internal, skip)
        return rep

    x_cut = {p: r for p, r in cut.items() if p in deferred}
    x_snap = {p: r for p, r in snapshot.items() if p in deferred}
    matched, aligned = _exact_tier(spark, run, topic, (x_cut, x_snap), deferred, lag, rows)
    try:
        around = alignment.outside_pairs(spark, aligned, x_cut, x_snap)
        paired = matched if around is None else matched.unionByName(around)
        _finish_topic(rep, run, topic, paired, rows, shift, internal, skip)
    finally:
        matched.unpersist()
    return rep


def _absent_target(rep: TopicReport, run: FlowRun, cut: dict[int, Range]) -> TopicReport:
    rep.checks.append(
        Check("completeness", Status.FAIL, f"remote topic {rep.remote_topic} does not exist on {run.flow.target}")
    )
    rep.partitions = [
        {
            "partition": p,
            "path": EXACT,
            "sourceRange": list(r),
            "sourceCount": r[1] - r[0],
            "targetCount": 0,
            "lag": r[1] - r[0],
        }
        for p, r in sorted(cut.items())
    ]
    return rep


def _exact_tier(
    spark: Any,
    run: FlowRun,
    topic: str,
    ranges: tuple[dict[int, Range], dict[int, Range]],
    deferred: dict[int, str],
    lag: dict[int, int],
    rows: dict[int, dict[str, Any]],
) -> tuple[Any, dict[int, alignment.Aligned]]:
    """Tier 2 for the `deferred` partitions (why: the value), whose cut and snapshot `ranges` are,
    narrowed by alignment where it can be; their report rows land in `rows`. Returns the pairing
    (persisted: the caller unpersists it) and the aligned partitions."""
    cut, snapshot = ranges
    t0 = time.monotonic()
    aligned = _aligned(spark, run, topic, cut, snapshot)
    matched, counts = _matched(spark, run, topic, cut, snapshot, aligned)
    try:
        if aligned and alignment.has_surplus(counts, aligned):
            log(f"{run.flow.name}: {topic}: a region left a target record unpaired: matching whole partitions")
            matched.unpersist()
            aligned = {}
            matched, counts = _matched(spark, run, topic, cut, snapshot, aligned)
        alignment.add_outside(counts, aligned)
        outside = {p: (a.before, a.after) for p, a in aligned.items()}
        for row in _exact_rows(matched, counts, cut, snapshot, lag, outside):
            p = row["partition"]
            row["fastPathReason"] = deferred.get(p, "")
            if p in aligned:
                row["alignedOutsideRegion"] = aligned[p].before + aligned[p].after
            rows[p] = row
    except BaseException:
        matched.unpersist()
        raise
    log(f"{run.flow.name}: {topic}: exact matching of {len(deferred)} partition(s) in {time.monotonic() - t0:.1f}s")
    return matched, aligned


def _aligned(
    spark: Any, run: FlowRun, topic: str, cut: dict[int, Range], snapshot: dict[int, Range]
) -> dict[int, alignment.Aligned]:
    """The regions of the deferred partitions that alignment narrows (`spark.alignment`); block
    size and minimum partition size from the session (spark.mm2.validate.align*), else the defaults."""
    block = int(spark.conf.get("spark.mm2.validate.alignBlock", str(alignment.BLOCK)))
    least = int(spark.conf.get("spark.mm2.validate.alignMinRecords", str(alignment.MIN_RECORDS)))
    src_agg, tgt_agg = run.fast.get(topic, ({}, {}))
    parts = [
        p
        for p in sorted(cut)
        if p in snapshot
        and p in src_agg
        and p in tgt_agg
        and alignment.eligible(cut[p], snapshot[p], src_agg[p], tgt_agg[p], least)
    ]
    if not parts:
        return {}
    t0 = time.monotonic()
    source = SideRead(run.src, topic, {p: cut[p] for p in parts}, run.isolation)
    target = SideRead(run.tgt, run.flow.topics[topic], {p: snapshot[p] for p in parts}, run.target_isolation)
    found = alignment.locate(alignment.read_block_sums(spark, source, target, block), cut, snapshot)
    narrowed = "; ".join(
        f"p{p} source {a.source[0]}..{a.source[1]} target {a.target[0]}..{a.target[1]}"
        for p, a in sorted(found.items())[:5]
    ) + ("; ..." if len(found) > 5 else "")
    log(
        f"{run.flow.name}: {topic}: aligned {len(parts)} partition(s) in {time.monotonic() - t0:.1f}s"
        + (f", matching only the regions {narrowed}" if found else ", no region worth matching alone")
    )
    return found


def _matched(
    spark: Any,
    run: FlowRun,
    topic: str,
    cut: dict[int, Range],
    snapshot: dict[int, Range],
    aligned: dict[int, alignment.Aligned],
) -> tuple[Any, dict[int, dict[str, Any]]]:
    """The exact pairing of the deferred partitions (of their regions where `aligned`), persisted,
    and its counts per partition."""
    from spark.transforms import project

    src_ranges = {p: aligned[p].source if p in aligned else r for p, r in cut.items()}
    tgt_ranges = {p: aligned[p].target if p in aligned else r for p, r in snapshot.items()}
    src_ranges = {p: r for p, r in src_ranges.items() if r[1] > r[0]}
    tgt_ranges = {p: r for p, r in tgt_ranges.items() if r[1] > r[0]}
    size_shuffle(spark, sum(hi - lo for lo, hi in [*src_ranges.values(), *tgt_ranges.values()]))
    src = project(_read(spark, run.src, topic, src_ranges, run.isolation))
    tgt = project(_read(spark, run.tgt, run.flow.topics[topic], tgt_ranges, run.target_isolation))
    matched = checks.match_records(src, tgt)  # persisted (the pairing runs here): the caller unpersists
    return matched, {int(r["part"]): r.asDict() for r in checks.kind_counts(matched).collect()}


# Rows per initial shuffle partition of the exact matching: AQE coalesces from there, and it keeps
# each task's share bounded (at 10M records, 4 partitions ran out of a 1 GiB heap; 200 is Spark's
# default and costs 200 shuffle files per map task on a stack of a few records).
ROWS_PER_SHUFFLE_PARTITION = 100_000


def size_shuffle(spark: Any, rows: int) -> None:
    if spark.conf.get("spark.mm2.validate.fixedShuffle", "false") == "true":
        return
    n = max(4, min(200, rows // ROWS_PER_SHUFFLE_PARTITION + 1))
    spark.conf.set("spark.sql.adaptive.coalescePartitions.initialPartitionNum", str(n))
    spark.conf.set("spark.sql.shuffle.partitions", str(n))


def _read(spark: Any, cluster: Any, topic: str, ranges: dict[int, Range], isolation: str) -> Any:
    """The records of `ranges`; an empty frame when there is no partition to read (Spark needs one)."""
    from spark.transforms import KAFKA_SCHEMA

    if not ranges:
        return spark.createDataFrame([], KAFKA_SCHEMA)
    return kafka_io.spark_read(spark, cluster, topic, ranges, isolation)


def _reasons(deferred: dict[int, str]) -> str:
    return "; ".join(f"p{p} {why}" for p, why in sorted(deferred.items())[:5])


def _exact_rows(
    matched: Any,
    counts: dict[int, dict[str, Any]],
    cut: dict[int, Range],
    snapshot: dict[int, Range],
    lag: dict[int, int],
    outside: dict[int, tuple[int, int]],
) -> list[dict[str, Any]]:
    """Report rows of the partitions the exact matching decided (order, duplicates, unmatched);
    `outside`: records matched by alignment before and after each region (`spark.alignment`)."""
    caught = {p: lag.get(p, 0) == 0 for p in cut}
    parts = [checks.order_violations(matched), checks.duplicates(matched)]
    if any(c["missing"] or c["extra"] for c in counts.values()):
        parts.append(checks.explain_unmatched(matched, {p: lo for p, (lo, _) in cut.items()}, caught, outside))
    rows = partition_rows(cut, snapshot, counts, checks.summarize_findings(checks.union_all(parts)), lag)
    for row in rows:
        row.update(path=EXACT, sourceCount=row["sourceRecords"], targetCount=row["targetRecords"])
    return rows


def _finish_topic(
    rep: TopicReport,
    run: FlowRun,
    topic: str,
    matched: Any,
    rows: dict[int, dict[str, Any]],
    shift: dict[int, int],
    internal: InternalTopics,
    skip: set[str],
) -> None:
    """Record checks from all partition rows; offset syncs and checkpoints over both tiers."""
    cut, snapshot = run.cut[topic], run.snapshot[topic] or {}
    rep.partitions = [rows[p] for p in sorted(rows)]
    rep.checks += record_checks(rep.partitions, sorted(set(cut) - set(snapshot)), run.flow.exactly_once)
    n_src = sum(hi - lo for lo, hi in cut.values())
    if "offset_syncs" not in skip and internal.syncs is not None:
        check_offset_syncs(rep, run, topic, matched, internal, shift, n_src)
    if "checkpoints" not in skip and internal.ckpts is not None:
        check_checkpoints(rep, run, topic, matched, internal, shift)
    rep.checks = [c for c in rep.checks if c.name not in skip]


def _transformed(
    rep: TopicReport, run: FlowRun, cut: dict[int, Range], snapshot: dict[int, Range], lag: dict[int, int]
) -> TopicReport:
    """Records are changed by SMTs on the way: only counts and catch-up can be judged."""
    why = f"records are transformed by SMTs: {', '.join(run.transforms)}"
    rep.partitions = [
        {
            "partition": p,
            "path": "skipped",
            "sourceRange": list(cut[p]),
            "targetRange": list(snapshot[p]) if p in snapshot else None,
            "sourceCount": cut[p][1] - cut[p][0],
            "targetCount": (snapshot[p][1] - snapshot[p][0]) if p in snapshot else 0,
            "lag": lag.get(p, 0),
        }
        for p in sorted(cut)
    ]
    names = ("completeness", "partitioning", "integrity", "order", "duplicates", "unexpected_records")
    rep.checks += [Check(n, Status.SKIP, why) for n in names]
    behind = sum(lag.values())
    rep.checks.append(
        Check(
            "catch_up",
            Status.FAIL if behind else Status.PASS,
            f"{behind} record(s) before the cut not yet on the target",
        )
    )
    rep.checks += [Check(n, Status.SKIP, why) for n in ("offset_syncs", "checkpoints")]
    return rep


def validate_flow(
    spark: Any, run: FlowRun, args: argparse.Namespace, skip: set[str], flow_level: Future[FlowLevel] | None = None
) -> FlowReport:
    """Every check of one flow (after `prepare_flow` and `run_fast_path`); `flow_level`: the
    flow-level checks already under way (`flow_level_checks`), else they run here."""
    flow = run.flow
    rep = FlowReport(flow.name, flow.source, flow.target, flow.exactly_once)
    rep.isolation = {"source": run.isolation, "target": run.target_isolation}
    started = time.monotonic()
    for topic in run.absent_source:
        t = TopicReport(topic, flow.topics[topic])
        t.checks.append(Check("completeness", Status.FAIL, f"source topic {topic} does not exist on {flow.source}"))
        rep.topics.append(t)
    result = run.caught or catchup.CatchUp({}, 0.0)
    rep.catch_up = {
        "caughtUp": result.caught_up,
        "waitedSeconds": round(result.waited_s, 1),
        "lag": result.total(),
        "ended": result.ending.value,
    }
    internal = run.internal or read_internal_topics(spark, run, skip)
    rep.checks += internal.problems
    try:
        for topic in sorted(run.cut):
            rep.topics.append(validate_topic(spark, run, topic, result.lag.get(topic, {}), internal, skip))
    finally:
        internal.unpersist()
    level_checks, heartbeats = flow_level.result() if flow_level else flow_level_checks(run, args, skip, None)
    rep.checks += level_checks
    if heartbeats is not None:
        rep.heartbeats = heartbeats
    if run.sentinel is not None:
        rep.sentinel = run.sentinel.to_json()
    rep.catch_up["validationSeconds"] = round(time.monotonic() - started, 1)
    return rep


def flow_level_checks(run: FlowRun, args: argparse.Namespace, skip: set[str], sync_enabled: bool | None) -> FlowLevel:
    """Records gone before replication (the lag exporter), checkpoints emitted, group offsets,
    heartbeats: Kafka and HTTP reads only, so they run beside Spark's jobs."""
    out: list[Check] = []
    heartbeats = None
    groups: set[str] = set()
    if expired.CHECK not in skip:
        run.sentinel = expired.read_sentinel(run.lag_url, run.flow)
        out.append(expired.check(run.sentinel, run.flow.worker_group))
        log(expired.console_line(run.flow.name, run.sentinel, out[-1]))
    if "checkpoints" not in skip:
        check, groups = flow_checks.check_checkpoints_emitted(run, args.checkpoint_wait)
        out.append(check)
    if "group_offsets" not in skip:
        out.append(flow_checks.check_group_offsets(run, groups, sync_enabled, args.checkpoint_wait))
    if "heartbeats" not in skip:
        heartbeats = flow_checks.heartbeat_info(run, args.heartbeat_max_age)
        out.append(flow_checks.check_heartbeats(run, heartbeats, args.heartbeat_max_age))
    return out, heartbeats


def _wait_for_target(
    run: FlowRun, sync_cluster: Any, has_syncs: bool, timeout_s: float, quiet_s: float
) -> catchup.CatchUp:
    """Wait (bounded) until the target provably covers the cut (offset syncs, counts) or MM2 has
    provably consumed up to it and the target stopped moving (spark.catchup)."""
    flow = run.flow
    tracker = None
    if has_syncs:
        tracker = kafka_io.OffsetSyncTracker(sync_cluster, flow.offset_syncs_topic, run.cut)
    progress = _progress_tracker(run)
    log(
        f"{flow.name}: waiting up to {timeout_s:.0f}s for {flow.target} to cover the cut"
        + ("" if progress else f" (MM2's progress unreadable: no offsets topic of worker group {flow.worker_group!r})")
    )

    def syncs_now() -> dict[tuple[str, int], tuple[int, int]]:
        if tracker is None:
            return {}
        tracker.poll()
        return tracker.latest

    try:
        result = catchup.wait_for_catch_up(
            run.cut,
            lambda: target_ranges(run),
            syncs_now,
            timeout_s,
            flow.name,
            consumed=(progress.poll if progress else lambda: None),
            quiet_s=quiet_s,
        )
    finally:
        for t in (tracker, progress):
            if t is not None:
                t.close()
    log(f"{flow.name}: {_ending_line(result)} after {result.waited_s:.1f}s")
    return result


def _progress_tracker(run: FlowRun) -> progress.SourceOffsetTracker | None:
    """A reader of the flow's source connector offsets, None when they cannot be read."""
    connector = run.flow.connectors.get("source")
    if run.offset_store is None or not connector:
        return None
    cluster, topic = run.offset_store
    try:
        partitions = kafka_io.list_topics(cluster).get(topic)
    except kafka_io.KafkaAccessError:
        return None
    if not partitions:
        return None
    return progress.SourceOffsetTracker(cluster, topic, partitions, connector, run.flow.source, run.cut)


def _ending_line(result: catchup.CatchUp) -> str:
    if result.ending is catchup.Ending.CAUGHT_UP:
        return "caught up"
    if result.ending is catchup.Ending.SETTLED:
        return "MM2 has consumed the source up to the cut and the target stopped moving"
    if result.ending is catchup.Ending.QUIET:
        return f"the target stopped moving, {result.total()} record(s) short"
    return f"{result.total()} record(s) still behind"
