"""Validation benchmark: the Spark validator against a single-process confluent-kafka baseline.

    flock -x /tmp/mm2-heavy.lock python bench/validation/run.py [--sizes 1000000,10000000] [--repeats 3,1]

In one run, on this machine:
1. starts two single-node KRaft clusters (`primary`, `dr`) on free loopback ports;
2. per size N: writes N records over `--partitions` partitions to `primary`/<topic> and an
   identical copy to `dr`/primary.<topic> (load.py; no MirrorMaker: the point is validation
   throughput, so both topics are filled directly by producers, timed separately);
3. per repetition, in alternating order:
   - spark: `bin/validate --outputs <file> --skip ...` exactly as a user runs it (its own
     `local[*]` session). The record-level checks (completeness, partitioning, integrity, order,
     duplicates, unexpected records, catch-up) are one Spark pipeline in the validator and
     cannot be run apart, so all of them run; the checks that need MM2's internal topics or
     live heartbeats (offset_syncs, checkpoints, group_offsets, heartbeats, loops) are skipped
     with the validator's own `--skip`, and latency sampling is off (`--latency-window 0`);
   - baseline: `python -m bench.validation.baseline` (completeness and integrity, baseline.py);
   both as child processes, timed from start to exit, with per-process peak RSS and CPU time of
   the validator, the brokers and the rest of the machine (monitor.py), and the driver JVM heap;
4. stops everything (also on failure or Ctrl-C), prints the figures and writes
   bench/results/validation-<date>.{json,md}.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.machine import hardware  # noqa: E402
from bench.validation import cluster, load  # noqa: E402
from bench.validation.monitor import Monitor, children, cmdline, comm  # noqa: E402
from bench.validation.summary import FAULT_PARTITION, markdown, render, summarize  # noqa: E402

SKIPPED = ("offset_syncs", "checkpoints", "group_offsets", "heartbeats", "loops")
RUN_TIMEOUT_S = 1800
SPARK_SUBMIT = "org.apache.spark.deploy.SparkSubmit"


# --- child processes, always stopped -------------------------------------------------------------


@contextlib.contextmanager
def child(cmd: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A child in its own session (so its whole tree can be signalled); killed on the way out."""
    with open(log, "wb") as out:
        p = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield p
    finally:
        if p.poll() is None:
            for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 10)):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, sig)
                try:
                    p.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        # The driver's JVM shares the session: make sure none of the tree outlives the run.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)


def timed_run(
    cmd: list[str], log: Path, roles_of: Any, brokers: dict[str, cluster.Broker], heap_role: str | None
) -> tuple[int, float, Monitor]:
    broker_pids = [pid for b in brokers.values() for pid in b.pids()]
    t0 = time.monotonic()
    with child(cmd, log) as p:
        monitor = Monitor(lambda: {"broker": broker_pids, **roles_of(p.pid, monitor)})
        monitor.heap_role = heap_role
        monitor.start()
        try:
            rc = p.wait(RUN_TIMEOUT_S)
        finally:
            wall = time.monotonic() - t0
            monitor.stop()
    return rc, wall, monitor


def spark_roles(root: int, monitor: Monitor) -> dict[str, list[int]]:
    kids = children(root)
    # The driver JVM runs SparkSubmit; other children are its launcher scripts, the short-lived
    # launcher JVM that computes its command line, and bin/validate's jar check.
    jvm = [c for c in kids if comm(c) == "java" and _is_driver_jvm(cmdline(c))]
    for pid in jvm:
        if "xmx" not in monitor.notes:
            monitor.notes["xmx"] = next((a[4:] for a in cmdline(pid) if a.startswith("-Xmx")), "JVM default")
    jstat = monitor._jstat.pid if monitor._jstat is not None else None
    return {
        "spark_driver_python": [root],
        "spark_driver_jvm": jvm,
        "spark_other": [c for c in kids if c not in jvm and c != jstat],
        "jstat": [jstat] if jstat else [],
    }


def _is_driver_jvm(args: list[str]) -> bool:
    return SPARK_SUBMIT in args and "org.apache.spark.launcher.Main" not in args


def baseline_roles(root: int, _monitor: Monitor) -> dict[str, list[int]]:
    return {"baseline": [root]}


# --- one size ------------------------------------------------------------------------------------


def outputs_file(brokers: dict[str, cluster.Broker], topic: str, path: Path) -> Path:
    """Stack outputs as `pulumi stack output --json` would give them for one flow primary->dr."""
    data = {
        "clusters": {a: {"bootstrap": b.bootstrap, "securityProtocol": "PLAINTEXT"} for a, b in brokers.items()},
        "connect": {"mm2": {"url": "http://127.0.0.1:1", "cluster": "dr"}},
        "flows": {
            "primary->dr": {
                "source": "primary",
                "target": "dr",
                "workerGroup": "mm2",
                "connectors": {
                    "source": "mm2-primary-to-dr-source",
                    "checkpoint": "mm2-primary-to-dr-checkpoint",
                    "heartbeat": "mm2-primary-to-dr-heartbeat",
                },
                "states": {"mm2-primary-to-dr-source": "RUNNING"},
                "topics": {topic: f"primary.{topic}"},
                "checkpointsTopic": "primary.checkpoints.internal",
                "offsetSyncsTopic": "mm2-offset-syncs.dr.internal",
                "heartbeatsTopic": "heartbeats",
                "exactlyOnce": False,
                "offsetLagMax": 100,
                "groups": [".*"],
            }
        },
    }
    path.write_text(json.dumps(data, indent=1))
    return path


def _driver_figures(mon: Monitor, wall: float) -> dict[str, Any]:
    """A Spark driver's memory (Python and JVM) and the CPU split during its run."""
    roles = mon.by_role()
    return {
        "driver_python_peak_rss_mib": roles.get("spark_driver_python", {}).get("peak_rss_mib"),
        "driver_jvm_peak_rss_mib": roles.get("spark_driver_jvm", {}).get("peak_rss_mib"),
        "driver_jvm_heap": vars(mon.heap),
        "driver_jvm_xmx": mon.notes.get("xmx"),
        "cpu": _cpu(mon, wall),
    }


def _cpu(monitor: Monitor, wall: float) -> dict[str, Any]:
    roles = monitor.by_role()
    machine = roles.pop("machine")
    tracked = sum(r["cpu_s"] for r in roles.values())
    return {
        "by_role": roles,
        "machine_busy_cpu_s": machine["busy_cpu_s"],
        "machine_capacity_cpu_s": machine["capacity_cpu_s"],
        "untracked_cpu_s": round(machine["busy_cpu_s"] - tracked, 1),
        "wall_s": round(wall, 2),
    }


def run_spark(
    brokers: dict[str, cluster.Broker], topic: str, n: int, work: Path, tag: str, extra: list[str]
) -> dict[str, Any]:
    report = work / f"spark-{tag}.json"
    log = work / f"spark-{tag}.log"
    cmd = [
        str(ROOT / "bin" / "validate"),
        "--outputs",
        str(outputs_file(brokers, topic, work / f"outputs-{topic}.json")),
        "--report",
        str(report),
        "--latency-window",
        "0",
        "--catch-up-timeout",
        "60",
        *[a for s in SKIPPED for a in ("--skip", s)],
        *extra,
    ]
    rc, wall, mon = timed_run(cmd, log, spark_roles, brokers, heap_role="spark_driver_jvm")
    text = log.read_text(errors="replace")
    rep = json.loads(report.read_text()) if report.exists() else {}
    parts = [p for f in rep.get("flows", {}).values() for t in f["topics"].values() for p in t["partitions"]]
    flow: dict[str, Any] = next(iter(rep.get("flows", {}).values()), {})
    matched_s = re.findall(r"exact matching of \d+ partition\(s\) in ([\d.]+)s", text)
    fast_s = re.findall(r"fingerprinted in ([\d.]+)s", text)
    rest_s = re.findall(r"order, duplicates and unmatched records in ([\d.]+)s", text)
    align_s = re.findall(r"aligned \d+ partition\(s\) in ([\d.]+)s", text)
    checks = {k: v["status"] for t in flow.get("topics", {}).values() for k, v in t["checks"].items()}
    result = {
        "exit_code": rc,
        "passed": bool(rep.get("passed")) and rc == 0,
        "checks": checks,
        "source_records": sum(p["sourceRecords"] for p in parts),
        "matched": sum(p["matched"] for p in parts),
        "wall_s": round(wall, 2),
        "records_per_s": round(n / wall),
        "stage_s": rep.get("meta", {}).get("seconds"),  # from before the Spark session to the end
        "flow_s": flow.get("catchUp", {}).get("validationSeconds"),  # the flow's checks, session up
        "match_s": float(matched_s[0]) if matched_s else None,
        "align_s": float(align_s[0]) if align_s else None,  # part of match_s
        "fast_s": float(fast_s[0]) if fast_s else None,
        "failed_checks": rep.get("failedChecks"),
        "partitions_by_path": rep.get("meta", {}).get("partitionsByPath"),
        "catch_up": flow.get("catchUp"),  # how the wait ended (caught up / settled / quiet / timeout), seconds
        "findings_s": float(rest_s[0]) if rest_s else None,
        **_driver_figures(mon, wall),
        "log": str(log),
    }
    if not result["passed"] or result["matched"] != n:
        result["log_tail"] = _tail(text, work)
        # The executor's own stack trace (where a task failed) comes long before the driver's.
        first = text.find("ERROR Executor")
        if first >= 0:
            result["executor_error"] = "\n".join(text[first:].splitlines()[:60])
    return result


def _tail(text: str, work: Path) -> str:
    """A log's last 3,000 characters for the results, the run's temporary directory named <work>."""
    return text[-3000:].replace(str(work), "<work>")


def run_baseline(brokers: dict[str, cluster.Broker], topic: str, n: int, partitions: int, work: Path, tag: str):
    spec = work / f"baseline-spec-{topic}.json"
    spec.write_text(
        json.dumps(
            {
                "source_bootstrap": brokers["primary"].bootstrap,
                "source_topic": topic,
                "target_bootstrap": brokers["dr"].bootstrap,
                "target_topic": f"primary.{topic}",
                "partitions": partitions,
            }
        )
    )
    out = work / f"baseline-{tag}.json"
    log = work / f"baseline-{tag}.log"
    cmd = [sys.executable, "-m", "bench.validation.baseline", "--spec", str(spec), "--out", str(out)]
    rc, wall, mon = timed_run(cmd, log, baseline_roles, brokers, heap_role=None)
    res = json.loads(out.read_text()) if out.exists() else {}
    totals = res.get("totals", {})
    result = {
        "exit_code": rc,
        "passed": bool(res.get("passed")) and rc == 0,
        "checks": res.get("checks"),
        "source_records": totals.get("source_records"),
        "matched": totals.get("matched"),
        "wall_s": round(wall, 2),
        "records_per_s": round(n / wall),
        "compare_s": round(res.get("seconds", 0.0), 2),
        "peak_rss_mib": max(res.get("peak_rss_mib", 0.0), mon.by_role().get("baseline", {}).get("peak_rss_mib", 0.0)),
        "cpu": _cpu(mon, wall),
        "log": str(log),
    }
    if not result["passed"] or result["matched"] != n:
        result["log_tail"] = _tail(log.read_text(errors="replace"), work)
    return result


def run_bare(brokers: dict[str, cluster.Broker], topic: str, n: int, work: Path, tag: str) -> dict[str, Any]:
    """The engine's floor: a Spark scan of both topics with the validator's session (bare_scan.py)."""
    out = work / f"bare-{tag}.json"
    log = work / f"bare-{tag}.log"
    cmd = [
        sys.executable,
        "-m",
        "bench.validation.bare_scan",
        "--outputs",
        str(outputs_file(brokers, topic, work / f"outputs-{topic}.json")),
        "--topic",
        topic,
        "--remote",
        f"primary.{topic}",
        "--out",
        str(out),
    ]
    rc, wall, mon = timed_run(cmd, log, spark_roles, brokers, heap_role="spark_driver_jvm")
    res = json.loads(out.read_text()) if out.exists() else {}
    result = {
        "exit_code": rc,
        "passed": rc == 0 and res.get("records") == 2 * n,
        "matched": n if res.get("records") == 2 * n else 0,
        "wall_s": round(wall, 2),
        "records_per_s": round(n / wall),
        "scan_s": res.get("scan_s"),
        **_driver_figures(mon, wall),
        "log": str(log),
    }
    if not result["passed"]:
        result["log_tail"] = _tail(log.read_text(errors="replace"), work)
    return result


def inject_fault(brokers: dict[str, cluster.Broker], topic: str) -> None:
    """Delete the first record of one remote partition (AdminClient delete_records): one record lost."""
    from confluent_kafka import TopicPartition

    admin = cluster.admin(brokers["dr"].bootstrap)
    fut = admin.delete_records([TopicPartition(f"primary.{topic}", FAULT_PARTITION, 1)])
    for f in fut.values():
        f.result()


def _brief(kind: str, r: dict[str, Any]) -> str:
    ok = "ok" if r["passed"] else "FAILED"
    if kind in ("spark", "bare", "fault"):
        mem = (
            f"driver py {r['driver_python_peak_rss_mib']} MiB, JVM {r['driver_jvm_peak_rss_mib']} MiB "
            f"(heap used peak {r['driver_jvm_heap']['peak_used_mib']:.0f} MiB)"
        )
    else:
        mem = f"peak RSS {r['peak_rss_mib']} MiB"
    cpu = r["cpu"]["by_role"]
    own = sum(v["cpu_s"] for k, v in cpu.items() if k not in ("broker",))
    return (
        f"{kind:8} {ok:6} {r['wall_s']:8.1f}s {r['records_per_s']:>9,} rec/s  {mem}; "
        f"cpu: validator {own:.0f}s, brokers {cpu.get('broker', {}).get('cpu_s', 0):.0f}s, "
        f"untracked {r['cpu']['untracked_cpu_s']:.0f}s"
    )


# --- machine and report --------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    import confluent_kafka
    import pyspark

    return {
        **hardware(),
        "spark": pyspark.__version__,  # pip pyspark bundles Spark itself: same version
        "pyspark": pyspark.__version__,
        "confluent_kafka": confluent_kafka.__version__,
        "librdkafka": confluent_kafka.libversion()[0],
    }


def _interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000000,10000000", help="records per size, comma-separated")
    parser.add_argument("--repeats", default="3,1", help="repetitions per size (one value, or one per size)")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--load-workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--broker-heap", default="1g")
    parser.add_argument("--spark-arg", action="append", default=[], help="extra bin/validate argument, repeatable")
    parser.add_argument("--out-dir", default=str(ROOT / "bench" / "results"), help="where results are written")
    parser.add_argument("--name", default="validation", help="results file prefix")
    parser.add_argument("--fault", action="store_true", help="then delete one record of one partition and rerun")
    parser.add_argument("--render", metavar="JSON", help="only re-render the summary and .md of a results JSON")
    args = parser.parse_args()
    if args.render:
        return render(Path(args.render))
    sizes = [int(s) for s in args.sizes.split(",")]
    reps = [int(r) for r in args.repeats.split(",")]
    reps = reps * len(sizes) if len(reps) == 1 else reps
    command = "flock -x /tmp/mm2-heavy.lock python bench/validation/run.py " + " ".join(sys.argv[1:])

    # SIGTERM (or a supervisor's kill) unwinds like Ctrl-C, so every `finally` stops its processes.
    signal.signal(signal.SIGTERM, _interrupt)
    info = machine()
    print(f"machine: {json.dumps(info)}", flush=True)
    results: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="mm2-bench-validation-") as tmp:
        work = Path(tmp)
        with cluster.clusters(work / "kafka", heap=args.broker_heap) as brokers:
            print(f"brokers: { {a: b.bootstrap for a, b in brokers.items()} }", flush=True)
            for n, rep_count in zip(sizes, reps, strict=True):
                results[n] = _one_size(brokers, args, work, n, rep_count)
    info["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    summary = summarize(sizes, results)
    for r in results.values():
        for kind in ("spark", "baseline", "bare", "fault"):
            for x in r.get(kind, []):
                x.pop("log", None)
    report = {"command": command, "machine": info, "partitions": args.partitions, "summary": summary, "runs": results}
    text = markdown(info, args, summary, command)
    print("\n" + text)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stamp = f"{datetime.now(timezone.utc):%Y%m%d}"
    (out / f"{args.name}-{stamp}.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / f"{args.name}-{stamp}.md").write_text(text + "\n")
    print(f"written: {out / f'{args.name}-{stamp}.md'} and .json")
    return 0 if all(s["all_passed"] for s in summary.values()) else 1


def _one_size(
    brokers: dict[str, cluster.Broker], args: argparse.Namespace, work: Path, n: int, rep_count: int
) -> dict[str, Any]:
    """Load `n` records into both topics, then `rep_count` rounds of the Spark stage, the baseline
    and the bare scan (rotated so none always runs first), and with `--fault` one faulted run."""
    topic = f"orders_{n}"
    cluster.create_topic(brokers["primary"].bootstrap, topic, args.partitions)
    cluster.create_topic(brokers["dr"].bootstrap, f"primary.{topic}", args.partitions)
    spec = load.LoadSpec(
        brokers["primary"].bootstrap,
        topic,
        brokers["dr"].bootstrap,
        f"primary.{topic}",
        args.partitions,
        n,
        int(time.time() * 1000) - 3_600_000,
    )
    print(f"{n:,} records: loading both topics ...", flush=True)
    load_s = load.load(spec, args.load_workers)
    print(f"    loaded in {load_s:.1f}s ({2 * n / load_s:,.0f} records/s into the two topics)", flush=True)
    # The first read after a load costs the brokers more (32 CPU s against 17 for the
    # same read later, seen at 10M): one untimed bare scan first, so no timed run pays it.
    warm = run_bare(brokers, topic, n, work, f"{n}-warmup")
    print(f"    warm-up read (untimed bare scan) in {warm['wall_s']:.0f}s", flush=True)
    res: dict[str, Any] = {
        "load_s": round(load_s, 1),
        "warmup_s": warm["wall_s"],
        "spark": [],
        "baseline": [],
        "bare": [],
    }
    kinds = ("spark", "baseline", "bare")
    for rep in range(rep_count):
        for kind in kinds[rep % 3 :] + kinds[: rep % 3]:
            tag = f"{n}-{rep}"
            if kind == "spark":
                r = run_spark(brokers, topic, n, work, tag, args.spark_arg)
            elif kind == "bare":
                r = run_bare(brokers, topic, n, work, tag)
            else:
                r = run_baseline(brokers, topic, n, args.partitions, work, tag)
            res[kind].append(r)
            print(f"  [{rep + 1}/{rep_count}] {_brief(kind, r)}", flush=True)
            if not r["passed"]:
                print(r.get("log_tail", ""), flush=True)
    if args.fault:
        inject_fault(brokers, topic)
        r = run_spark(brokers, topic, n, work, f"{n}-fault", args.spark_arg)
        res["fault"] = [r]
        print(
            f"  [fault in p{FAULT_PARTITION}] {_brief('fault', r)} {r['failed_checks']} {r['partitions_by_path']}",
            flush=True,
        )
    cluster.delete_topic(brokers["primary"].bootstrap, topic)
    cluster.delete_topic(brokers["dr"].bootstrap, f"primary.{topic}")
    return res


if __name__ == "__main__":
    sys.exit(main())
