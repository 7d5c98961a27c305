"""Restart benchmark: how long replication stops when a worker-config change restarts the workers.

    python bench/restarts/run.py [--rate 200] [--tail 20]

On a throwaway copy of the dev stack (2 single-broker clusters, a 2-worker group, primary->dr),
in one run, under a steady stream of `--rate` records/s into `orders` on primary (each record
carries its send time), read back from `primary.orders` on dr as it arrives:
  all-at-once  `restarts: all-at-once` + a changed `offset.flush.interval.ms`: both workers restart
               at the same moment (the behaviour before rolling restarts)
  rolling      the default (rolling, 2 workers) + another `offset.flush.interval.ms`
For each: the longest time with no record arriving (any partition, and the worst single
partition), p99/max end-to-end latency of the records sent meanwhile (arrival on dr minus send
time on primary), the `pulumi up` wall time, and how often no worker answered on REST (sampled
every 0.2 s). Then the stream stops and the Spark stage (`python -m spark.validate --outputs`)
checks that nothing was lost. Goal: rolling gap <= half the all-at-once gap.

Prints the figures with the machine and writes bench/results/restarts-<date>.{json,md}.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import struct
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.deploy.run import machine  # noqa: E402
from bench.machine import hardware_text  # noqa: E402
from components.platform.local import process as proc  # noqa: E402
from components.platform.local.layout import process_marker, worker_path  # noqa: E402
from tests.integration.harness import (  # noqa: E402
    TestStack,
    connect_auth,
    dev_config_with_free_ports,
    kafka_conf,
    wait_until,
)
from tests.integration.test_rolling import sample_workers, spark_report  # noqa: E402

FLOW, GROUP, TOPIC = "primary->dr", "mm2", "orders"
PHASES = (("all-at-once", "3000"), ("rolling", "4000"))  # (restarts, offset.flush.interval.ms)


class Stream:
    """A producer at a fixed rate (key: sequence number, value: send time in ms) and a consumer of
    the remote topic noting each record's arrival time; both in threads until `stop()`."""

    def __init__(self, out: dict[str, Any], rate: float, bench: str = "restarts") -> None:
        self.out, self.rate, self.bench = out, rate, bench
        self.halt = threading.Event()
        self.acked: set[int] = set()
        self.sending_s = 0.0
        # (arrival s since epoch, send s since epoch, partition, sequence)
        self.arrivals: list[tuple[float, float, int, int]] = []
        self.threads = [threading.Thread(target=self._produce), threading.Thread(target=self._consume)]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def stop(self) -> None:
        self.halt.set()
        self.threads[0].join(120)

    def close(self) -> None:
        self.halt.set()
        for t in self.threads:
            t.join(120)

    def _produce(self) -> None:
        from confluent_kafka import Producer

        producer = Producer(kafka_conf(self.out, "primary", **{"enable.idempotence": True, "linger.ms": 2}))

        def acked(err: Any, msg: Any) -> None:
            if err is None:
                self.acked.add(int(msg.key()))

        started, sent = time.monotonic(), 0
        while not self.halt.is_set():
            value = struct.pack(">d", time.time()) + b"x" * 92
            producer.produce(TOPIC, key=str(sent).encode(), value=value, on_delivery=acked)
            sent += 1
            producer.poll(0)
            # Pacing: poll(timeout) returns at the first delivery report, so it cannot pace.
            ahead = sent / self.rate - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)
        producer.flush(60)
        self.sending_s = time.monotonic() - started

    def _consume(self) -> None:
        from confluent_kafka import Consumer

        settings = {"group.id": f"bench-{self.bench}-{os.getpid()}", "auto.offset.reset": "earliest",
                    "fetch.wait.max.ms": 50, "enable.auto.commit": False}  # fmt: skip
        conf = kafka_conf(self.out, "dr", **settings)
        consumer = Consumer(conf)
        consumer.subscribe([f"primary.{TOPIC}"])
        idle_after_stop = 0.0
        try:
            while idle_after_stop < 30:
                msg = consumer.poll(0.05)
                if msg is None or msg.error() is not None:
                    if self.halt.is_set() and not self.threads[0].is_alive():
                        idle_after_stop += 0.05 if msg is None else 0
                        if self.received() >= len(self.acked):
                            break
                    continue
                now = time.time()
                sent_at = struct.unpack(">d", (msg.value() or b"")[:8])[0]
                self.arrivals.append((now, float(sent_at), msg.partition() or 0, int(msg.key() or b"-1")))
        finally:
            consumer.close()

    def received(self) -> int:
        return len({a[3] for a in self.arrivals})


def gaps(arrivals: list[tuple[float, float, int, int]], start: float, end: float) -> tuple[float, float]:
    """(longest time with no record arriving on any partition, the worst single partition's), in
    [start, end]: the last arrival before `start` opens the first interval."""

    def longest(times: list[float]) -> float:
        before = [t for t in times if t < start]
        inside = [t for t in times if start <= t <= end]
        points = ([before[-1]] if before else [start]) + inside + [end]
        return max(b - a for a, b in itertools.pairwise(points))

    everything = sorted(a[0] for a in arrivals)
    partitions = {a[2] for a in arrivals}
    worst = max((longest(sorted(a[0] for a in arrivals if a[2] == p)) for p in partitions), default=0.0)
    return longest(everything), worst


def latency(arrivals: list[tuple[float, float, int, int]], start: float, end: float) -> dict[str, float]:
    lat = sorted((a[0] - a[1]) * 1000 for a in arrivals if start <= a[1] <= end)
    if not lat:
        return {"records": 0}
    return {
        "records": len(lat),
        "p50_ms": round(statistics.median(lat)),
        "p99_ms": round(lat[min(len(lat) - 1, int(0.99 * len(lat)))]),
        "max_ms": round(lat[-1]),
    }


def phase(stack: TestStack, stream: Stream, restarts: str, flush_ms: str, tail_s: float) -> dict[str, Any]:
    group = stack.config["config"]["mm2:workerGroups"][GROUP]
    group["workerConfig"] = {**(group.get("workerConfig") or {}), "offset.flush.interval.ms": flush_ms}
    group.pop("restarts", None)
    if restarts == "all-at-once":
        group["restarts"] = "all-at-once"
    stack.write_config()
    markers = [process_marker(stack.name, worker_path(GROUP, i)) for i in range(2)]
    pids = [proc.find_pids(m) for m in markers]
    urls = [f"http://127.0.0.1:{int(group['restPort']) + i}" for i in range(2)]
    halt = threading.Event()
    rows: list[list[bool]] = []
    sampler = threading.Thread(target=sample_workers, args=(urls, connect_auth(stack.outputs(), GROUP), halt, rows))
    sampler.start()
    start = time.time()
    try:
        stack.up()
        up_end = time.time()
        # The window ends `tail_s` after `up`: what the restart left behind (a lagging partition
        # catching up, a second rebalance) counts too. Polled so the stream's threads keep going.
        wait_until(lambda: time.time() >= up_end + tail_s, tail_s + 5, "the tail of the window", poll_s=0.2)
    finally:
        halt.set()
        sampler.join(10)
    end = time.time()
    restarted = all(
        now and now != before for now, before in zip([proc.find_pids(m) for m in markers], pids, strict=True)
    )
    gap_any, gap_partition = gaps(stream.arrivals, start, end)
    return {
        "restarts": restarts,
        "offset.flush.interval.ms": flush_ms,
        "up_s": round(up_end - start, 1),
        "both_workers_restarted": restarted,
        "longest_gap_s": round(gap_any, 2),
        "longest_partition_gap_s": round(gap_partition, 2),
        "latency": latency(stream.arrivals, start, end),
        "worker_samples": len(rows),
        "samples_with_no_worker_up": sum(1 for r in rows if not any(r)),
        "samples_with_one_worker_down": sum(1 for r in rows if any(r) and not all(r)),
    }


def spark_check(out: dict[str, Any], tmp: Path) -> dict[str, Any]:
    """The Spark stage's verdict on the stream's topic (the same run as tests/integration/test_rolling.py)."""
    try:
        data = spark_report(out, tmp)
    except AssertionError as exc:  # no report written: the stage itself could not run
        return {"error": str(exc)[-2000:]}
    topic = data["flows"][FLOW]["topics"][TOPIC]
    return {
        "passed": data["passed"],
        "failedChecks": data["failedChecks"],
        "completeness": topic["checks"].get("completeness"),
        "duplicates": topic["checks"].get("duplicates"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=200.0, help="records per second into orders")
    parser.add_argument("--tail", type=float, default=20.0, help="seconds measured after each `pulumi up` returns")
    args = parser.parse_args()
    info = machine()
    print(f"machine: {json.dumps(info)}", flush=True)
    results: dict[str, Any] = {"machine": info, "rate": args.rate, "tail_s": args.tail, "phases": []}
    with tempfile.TemporaryDirectory(prefix="mm2-bench-restarts-") as tmp:
        stack = TestStack(Path(tmp), dev_config_with_free_ports())
        stack.init()
        stream: Stream | None = None
        try:
            t0 = time.monotonic()
            stack.up()
            print(f"stack up in {time.monotonic() - t0:.0f}s", flush=True)
            out = stack.outputs()
            stream = Stream(out, args.rate)
            stream.start()
            wait_until(lambda: stream.received() > args.rate * 10, 180, "10 s of records arriving on dr", poll_s=0.5)
            steady = time.time()
            wait_until(lambda: time.time() >= steady + 15, 20, "15 s of steady stream", poll_s=0.2)
            results["steady"] = {"latency": latency(stream.arrivals, steady, time.time())}
            results["steady"]["longest_gap_s"] = round(gaps(stream.arrivals, steady, time.time())[0], 2)
            print(f"steady: {json.dumps(results['steady'])}", flush=True)
            for restarts, flush_ms in PHASES:
                result = phase(stack, stream, restarts, flush_ms, args.tail)
                results["phases"].append(result)
                print(f"{restarts}: {json.dumps(result)}", flush=True)
            stream.stop()
            stream.close()
            results["sent_acked"] = len(stream.acked)
            results["measured_rate"] = round(len(stream.acked) / max(stream.sending_s, 1e-9), 1)
            results["received_by_bench_consumer"] = stream.received()
            results["spark"] = spark_check(stack.outputs(), Path(tmp))
            print(f"spark: {json.dumps(results['spark'])}", flush=True)
        finally:
            if stream is not None:
                stream.close()
            stack.destroy()
    results["load_avg_at_end"] = os.getloadavg()
    write(results)
    return 0


def write(results: dict[str, Any]) -> None:
    day = f"{datetime.now(timezone.utc):%Y%m%d}"
    out = ROOT / "bench" / "results"
    (out / f"restarts-{day}.json").write_text(json.dumps(results, indent=2) + "\n")
    info = results["machine"]
    by = {p["restarts"]: p for p in results["phases"]}
    old, new = by["all-at-once"], by["rolling"]
    goal = new["longest_gap_s"] <= old["longest_gap_s"] / 2
    spark = results["spark"]
    lines = [
        f"# Restart benchmark ({datetime.now(timezone.utc):%Y-%m-%d})",
        "",
        f"Machine: {hardware_text(info)}; Kafka {info['kafka']}, "
        f"{info['java']}; load average {', '.join(f'{x:.1f}' for x in info['load_avg_at_start'])} at start, "
        f"{', '.join(f'{x:.1f}' for x in results['load_avg_at_end'])} at end. Command: "
        f"`python bench/restarts/run.py --rate {results['rate']:g} --tail {results['tail_s']:g}`.",
        "",
        "A copy of the dev stack (two single-broker clusters, SASL/SCRAM, a 2-worker group, primary->dr with 3 "
        f"source tasks); {results['rate']:g} records/s asked ({results.get('measured_rate')} measured) into "
        "`orders` (3 partitions) throughout; each phase changes "
        "`offset.flush.interval.ms` in the group's `workerConfig`, so `pulumi up` restarts both workers. Window: "
        f"from `pulumi up` starting until {results['tail_s']:g} s after it returns. Both phases in the same run.",
        "",
        "| restarts | `pulumi up` (s) | longest gap, any record (s) | longest gap, worst partition (s) "
        "| p50 / p99 / max latency (ms) | REST samples with no worker up |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for p in (old, new):
        lat = p["latency"]
        lines.append(
            f"| {p['restarts']} | {p['up_s']} | {p['longest_gap_s']} | {p['longest_partition_gap_s']} "
            f"| {lat.get('p50_ms')} / {lat.get('p99_ms')} / {lat.get('max_ms')} "
            f"| {p['samples_with_no_worker_up']} of {p['worker_samples']} |"
        )
    steady = results["steady"]
    lines += [
        "",
        f"Steady state before the restarts: p50 {steady['latency'].get('p50_ms')} ms, p99 "
        f"{steady['latency'].get('p99_ms')} ms, longest gap {steady['longest_gap_s']} s.",
        "",
        f"Goal rolling gap <= half of all-at-once ({old['longest_gap_s'] / 2:.2f} s): "
        f"{'met' if goal else 'NOT met'} ({new['longest_gap_s']} s).",
        f"Loss: {results['sent_acked']} records acknowledged, {results['received_by_bench_consumer']} distinct read "
        f"back by the bench; Spark stage passed: {spark.get('passed')}, completeness: "
        f"{(spark.get('completeness') or {}).get('detail', spark.get('error'))}; duplicates: "
        f"{(spark.get('duplicates') or {}).get('detail', '-')}; failed checks: {spark.get('failedChecks')}.",
    ]
    (out / f"restarts-{day}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
