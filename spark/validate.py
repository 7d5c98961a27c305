"""Post-deploy validation: prove every enabled flow of a stack replicated correctly.

    bin/validate --stack dev                       # after `pulumi up`
    bin/validate --outputs outputs.json --master spark://host:7077 --conf spark.executor.memory=4g
    python -m spark.validate --outputs outputs.json
    spark-submit --jars "$(python -m spark.jars)" spark/validate.py --outputs outputs.json

Reads the stack outputs (docs/architecture.md), captures a consistent cut of every replicated
source topic, waits (bounded) for the targets to cover it, then checks with Spark, per flow and
topic: completeness, partitioning, integrity, order, duplicates, unexpected records, catch-up,
offset syncs and checkpoints; per flow: group offsets and heartbeats; across the stack: loops.
Writes a JSON report and prints a table. Exit status: 0 all checks pass, 1 some check failed
(named at the end), 2 the run itself could not proceed (bad outputs, unreachable cluster, jars).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    # Run as a file (`spark-submit spark/validate.py`): import the package from the repository
    # root, and keep spark/ itself off the path so its modules cannot shadow anything.
    _here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _here]
    sys.path.insert(0, str(_here.parent))

from components.outputs.contract import OutputsError
from spark import catchup, checks, kafka_io, loops
from spark.catchup import Range
from spark.jars import JarResolutionError, KafkaSourceJars, ensure_kafka_source_jars
from spark.outputs import FlowSpec, StackOutputs, load_stack_outputs, read_outputs_file
from spark.report import Check, FlowReport, Report, Status, TopicReport, render_table

ROOT = Path(__file__).resolve().parents[1]
KAFKA_SOURCE_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
CHECK_NAMES = (
    "completeness",
    "partitioning",
    "integrity",
    "order",
    "duplicates",
    "unexpected_records",
    "catch_up",
    "offset_syncs",
    "checkpoints",
    "group_offsets",
    "heartbeats",
    "loops",
)


def log(msg: str) -> None:
    print(f"[validate {datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="validate", description=__doc__.split("\n\n")[0] if __doc__ else None)
    src = p.add_mutually_exclusive_group()
    src.add_argument("--outputs", help="stack outputs JSON file (`pulumi stack output --json --show-secrets`)")
    src.add_argument("--stack", help="read the outputs of this stack with bin/pulumi (default: the selected stack)")
    p.add_argument("--report", help="JSON report path (default: spark/reports/<UTC timestamp>.json)")
    p.add_argument("--master", default=None, help="Spark master URL (default: local[*], or what spark-submit set)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark setting, repeatable")
    p.add_argument("--flow", action="append", default=[], help="validate only this flow (repeatable)")
    p.add_argument("--skip", action="append", default=[], choices=CHECK_NAMES, help="do not run this check")
    p.add_argument("--catch-up-timeout", type=float, default=120.0, help="seconds to wait for targets (default 120)")
    p.add_argument("--heartbeat-max-age", type=float, default=60.0, help="newest heartbeat must be younger (s)")
    p.add_argument("--latency-window", type=float, default=10.0, help="seconds to sample heartbeat latency (0: off)")
    p.add_argument("--log-level", default="ERROR", help="Spark log level (default ERROR)")
    return p.parse_args(argv)


# --- Spark session --------------------------------------------------------------------------------


def build_session(args: argparse.Namespace, jars: KafkaSourceJars) -> Any:
    from pyspark.sql import SparkSession

    confs: dict[str, str] = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--conf expects KEY=VALUE, got {item!r}")
        confs[key.strip()] = value
    builder = SparkSession.builder.appName("mm2-validate")
    already_submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # started by spark-submit
    master = args.master or (None if already_submitted else "local[*]")
    if master:
        builder = builder.master(master)
    jar_list = [j for j in confs.pop("spark.jars", "").split(",") if j] + [str(j) for j in jars.jars]
    builder = builder.config("spark.jars", ",".join(jar_list))
    if (master or "").startswith("local"):
        # Shuffle partitions stay at Spark's default (200) so that AQE sizes them (~64 MB each):
        # pinning a few (it was 2 x cores) made every task's share grow with the record count, and
        # at 10M records per topic the matching stage ran out of the default 1g heap
        # (bench/results/validation-20261122.md). AQE coalesces small inputs to a few partitions.
        # On one machine nothing needs to reach the driver from outside: bind it and its UI to
        # loopback (by default Spark picks the first non-loopback interface). SPARK_LOCAL_IP is
        # read when PySpark launches the JVM, which getOrCreate below does.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
        builder = builder.config("spark.ui.enabled", "false")
    builder = builder.config("spark.sql.session.timeZone", "UTC")
    for key, value in confs.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(args.log_level)
    jvm: Any = spark.sparkContext._jvm  # py4j gateway view, untyped
    try:
        jvm.java.lang.Class.forName(
            KAFKA_SOURCE_CLASS, False, jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
        )
    except Exception as exc:
        raise JarResolutionError(
            "Spark's Kafka source is not on the driver's classpath. Under spark-submit pass the jars "
            f'yourself: spark-submit --jars "$(python -m spark.jars)" spark/validate.py ... ({exc.__class__.__name__})'
        ) from exc
    return spark


# --- per flow -------------------------------------------------------------------------------------


class FlowRun:
    """What the stage captured for one flow before waiting: its cut and the topics present."""

    def __init__(self, flow: FlowSpec, outputs: StackOutputs, topics: dict[str, dict[str, int]]) -> None:
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


def _target_ranges(run: FlowRun) -> dict[str, dict[int, Range] | None]:
    present = kafka_io.list_topics(run.tgt)
    out: dict[str, dict[int, Range] | None] = {}
    for topic in run.cut:
        remote = run.flow.topics[topic]
        out[topic] = kafka_io.watermarks(run.tgt, remote, present[remote], run.isolation) if remote in present else None
    return out


_COUNTS = ("missing", "moved", "modified", "duplicates", "outOfOrder", "unexpected", "lag")


def _count_check(name: str, n: int, what: str, examples: list[str], fail: bool = True) -> Check:
    if n == 0:
        return Check(name, Status.PASS, f"no {what}")
    ex = f" (e.g. {', '.join(examples[:3])})" if examples else ""
    return Check(name, Status.FAIL if fail else Status.WARN, f"{n} {what}{ex}")


def _example_refs(partitions: list[dict[str, Any]], finding: str) -> list[str]:
    refs = []
    for p in partitions:
        for e in p.get("examples", {}).get(finding, []):
            where = f"p{p['partition']}"
            if "sourceOffset" in e:
                where += f" src@{e['sourceOffset']}"
            if "targetOffset" in e:
                where += f" tgt@{e['targetOffset']}"
            if e.get("detail"):
                where += f" [{', '.join(e['detail'])}]"
            refs.append(where)
    return refs


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
    from pyspark.sql import functions as F

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

        def n(p: int, finding: str) -> int:
            s = summary.get(p, {}).get(finding)
            return s.count if s else 0

        for p in sorted(set(cut) | set(snapshot)):
            c = counts.get(p, {})
            rep.partitions.append(
                {
                    "partition": p,
                    "sourceRange": list(cut[p]) if p in cut else None,
                    "targetRange": list(snapshot[p]) if p in snapshot else None,
                    "sourceRecords": c.get("source_records", 0),
                    "targetRecords": c.get("target_records", 0),
                    "matched": c.get("matched", 0),
                    "missing": n(p, "missing"),
                    "moved": n(p, "moved"),
                    "modified": n(p, "modified"),
                    "duplicates": n(p, "duplicate"),
                    "outOfOrder": n(p, "out_of_order"),
                    "unexpected": n(p, "unexpected"),
                    "notReplicated": n(p, "not_replicated"),
                    "beyondCut": n(p, "beyond_cut"),
                    "prefix": n(p, "prefix"),
                    "lag": max(lag.get(p, 0), n(p, "not_replicated")),
                    "examples": {k: v.examples for k, v in summary.get(p, {}).items()},
                }
            )
        total = {k: sum(int(p[k]) for p in rep.partitions) for k in _COUNTS}
        missing_parts = sorted(set(cut) - set(snapshot))
        comp = _count_check(
            "completeness",
            total.get("missing", 0),
            "source record(s) missing on the target",
            _example_refs(rep.partitions, "missing"),
        )
        if missing_parts:
            comp = Check("completeness", Status.FAIL, f"target lacks partition(s) {missing_parts}; " + comp.detail)
        rep.checks += [
            comp,
            _count_check(
                "partitioning",
                total.get("moved", 0),
                "record(s) in another partition than on the source",
                _example_refs(rep.partitions, "moved"),
            ),
            _count_check(
                "integrity",
                total.get("modified", 0),
                "record(s) with different key/value/headers/timestamp",
                _example_refs(rep.partitions, "modified"),
            ),
            _count_check(
                "order",
                total.get("outOfOrder", 0),
                "record(s) out of source order",
                _example_refs(rep.partitions, "out_of_order"),
            ),
            _count_check(
                "duplicates",
                total.get("duplicates", 0),
                "duplicate(s)"
                + (" (exactly-once: none allowed)" if flow.exactly_once else " (at-least-once: allowed)"),
                _example_refs(rep.partitions, "duplicate"),
                fail=flow.exactly_once,
            ),
            _count_check(
                "unexpected_records",
                total.get("unexpected", 0),
                "target record(s) that match no source record",
                _example_refs(rep.partitions, "unexpected"),
            ),
            _count_check(
                "catch_up",
                total.get("lag", 0),
                "record(s) before the cut not yet on the target",
                _example_refs(rep.partitions, "not_replicated"),
            ),
        ]

        if "offset_syncs" not in skip and syncs is not None:
            res = checks.offset_sync_results(matched, syncs.filter(F.col("topic") == topic), cut, snapshot)
            t0 = time.monotonic()
            st = checks.summarize_status(res, ("part", "u", "d"))
            log(f"{flow.name}: {topic}: offset syncs in {time.monotonic() - t0:.1f}s")
            rep.offset_syncs = {k: {"count": v.count, "examples": v.examples} for k, v in st.items()}
            bad = sum(st[k].count for k in ("mismatch", "target_absent") if k in st)
            ok = st["ok"].count if "ok" in st else 0
            if bad:
                ex = [
                    f"p{e['part']} src@{e['u']}->tgt@{e['d']} {k}"
                    for k in ("mismatch", "target_absent")
                    if k in st
                    for e in st[k].examples
                ]
                rep.checks.append(
                    Check(
                        "offset_syncs",
                        Status.FAIL,
                        f"{bad} of {bad + ok} offset sync(s) point at a different record (e.g. {', '.join(ex[:3])})",
                    )
                )
            elif ok:
                rep.checks.append(
                    Check("offset_syncs", Status.PASS, f"{ok} offset sync(s): source record == target record")
                )
            elif n_src:
                rep.checks.append(
                    Check("offset_syncs", Status.WARN, "no offset sync inside the validated range to verify")
                )
            else:
                rep.checks.append(Check("offset_syncs", Status.PASS, "empty topic, nothing to verify"))
        if "checkpoints" not in skip and ckpts is not None:
            mine = ckpts.filter(F.col("topic") == remote)
            log_end = {
                p: hi for p, (_, hi) in kafka_io.watermarks(run.tgt, remote, len(snapshot), run.isolation).items()
            }
            res = checks.checkpoint_results(
                matched,
                mine,
                {p: hi for p, (_, hi) in cut.items()},
                {p: hi for p, (_, hi) in snapshot.items()},
                log_end,
            )
            t0 = time.monotonic()
            st = checks.summarize_status(res, ("group", "part", "U", "D", "exact", "bound"))
            log(f"{flow.name}: {topic}: checkpoints in {time.monotonic() - t0:.1f}s")
            rep.checkpoints = {k: {"count": v.count, "examples": v.examples} for k, v in st.items()}
            bad_kinds = ("ahead", "beyond_log_end", "regressed", "no_target_partition")
            bad = sum(st[k].count for k in bad_kinds if k in st)
            ok = st["ok"].count if "ok" in st else 0
            if bad:
                ex = [
                    f"{k}: group {e['group']} p{e['part']} upstream {e['U']} -> downstream {e['D']} "
                    f"(bound {e['bound']})"
                    for k in bad_kinds
                    if k in st
                    for e in st[k].examples
                ]
                rep.checks.append(
                    Check("checkpoints", Status.FAIL, f"{bad} of {bad + ok} checkpoint(s) unsafe: {'; '.join(ex[:3])}")
                )
            elif ok:
                rep.checks.append(
                    Check("checkpoints", Status.PASS, f"{ok} checkpoint(s) never ahead, within the log end, monotonic")
                )
            else:
                rep.checks.append(
                    Check(
                        "checkpoints",
                        Status.SKIP,
                        "no checkpoints for this topic (no consumer group offsets on the source)",
                    )
                )
    finally:
        matched.unpersist()
    rep.checks = [c for c in rep.checks if c.name not in skip]
    return rep


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
    tracker = None
    if flow.offset_syncs_topic in sync_topics:
        tracker = kafka_io.OffsetSyncTracker(sync_cluster, flow.offset_syncs_topic, run.cut)
    log(f"{flow.name}: waiting up to {args.catch_up_timeout:.0f}s for {flow.target} to cover the cut")

    def syncs_now() -> dict[tuple[str, int], tuple[int, int]]:
        if tracker is None:
            return {}
        tracker.poll()
        return tracker.latest

    try:
        result = catchup.wait_for_catch_up(
            run.cut, lambda: _target_ranges(run), syncs_now, args.catch_up_timeout, flow.name
        )
    finally:
        if tracker is not None:
            tracker.close()
    log(
        f"{flow.name}: "
        + ("caught up" if result.caught_up else f"{result.total()} record(s) still behind")
        + f" after {result.waited_s:.1f}s"
    )
    rep.catch_up = {"caughtUp": result.caught_up, "waitedSeconds": round(result.waited_s, 1), "lag": result.total()}
    snapshot = _target_ranges(run)

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


def check_loops(outputs: StackOutputs, topics: dict[str, dict[str, int]]) -> tuple[Check, list[dict[str, str]]]:
    found = loops.illegal_topics({a: list(t) for a, t in topics.items()}, outputs.flows)
    rows = [{"cluster": f.cluster, "topic": f.topic, "reason": f.reason} for f in found]
    if found:
        return Check(
            "loops",
            Status.FAIL,
            f"{len(found)} topic(s) the topology cannot produce: "
            + "; ".join(f"{f.cluster}/{f.topic}" for f in found[:5]),
        ), rows
    return Check("loops", Status.PASS, f"no stray remote topics on {len(topics)} cluster(s)"), rows


# --- entry point ----------------------------------------------------------------------------------


def run(args: argparse.Namespace, spark: Any = None) -> int:
    """One validation; `spark`: an existing session to use (tests share one), else one is built."""
    try:
        outputs = read_outputs_file(args.outputs) if args.outputs else load_stack_outputs(args.stack or "")
    except OutputsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    flows = [f for f in outputs.flows if not args.flow or f.name in args.flow]
    if args.flow and len(flows) != len(args.flow):
        print(
            f"error: unknown flow(s) {sorted(set(args.flow) - {f.name for f in flows})}; "
            f"the stack has {[f.name for f in outputs.flows]}",
            file=sys.stderr,
        )
        return 2
    skip = set(args.skip)
    for alias, c in outputs.clusters.items():
        log(f"cluster {alias}: {c.redacted()}")
    try:
        # The cut comes first, before any Spark start-up, so it is as close to "now" as possible.
        topics = {alias: kafka_io.list_topics(c) for alias, c in outputs.clusters.items()}
        runs = [FlowRun(f, outputs, topics) for f in flows]
    except kafka_io.KafkaAccessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    log(
        "cut captured: "
        + ", ".join(
            f"{r.flow.name} {t}={sum(hi for _, hi in parts.values())}" for r in runs for t, parts in r.cut.items()
        )
    )

    pool = ThreadPoolExecutor(max_workers=max(1, len(runs)))
    if "heartbeats" not in skip:
        for r in runs:
            hb_topics = [r.flow.heartbeats_topic, r.flow.replicated_heartbeats_topic]
            r.latency = pool.submit(kafka_io.heartbeat_latencies, r.tgt, hb_topics, args.latency_window)

    started = datetime.now(timezone.utc)
    own_session = spark is None
    try:
        jars = ensure_kafka_source_jars()
        if own_session:
            spark = build_session(args, jars)
    except JarResolutionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    report = Report(
        meta={
            "generatedAt": started.isoformat(timespec="seconds"),
            "outputs": args.outputs or f"stack {args.stack or '(selected)'}",
            "master": spark.sparkContext.master,
            "pyspark": spark.version,
            "kafkaSource": jars.kafka_source_version,
            "kafkaSourceExact": jars.exact,
            "catchUpTimeoutSeconds": args.catch_up_timeout,
            "skipped": sorted(skip),
        }
    )
    try:
        for r in runs:
            log(f"flow {r.flow.name}: {len(r.cut)} topic(s)")
            report.flows.append(validate_flow(spark, r, args, skip))
        if "loops" not in skip:
            check, rows = check_loops(outputs, {a: kafka_io.list_topics(c) for a, c in outputs.clusters.items()})
            report.checks.append(check)
            report.loops = rows
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        if own_session:
            spark.stop()
    report.meta["seconds"] = round((datetime.now(timezone.utc) - started).total_seconds(), 1)

    path = (
        Path(args.report) if args.report else ROOT / "spark" / "reports" / f"{started.strftime('%Y%m%dT%H%M%SZ')}.json"
    )
    report.write(path)
    print(render_table(report))
    print(f"report: {path}")
    return 0 if report.passed else 1


def main(argv: list[str] | None = None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
