"""Replication benchmark: MM2 with the seed's settings and with the project's tuned defaults, against
a plain consume-and-produce copy loop, on this machine, in one run.

    python bench/replication/run.py [--sizes 100,1024] [--repeats 3] [--partitions 4]

Two single-broker KRaft clusters (`src`, `dst`, PLAINTEXT on 127.0.0.1, free ports) and two
single-worker Connect groups on `dst` are started with the project's own code (broker and worker
properties from components/topology/runtime_config.py, JVMs through components/platform/local/process.py,
connectors through components/connect/client.py). Three setups copy the same source topic:

  a  copy ceiling: Kafka's own Java clients (bench/replication/BenchTool.java), one
     consumer+producer pair per thread, no Connect, no MM2; the best of the settings tried
  b  MM2 with seed 001's connector JSONs as written there (tasks.max=1, no client overrides) on a
     worker configured like seed 001's connect.properties
  c  MM2 as this tool generates it: `flow_connectors()` output for a flow parsed from stack config
     with no tuning of its own, on a worker from `worker_properties()`
  d  (c) with `exactlyOnce: true`: a worker group of its own at exactly.once.source.support=enabled,
     the source connector transactional (exactly.once.support=required, read_committed source)

Throughput: for each record size the source topic is pre-loaded with a backlog; each setup
replicates it into a fresh remote topic and the clock runs from the first record seen on the target
to the last (target end offsets polled every 0.1 s), so connector start-up is not counted.
Latency: with the pipeline running, a producer sends at half of (c)'s median throughput for a fixed
time; latency is the target broker's append time (the remote topic is pre-created with
message.timestamp.type=LogAppendTime) minus the send time the producer wrote into each value.
Both clocks are this machine's. The first 2 s of each latency run are warm-up and not counted.

Runs are interleaved (a, b, c per size per repeat) so a slow spell of the shared machine hits
every setup alike. Per-process CPU time (brokers, workers, load generator) is sampled over each
timed window. Prints figures with the machine and writes bench/results/replication-<date>.{json,md}.
Everything started here is stopped on exit, failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.replication.report import (  # noqa: E402
    SETUPS,
    cpu_order,
    is_tuning,
    machine,
    median_of,
    render,
    summary,
)
from bench.replication.rig import (  # noqa: E402
    EndOffsets,
    Rig,
    cpu_share,
    cpu_snapshot,
    create_topic,
    delete_topics,
    eos_topology,
    finish,
    java_tool,
    seed_connectors,
    start_rig,
    tuned_topology,
)
from components.connect.client import ConnectClient  # noqa: E402
from components.topology.connectors import flow_connectors  # noqa: E402

LATENCY_WARMUP_MS = 2000

# The copy loop runs one consumer+producer pair per partition (as MM2 runs one task per partition)
# with the client settings the generated source connector carries. The load generator's producer:
LOADGEN_PRODUCER = ("producer.linger.ms=5", "producer.batch.size=131072", "producer.acks=all")

Runs = dict[str, dict[str, list[dict[str, Any]]]]


@contextmanager
def pipeline(rig: Rig, setup: str, alias: str, topic: str, partitions: int, count: int) -> Iterator[dict[str, int]]:
    """Start setup `setup` copying `topic` into `<alias>.<topic>` on dst; yields extra pids to
    account CPU to; stops it afterwards (connectors deleted, copy loop ended)."""
    remote = f"{alias}.{topic}"
    create_topic(rig.dst, remote, partitions, {"message.timestamp.type": "LogAppendTime"})
    if setup == "a":
        child = java_tool(rig, "copy", rig.src, topic, rig.dst, remote, str(partitions), str(count), *tuned_client(rig))
        try:
            yield {"copy-loop": child.pid}
            if count > 0:
                finish(child, 600)
        finally:
            if child.poll() is None:
                child.terminate()
                with suppress(subprocess.TimeoutExpired):
                    child.wait(15)
        return
    if setup == "b":
        url, configs = f"http://127.0.0.1:{rig.rest_seed}", seed_connectors(rig, alias, topic)
    else:
        make, port = (tuned_topology, rig.rest_tuned) if setup == "c" else (eos_topology, rig.rest_eos)
        topology = make(rig, alias, topic, partitions)
        specs = flow_connectors(topology, topology.flows[0]).all()
        url, configs = f"http://127.0.0.1:{port}", {s.name: dict(s.config) for s in specs}
    with ConnectClient(url, timeout=30, retry_budget_s=120) as client:
        try:
            for name, config in configs.items():
                client.put_config(name, config)
            source = next(n for n in configs if n.endswith("-source"))
            client.wait_running(source, timeout_s=120, poll_s=0.5)
            yield {}
        finally:
            for name in configs:
                with suppress(Exception):
                    client.delete(name, timeout_s=60, poll_s=0.5)


def tuned_client(rig: Rig) -> list[str]:
    """The copy loop gets the client settings the generated source connector carries."""
    topology = tuned_topology(rig, "src", "probe", 1)
    config = flow_connectors(topology, topology.flows[0]).source.config
    out = []
    for key, value in config.items():
        if key.startswith("producer.override.") and "bootstrap" not in key and "security" not in key:
            out.append(f"producer.{key[len('producer.override.') :]}={value}")
        elif key.startswith("source.consumer."):
            out.append(f"consumer.{key[len('source.consumer.') :]}={value}")
    return out


def throughput_run(
    rig: Rig, setup: str, alias: str, topic: str, partitions: int, count: int, size: int
) -> dict[str, Any]:
    remote = f"{alias}.{topic}"
    t_start = time.monotonic()
    with pipeline(rig, setup, alias, topic, partitions, count) as extra_pids:
        watch = EndOffsets(rig.dst, remote, partitions)
        try:
            deadline = time.monotonic() + 600
            first_t, first_n = 0.0, 0
            before: dict[str, float] | None = None
            after: dict[str, float] = {}
            while time.monotonic() < deadline:
                n = watch.count()
                now = time.monotonic()
                if n > 0 and before is None:
                    first_t, first_n, before = now, n, cpu_snapshot(rig, extra_pids)
                if n >= count:
                    after = cpu_snapshot(rig, extra_pids)
                    break
                time.sleep(0.1)
            else:
                raise RuntimeError(f"setup {setup}: only {n}/{count} records on {remote} after 600 s")
        finally:
            watch.close()
        seconds = now - first_t
    delete_topics(rig.dst, [remote])
    rate = (count - first_n) / seconds
    return {
        "records": count,
        "seconds": round(seconds, 3),
        "records_per_s": round(rate),
        "mb_per_s": round(rate * size / 1e6, 2),
        "start_to_first_record_s": round(first_t - t_start, 2),
        "cpu_cores": cpu_share(before or {}, after),
    }


def latency_run(
    rig: Rig, setup: str, alias: str, size: int, partitions: int, rate: float, seconds: int
) -> dict[str, Any]:
    topic = f"lat-{alias}"
    create_topic(rig.src, topic, partitions)
    count = int(rate * seconds)
    with pipeline(rig, setup, alias, topic, partitions, -1) as extra_pids:
        time.sleep(3 if setup == "a" else 5)  # consumers assigned and fetching before the clock starts
        producer = java_tool(rig, "produce", rig.src, topic, str(count), str(size), f"{rate:.0f}", *LOADGEN_PRODUCER)
        before = cpu_snapshot(rig, extra_pids)
        sent = finish(producer, seconds * 3 + 60)
        after = cpu_snapshot(rig, extra_pids)
        reader = java_tool(rig, "latency", rig.dst, f"{alias}.{topic}", str(count), "60", str(LATENCY_WARMUP_MS))
        result = finish(reader, 90)
    delete_topics(rig.dst, [f"{alias}.{topic}"])
    delete_topics(rig.src, [topic])
    cpu = cpu_share(before, after)
    cpu["load-generator"] = round(sent["cpu_s"] / (after["_wall"] - before["_wall"]), 2)
    return {
        "target_rate": round(rate),
        "achieved_send_rate": round(sent["acked"] / sent["seconds"]),
        **result,
        "cpu_cores": cpu,
    }


# ---- the run -------------------------------------------------------------------------------


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,1024", help="record sizes in bytes")
    parser.add_argument(
        "--records",
        default="100:1500000,1024:300000",
        help="backlog per record size, size:count,... (sizes without a count get 150 MB)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--latency-sizes", default="1024")
    parser.add_argument("--latency-seconds", type=int, default=20)
    parser.add_argument("--latency-repeats", type=int, default=1)
    parser.add_argument("--no-write", action="store_true", help="print only (development runs)")
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.latency_sizes = [int(s) for s in args.latency_sizes.split(",") if s]
    args.records = {int(k): int(v) for k, v in (item.split(":") for item in args.records.split(",") if item)}
    return args


def _preload(rig: Rig, args: argparse.Namespace) -> dict[int, int]:
    """Each size's backlog in its source topic `bench-<size>`: the record count per size."""
    counts = {}
    for size in args.sizes:
        topic, count = f"bench-{size}", args.records.get(size, int(150e6 / size))
        create_topic(rig.src, topic, args.partitions)
        loaded = finish(java_tool(rig, "produce", rig.src, topic, str(count), str(size), "0", *LOADGEN_PRODUCER), 900)
        counts[size] = count
        print(f"pre-loaded {count:,} x {size} B in {loaded['seconds']:.1f}s", flush=True)
    return counts


def _throughput_runs(rig: Rig, args: argparse.Namespace, counts: dict[int, int], counter: Iterator[int]) -> Runs:
    runs: Runs = {s: {str(z): [] for z in args.sizes} for s in SETUPS}
    for rep in range(args.repeats):
        for size in args.sizes:
            for setup in SETUPS:
                alias = f"{setup}{next(counter)}"
                r = throughput_run(rig, setup, alias, f"bench-{size}", args.partitions, counts[size], size)
                runs[setup][str(size)].append(r)
                print(
                    f"[{rep + 1}/{args.repeats}] {size:>5} B ({setup}): {r['records_per_s']:>9,} rec/s "
                    f"{r['mb_per_s']:7.1f} MB/s  cpu {r['cpu_cores']}",
                    flush=True,
                )
    return runs


def _latency_runs(rig: Rig, args: argparse.Namespace, tp: dict[str, Any], counter: Iterator[int]) -> Runs:
    runs: Runs = {s: {str(z): [] for z in args.latency_sizes} for s in SETUPS}
    for rep in range(args.latency_repeats):
        for size in args.latency_sizes:
            rate = tp["c"][str(size)]["records_per_s"] / 2 if str(size) in tp["c"] else 1000.0
            for setup in SETUPS:
                alias = f"{setup}{next(counter)}"
                r = latency_run(rig, setup, alias, size, args.partitions, rate, args.latency_seconds)
                runs[setup][str(size)].append(r)
                print(
                    f"[latency {rep + 1}/{args.latency_repeats}] {size:>5} B ({setup}) at {r['target_rate']:,}/s "
                    f"(sent {r['achieved_send_rate']:,}/s): p50 {r['p50_ms']} ms p99 {r['p99_ms']} ms "
                    f"({r['measured']:,} measured)  cpu {r['cpu_cores']}",
                    flush=True,
                )
    return runs


def _report(rig: Rig, args: argparse.Namespace, info: dict[str, Any], measured: dict[str, Any]) -> dict[str, Any]:
    """The report of a run: `measured` holds its counts, throughput runs and medians, latency runs."""
    sizes, lat_sizes, tp, lat_runs = args.sizes, args.latency_sizes, measured["tp"], measured["lat_runs"]
    keys = ("target_rate", "achieved_send_rate", "p50_ms", "p99_ms")
    lat = {s: {str(z): {k: median_of(lat_runs[s][str(z)], k) for k in keys} for z in lat_sizes} for s in SETUPS}

    def ratio(num: str, den: str) -> dict[str, float]:
        return {str(z): tp[num][str(z)]["records_per_s"] / tp[den][str(z)]["records_per_s"] for z in sizes}

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    ratios = {"c_over_a": ratio("c", "a"), "c_over_b": ratio("c", "b"), "d_over_c": ratio("d", "c")}
    columns = sorted({k for s in SETUPS for z in sizes for k in tp[s][str(z)]["cpu_cores"]}, key=cpu_order)
    topology = tuned_topology(rig, "src", f"bench-{sizes[0]}", args.partitions)
    source_config = flow_connectors(topology, topology.flows[0]).source.config
    return {
        "date": f"{datetime.now(timezone.utc):%Y-%m-%d}",
        "command": measured["command"],
        "machine": info,
        "sizes": sizes,
        "partitions": args.partitions,
        "repeats": args.repeats,
        "records": {str(z): measured["counts"][z] for z in sizes},
        "latency_sizes": lat_sizes,
        "latency_seconds": args.latency_seconds,
        "latency_repeats": args.latency_repeats,
        "throughput_runs": measured["runs"],
        "throughput_medians": tp,
        "latency_runs": lat_runs,
        "latency_medians": lat,
        "ratios": ratios,
        "goals": {
            "c_over_a": verdict(all(v >= 0.8 for v in ratios["c_over_a"].values())),
            "c_over_b": verdict(all(v >= 1.5 for v in ratios["c_over_b"].values())),
            "p99_c": verdict(all(0 <= lat["c"][str(z)]["p99_ms"] < 1000 for z in lat_sizes)),
        },
        "cpu_columns": columns,
        "tuned_settings": {k: v for k, v in source_config.items() if is_tuning(k)},
        "copy_loop": {"threads": args.partitions, "settings": tuned_client(rig)},
        "load_generator": list(LOADGEN_PRODUCER),
    }


def main() -> int:
    args = _arguments()
    command = "python bench/replication/run.py " + " ".join(sys.argv[1:])
    libs = os.environ.get("MM2_KAFKA_LIBS")
    if not libs:
        sys.exit("MM2_KAFKA_LIBS is not set: `source .mm2/env` first")
    info = machine()
    print(f"machine: {json.dumps(info)}", flush=True)

    tmp = Path(tempfile.mkdtemp(prefix="mm2-bench-replication-"))
    tool_dir = tmp / "tool"
    tool_dir.mkdir()
    subprocess.run(
        ["javac", "-d", str(tool_dir), "-cp", f"{libs}/*", str(Path(__file__).with_name("BenchTool.java"))],
        check=True,
    )
    rig = Rig(tmp=tmp, libs=libs, tool_cp=str(tool_dir))
    # SIGTERM (a CI timeout, `kill`) unwinds through the finally below like Ctrl-C does.
    signal.signal(signal.SIGTERM, _interrupt)
    counter = iter(range(1, 10_000))
    try:
        t0 = time.monotonic()
        start_rig(rig, args.partitions)
        print(f"rig up in {time.monotonic() - t0:.0f}s", flush=True)
        counts = _preload(rig, args)
        runs = _throughput_runs(rig, args, counts, counter)
        tp = {s: {str(z): summary(runs[s][str(z)]) for z in args.sizes} for s in SETUPS}
        lat_runs = _latency_runs(rig, args, tp, counter)
    finally:
        rig.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    measured = {"command": command, "counts": counts, "runs": runs, "tp": tp, "lat_runs": lat_runs}
    report = _report(rig, args, info, measured)
    text = render(report, command)
    print("\n" + text)
    if not args.no_write:
        out = ROOT / "bench" / "results"
        out.mkdir(parents=True, exist_ok=True)
        stamp = f"{datetime.now(timezone.utc):%Y%m%d}"
        (out / f"replication-{stamp}.json").write_text(json.dumps(report, indent=2) + "\n")
        (out / f"replication-{stamp}.md").write_text(text + "\n")
    return 0


def _interrupt(*_: Any) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
