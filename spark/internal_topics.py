"""A flow's offset syncs and checkpoints: read once per flow, judged per topic.

Both checks of a topic depend on how its partitions were decided. On a partition the fast path
decided healthy the verdict follows from the position shift (target offset - source offset), and
that shift is known before the fast path runs: the target snapshot's first offset minus the cut's.
So `start_presumed` judges every topic of a flow as if all its partitions were healthy, in one
Spark job per check, while the fast path job runs (on a small stack these jobs cost more in fixed
overhead than in records). A topic the fast path then decides healthy throughout takes that
verdict, computed from exactly the inputs the per-topic check would use; a topic with any partition
sent to the exact matching is judged per topic from the exact pairing, as before.
"""

from __future__ import annotations

import time
from concurrent.futures import Executor
from typing import Any

from spark import checks, fast_path, kafka_io
from spark.catchup import Range
from spark.console import log
from spark.flow_run import FlowRun, InternalTopics, Presumed
from spark.report import Check, Status, TopicReport
from spark.topic_checks import checkpoint_check, offset_sync_check

SYNC_EXAMPLES = ("part", "u", "d")
CHECKPOINT_EXAMPLES = ("group", "part", "U", "D", "exact", "bound")


def read_internal_topics(spark: Any, run: FlowRun, skip: set[str]) -> InternalTopics:
    """The flow's syncs and checkpoints, lazily (the first job that needs them reads them once)."""
    from pyspark import StorageLevel

    from spark import decoders

    flow = run.flow
    out = InternalTopics()
    sync_topics = kafka_io.list_topics(run.sync_cluster)
    tgt_topics = kafka_io.list_topics(run.tgt)
    if "offset_syncs" not in skip and not run.transforms:
        if flow.offset_syncs_topic not in sync_topics:
            out.problems.append(
                Check(
                    "offset_syncs", Status.FAIL, f"{flow.offset_syncs_topic} does not exist on {run.sync_cluster.alias}"
                )
            )
        else:
            out.syncs = _read_internal(
                spark,
                run.sync_cluster,
                flow.offset_syncs_topic,
                sync_topics[flow.offset_syncs_topic],
                decoders.offset_sync_columns,
            )
    if "checkpoints" not in skip and not run.transforms and flow.checkpoints_topic in tgt_topics:
        out.ckpts = _read_internal(
            spark, run.tgt, flow.checkpoints_topic, tgt_topics[flow.checkpoints_topic], decoders.checkpoint_columns
        )
    for df in (out.syncs, out.ckpts):
        if df is not None:
            df.persist(StorageLevel.MEMORY_AND_DISK)
    return out


def start_presumed(spark: Any, run: FlowRun, internal: InternalTopics, pool: Executor) -> None:
    """Judge every topic of the flow as if healthy, in the background (`Presumed`)."""
    if internal.syncs is not None or internal.ckpts is not None:
        internal.presumed = pool.submit(_presume_healthy, spark, run, internal)


def _all_healthy_shift(run: FlowRun, topic: str) -> dict[int, int] | None:
    """The shift of every partition of the cut (None when some partition has no target twin)."""
    cut, snapshot = run.cut[topic], run.snapshot.get(topic)
    if snapshot is None or not set(cut) <= set(snapshot):
        return None
    return fast_path.position_map(cut, snapshot, set(cut))


def _presume_healthy(spark: Any, run: FlowRun, internal: InternalTopics) -> Presumed:
    from pyspark.sql import functions as F

    t0 = time.monotonic()
    out = Presumed()
    shifts = {t: s for t in sorted(run.cut) if (s := _all_healthy_shift(run, t)) is not None}
    if not shifts:
        return out
    if internal.syncs is not None:
        parts = [
            _sync_results(run, topic, None, internal.syncs, shift).withColumn("key", F.lit(topic))
            for topic, shift in shifts.items()
        ]
        out.syncs = checks.summarize_status_by(checks.union_all(parts), SYNC_EXAMPLES)
    if internal.ckpts is not None:
        parts = [
            _checkpoint_results(run, topic, None, internal.ckpts, shift).withColumn("key", F.lit(topic))
            for topic, shift in shifts.items()
        ]
        out.checkpoints = checks.summarize_status_by(checks.union_all(parts), CHECKPOINT_EXAMPLES)
    log(
        f"{run.flow.name}: offset syncs and checkpoints of {len(shifts)} topic(s) judged beside the fast path "
        f"in {time.monotonic() - t0:.1f}s"
    )
    return out


def _presumed(
    internal: InternalTopics, topic: str, matched: Any, shift: dict[int, int], run: FlowRun
) -> Presumed | None:
    """The presumed verdict inputs when they apply: every partition of the topic decided healthy."""
    if internal.presumed is None or matched is not None or set(shift) != set(run.cut[topic]):
        return None
    return internal.presumed.result()


def _sync_results(run: FlowRun, topic: str, matched: Any, syncs: Any, shift: dict[int, int]) -> Any:
    from pyspark.sql import functions as F

    return checks.offset_sync_results(
        matched, syncs.filter(F.col("topic") == topic), run.cut[topic], run.snapshot[topic] or {}, shift
    )


def _checkpoint_results(run: FlowRun, topic: str, matched: Any, ckpts: Any, shift: dict[int, int]) -> Any:
    from pyspark.sql import functions as F

    remote = run.flow.topics[topic]
    snapshot: dict[int, Range] = run.snapshot[topic] or {}
    log_end = {
        p: hi for p, (_, hi) in kafka_io.watermarks(run.tgt, remote, len(snapshot), run.target_isolation).items()
    }
    return checks.checkpoint_results(
        matched,
        ckpts.filter(F.col("topic") == remote),
        run.cut[topic],
        {p: hi for p, (_, hi) in snapshot.items()},
        log_end,
        shift,
    )


def check_offset_syncs(
    rep: TopicReport,
    run: FlowRun,
    topic: str,
    matched: Any,
    internal: InternalTopics,
    shift: dict[int, int],
    n_src: int,
) -> None:
    presumed = _presumed(internal, topic, matched, shift, run)
    if presumed is not None and topic in presumed.syncs:
        st = presumed.syncs[topic]
    elif presumed is not None:
        st = {}  # the topic has no sync: the job had no row for it
    else:
        t0 = time.monotonic()
        st = checks.summarize_status(_sync_results(run, topic, matched, internal.syncs, shift), SYNC_EXAMPLES)
        _log_timing(run, topic, "offset syncs", t0)
    rep.offset_syncs = {k: {"count": v.count, "examples": v.examples} for k, v in st.items()}
    rep.checks.append(offset_sync_check(st, n_src))


def check_checkpoints(
    rep: TopicReport, run: FlowRun, topic: str, matched: Any, internal: InternalTopics, shift: dict[int, int]
) -> None:
    presumed = _presumed(internal, topic, matched, shift, run)
    if presumed is not None:
        st = presumed.checkpoints.get(topic, {})  # no row: no checkpoint of this topic
    else:
        t0 = time.monotonic()
        res = _checkpoint_results(run, topic, matched, internal.ckpts, shift)
        st = checks.summarize_status(res, CHECKPOINT_EXAMPLES)
        _log_timing(run, topic, "checkpoints", t0)
    rep.checkpoints = {k: {"count": v.count, "examples": v.examples} for k, v in st.items()}
    rep.checks.append(checkpoint_check(st))


def _log_timing(run: FlowRun, topic: str, what: str, t0: float) -> None:
    log(f"{run.flow.name}: {topic}: {what} in {time.monotonic() - t0:.1f}s")


def _read_internal(spark: Any, cluster: Any, topic: str, partitions: int, decoder: Any) -> Any:
    from pyspark.sql import functions as F

    ranges = kafka_io.watermarks(cluster, topic, partitions)
    if not any(hi > lo for lo, hi in ranges.values()):
        return None
    raw = kafka_io.spark_read(spark, cluster, topic, ranges)
    cols = decoder(F.col("key"), F.col("value"))
    return raw.select(*[c.alias(k) for k, c in cols.items()], F.col("offset").alias("ckpt_offset")).filter("valid")
