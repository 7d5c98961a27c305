"""Post-deploy validation: prove every enabled flow of a stack replicated correctly.

    bin/validate --stack dev                       # after `pulumi up`
    bin/validate --outputs outputs.json --master spark://host:7077 --conf spark.executor.memory=4g
    python -m spark.validate --outputs outputs.json
    spark-submit --jars "$(python -m spark.jars)" spark/validate.py --outputs outputs.json

Reads the stack outputs (docs/architecture.md), captures a consistent cut of every replicated
source topic, waits (bounded) for the targets to cover it, then checks with Spark, per flow and
topic: completeness, partitioning, integrity, order, duplicates, unexpected records, catch-up,
offset syncs and checkpoints; per flow: group offsets, heartbeats and source records gone before
MM2 copied them (the worker group's lag exporter, spark/expired.py); across the stack: loops.
Writes a JSON report and prints a table. Exit status: 0 all checks pass, 1 some check failed
(named at the end), 2 the run itself could not proceed (bad outputs, unreachable cluster, jars).
"""

from __future__ import annotations

import argparse
import os
import sys
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

from components.outputs.contract import FlowExport, OutputsError, StackExports
from components.outputs.loader import read_exports_file, read_stack_exports
from spark import divergence, html_report, kafka_io, loops
from spark.class_archive import ClassArchive, class_archive
from spark.console import log
from spark.flow_run import FlowRun
from spark.flow_validation import flow_level_checks, prepare_flow, run_fast_path, validate_flow
from spark.internal_topics import read_internal_topics, start_presumed
from spark.jars import JarResolutionError, KafkaSourceJars, ensure_kafka_source_jars
from spark.outputs import ValidationScope, validation_view
from spark.report import Check, Report, Status, render_table

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
    "source_records_expired",
    "loops",
    "divergence",
)


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
    p.add_argument(
        "--catch-up-quiet",
        type=float,
        default=5.0,
        help="seconds a target partition must stay unchanged before records still missing count as lost, once MM2 "
        "has consumed the source up to the cut (default 5)",
    )
    p.add_argument("--heartbeat-max-age", type=float, default=60.0, help="newest heartbeat must be younger (s)")
    p.add_argument("--latency-window", type=float, default=5.0, help="seconds to sample heartbeat latency (0: off)")
    p.add_argument(
        "--checkpoint-wait",
        type=float,
        default=70.0,
        help="seconds to wait for checkpoints of replicated groups and, with group sync on, their target offsets",
    )
    p.add_argument("--log-level", default="ERROR", help="Spark log level (default ERROR)")
    return p.parse_args(argv)


# --- Spark session --------------------------------------------------------------------------------


SMALL_INPUT_RECORDS = 200_000  # source records in the cut up to which the driver JVM runs C1-only
SMALL_INPUT_SLOTS_PER_CORE = 3  # local task slots per core for such small runs


def build_session(
    args: argparse.Namespace, jars: KafkaSourceJars, small_input: bool = False, archive: ClassArchive | None = None
) -> Any:
    """The session; a local driver JVM launched here starts C1-only on `small_input` and with the
    class archive (`spark.class_archive`) when given."""
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
    if master == "local[*]" and small_input and not args.master:
        # A small run's tasks (one per Kafka partition read) mostly wait: for a connection, its
        # SASL handshake and the fetch. More task slots than cores overlap those waits (fan-out,
        # 24 partition reads on 2 cores: fast path ~17 s -> ~10 s measured here).
        master = f"local[{SMALL_INPUT_SLOTS_PER_CORE * (os.cpu_count() or 1)}]"
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
    # The stage prints its own progress lines; Spark's `[Stage N: ===>]` bars would interleave.
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    if not already_submitted and "spark.driver.extraJavaOptions" not in confs:
        # Quiet from the first line (setLogLevel below only takes effect once the JVM is up).
        log4j = Path(__file__).resolve().parent / "log4j2.properties"
        options = f"-Dlog4j2.configurationFile=file:{log4j}"
        if small_input and (master or "").startswith("local"):
            # A small stack's run is over in seconds, mostly class loading and first-time code: the
            # JIT's optimising tier (C2) never pays back its compile time there, and stops at C1.
            options += " -XX:TieredStopAtLevel=1"
        if archive is not None and (master or "").startswith("local"):
            options += f" {archive.options}"
        builder = builder.config("spark.driver.extraJavaOptions", options)
    # Small inputs (a few thousand records) must not pay for 200 shuffle tasks per stage: the fast
    # path shuffles one row per partition and map task; the exact matching sizes its own shuffle
    # to its input (flow_validation.size_shuffle), and AQE coalesces from there.
    builder = builder.config("spark.sql.shuffle.partitions", "4")
    if "spark.sql.shuffle.partitions" in confs:  # the user's count stands for every stage
        builder = builder.config("spark.mm2.validate.fixedShuffle", "true")
    builder = builder.config("spark.sql.adaptive.coalescePartitions.parallelismFirst", "false")
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


# --- across the stack -------------------------------------------------------------------------------------


def check_loops(outputs: ValidationScope, topics: dict[str, dict[str, int]]) -> tuple[Check, list[dict[str, str]]]:
    # A stopped flow (declared, or a pair's standby flow) made its remote topics as well.
    found = loops.illegal_topics({a: list(t) for a, t in topics.items()}, outputs.enabled_flows or outputs.flows)
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
        exports = read_exports_file(args.outputs) if args.outputs else read_stack_exports(args.stack or "")
        outputs = validation_view(exports)
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
        log(f"cluster {alias}: {c.describe()}")
    try:
        # The cut comes first, before any Spark start-up, so it is as close to "now" as possible.
        topics = {alias: kafka_io.list_topics(c) for alias, c in outputs.clusters.items()}
        runs = [FlowRun(f, outputs, topics) for f in flows]
        jars = ensure_kafka_source_jars()
    except (kafka_io.KafkaAccessError, JarResolutionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    started = datetime.now(timezone.utc)
    pool = ThreadPoolExecutor(max_workers=4 + 6 * max(1, len(runs)))
    own_session = spark is None
    records = sum(hi - lo for r in runs for parts in r.cut.values() for lo, hi in parts.values())
    # The session starts (seconds) while the targets are waited for, all flows side by side.
    archive = class_archive([str(j) for j in jars.jars]) if own_session else None
    session = pool.submit(build_session, args, jars, records <= SMALL_INPUT_RECORDS, archive) if own_session else None
    log("cut captured: " + ", ".join(f"{r.flow.name} {t}={_count(p)}" for r in runs for t, p in r.cut.items()))
    try:
        try:
            spark = _prepare(pool, runs, args, skip, exports, session) or spark
        except JarResolutionError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        report = _new_report(args, spark, jars, started, skip)
        _validate_all(spark, pool, runs, args, skip, report, outputs)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        if own_session and session is not None and session.done() and session.exception() is None:
            _stop(session.result(), archive)
        if archive is not None:
            archive.release()
    paths = [p.get("path") for f in report.flows for t in f.topics for p in t.partitions]
    report.meta["partitionsByPath"] = {k: paths.count(k) for k in sorted({str(x) for x in paths})}
    report.meta["seconds"] = round((datetime.now(timezone.utc) - started).total_seconds(), 1)

    path = (
        Path(args.report) if args.report else ROOT / "spark" / "reports" / f"{started.strftime('%Y%m%dT%H%M%SZ')}.json"
    )
    page = report.write(path)
    print(render_table(report))
    print(f"report: {path}")
    if page is not None:
        print(f"html report: {page}")
    return 0 if report.passed else 1


def _stop(spark: Any, archive: ClassArchive | None) -> None:
    """Stop the session; a run whose JVM writes the class archive also waits for that JVM's exit."""
    writing = archive.writing if archive is not None else None
    options = spark.sparkContext.getConf().get("spark.driver.extraJavaOptions", "") or ""
    spark.stop()
    if archive is not None and writing is not None and str(writing) in options:
        log("writing the class archive for the next runs (once) ...")
        archive.finish(spark)


def _count(parts: dict[int, tuple[int, int]]) -> int:
    return sum(hi - lo for lo, hi in parts.values())


def _prepare(
    pool: ThreadPoolExecutor,
    runs: list[FlowRun],
    args: argparse.Namespace,
    skip: set[str],
    exports: StackExports,
    session: Future[Any] | None,
) -> Any:
    """Start the latency windows, wait for every target at once, then start each flow's
    flow-level checks (Kafka only) in the background; the session (when built here) once up."""
    if "heartbeats" not in skip:
        for r in runs:
            hb_topics = [r.flow.heartbeats_topic, r.flow.replicated_heartbeats_topic]
            r.latency = pool.submit(kafka_io.heartbeat_latencies, r.tgt, hb_topics, args.latency_window)
    sync = {r.flow.name: pool.submit(live_group_sync, exports, r.flow) for r in runs}
    for waited in [pool.submit(prepare_flow, r, args) for r in runs]:
        waited.result()
    for r in runs:
        r.flow_level = pool.submit(_flow_level, r, args, skip, sync[r.flow.name])
    return session.result() if session is not None else None


def _flow_level(run: FlowRun, args: argparse.Namespace, skip: set[str], sync: Future[bool | None]) -> Any:
    return flow_level_checks(run, args, skip, sync.result())


def _validate_all(
    spark: Any,
    pool: ThreadPoolExecutor,
    runs: list[FlowRun],
    args: argparse.Namespace,
    skip: set[str],
    report: Report,
    outputs: ValidationScope,
) -> None:
    """The fast path with every flow's offset-sync and checkpoint verdicts beside it, then each flow."""
    pool.submit(html_report.preload)
    for r in runs:
        r.internal = read_internal_topics(spark, r, skip)
        start_presumed(spark, r, r.internal, pool)
    run_fast_path(spark, runs)
    for r in runs:
        log(f"flow {r.flow.name}: {len(r.cut)} topic(s)")
        report.flows.append(validate_flow(spark, r, args, skip, r.flow_level))
    if "loops" not in skip:
        check, rows = check_loops(outputs, {a: kafka_io.list_topics(c) for a, c in outputs.clusters.items()})
        report.checks.append(check)
        report.loops = rows
    if divergence.CHECK not in skip:
        per_pair = [divergence.check_pair(spark, pair, outputs.clusters[pair.passive]) for pair in outputs.pairs]
        if (stack_check := divergence.merged([c for c in per_pair if c is not None])) is not None:
            report.checks.append(stack_check)


def live_group_sync(exports: StackExports, flow: FlowExport) -> bool | None:
    """Whether the flow's live checkpoint connector syncs group offsets to the target (None: unknown)."""
    from components.connect.stdlib_client import StdlibConnectClient

    name = flow.connectors.get("checkpoint")
    group = exports.connect.get(flow.worker_group)
    if not name or group is None or not group.url:
        return None
    auth = (group.auth["username"], group.auth["password"]) if group.auth else None
    try:
        with StdlibConnectClient([group.url], auth=auth, ca_pem=group.ca_pem, timeout=5.0) as client:
            config = client.get_config(name)
    except Exception:  # Connect unreachable: the check then holds committed offsets to the log end only
        return None
    if config is None:
        return None
    return config.get("sync.group.offsets.enabled", "false").lower() == "true"


def _new_report(
    args: argparse.Namespace, spark: Any, jars: KafkaSourceJars, started: datetime, skip: set[str]
) -> Report:
    """An empty report that records how this run was made."""
    return Report(
        meta={
            "generatedAt": started.isoformat(timespec="seconds"),
            "outputs": args.outputs or f"stack {args.stack or '(selected)'}",
            "master": spark.sparkContext.master,
            "pyspark": spark.version,
            "kafkaSource": jars.kafka_source_version,
            "kafkaSourceExact": jars.exact,
            "catchUpTimeoutSeconds": args.catch_up_timeout,
            "catchUpQuietSeconds": args.catch_up_quiet,
            "skipped": sorted(skip),
        }
    )


def main(argv: list[str] | None = None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
