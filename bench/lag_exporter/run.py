"""Lag exporter benchmark: what a worker group's lag exporter costs replication on the dev stack.

    python bench/lag_exporter/run.py [--rate 5000] [--phase 30] [--pairs 3] [--warmup 15]
                                     [--backlog 200000] [--repeats 2] [--label <name>]

On a throwaway copy of the dev stack (two single-broker SASL clusters, a 2-worker group, primary->dr
with 3 source tasks), in one run, with the group's lag exporter (one reading every 5 s) alternately
running ("on") and stopped with SIGSTOP ("off": a stopped process uses no CPU, holds no lock and
nothing starts it again; SIGCONT puts it back, always, also when the run fails):

  steady  `--rate` records/s into `orders` (3 partitions; each record carries its send time), read
          back from `primary.orders` on dr; `--pairs` x (on, off) phases of `--phase` s each: records/s
          delivered on dr, end-to-end latency p50/p99, the exporter's CPU (utime+stime over the phase,
          % of one core), its RSS (VmRSS, the peak of 1 s samples) and readings, and the Connect
          workers' and the machine's CPU for context.
  drain   the throughput cost itself: the stream stops, the flow's source connector is paused over
          Connect REST, `--backlog` records go into `orders`, the connector resumes, and the time until
          dr holds them all (its end offsets, polled every 20 ms) gives the drain rate; `--repeats` x
          (on, off), after one warm-up drain. The cost figure is the mean drain rate on / off; the goal
          is >= 0.98. A drain should span several readings: 200,000 records drain in about a second on
          a 2-core machine, so `--backlog 2000000` is the telling run.

Prints one line per phase, then the tables, and writes bench/results/lag_exporter-<date>[-<label>].{json,md}.
The stack is destroyed at the end, also on failure, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import struct
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.deploy.run import machine  # noqa: E402
from bench.lag_exporter.report import write  # noqa: E402
from bench.proc_stats import cpu_seconds, machine_cpu, rss_mib  # noqa: E402
from bench.restarts.run import Stream, latency  # noqa: E402
from components.connect.client import ConnectClient  # noqa: E402
from components.platform.local import process as proc  # noqa: E402
from components.platform.local.layout import (  # noqa: E402
    WATCHER_STATUS_FILE,
    lag_exporter_path,
    process_marker,
    worker_path,
)
from tests.integration.harness import (  # noqa: E402
    TestStack,
    connect_auth,
    dev_config_with_free_ports,
    kafka_conf,
    wait_until,
)

FLOW, GROUP, TOPIC = "primary->dr", "mm2", "orders"
PADDING = b"x" * 92  # the stream's record: 8 bytes of send time + 92


def worker_pids(stack: TestStack) -> list[int]:
    workers = int(stack.config["config"]["mm2:workerGroups"][GROUP].get("workers", 1))
    return [pid for i in range(workers) for pid in proc.find_pids(process_marker(stack.name, worker_path(GROUP, i)))]


class Exporter:
    """The group's lag exporter process (found by its marker): `run(False)` stops it with SIGSTOP,
    `run(True)` continues it with SIGCONT."""

    def __init__(self, stack: TestStack) -> None:
        pids = proc.find_pids(process_marker(stack.name, lag_exporter_path(GROUP)))
        if len(pids) != 1:
            raise RuntimeError(f"expected one lag exporter process, found {pids}")
        self.pid = pids[0]
        self.status_file = stack.run_dir / lag_exporter_path(GROUP) / WATCHER_STATUS_FILE

    def run(self, on: bool) -> None:
        os.kill(self.pid, signal.SIGCONT if on else signal.SIGSTOP)
        wait_until(lambda: self.stopped() != on, 10, f"the exporter {'continued' if on else 'stopped'}", poll_s=0.01)

    def stopped(self) -> bool:
        return Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("T", "t")

    def last_reading(self) -> float:
        """When the status file was last replaced: the exporter does so after every reading."""
        try:
            return self.status_file.stat().st_mtime
        except OSError:
            return 0.0


@dataclass(frozen=True)
class Usage:
    at: float  # monotonic
    exporter_s: float
    workers_s: float
    machine_s: float  # busy, all cores


class Meter:
    """One window's CPU (the exporter, the group's workers, the machine), and the exporter's RSS
    peak and readings from samples at most once a second."""

    def __init__(self, exporter: Exporter, workers: list[int]) -> None:
        self.exporter, self.workers = exporter, workers
        self.rss_max = rss_mib(exporter.pid)
        self.readings, self.seen = 0, exporter.last_reading()
        self.next_sample = 0.0
        self.start = self._usage()

    def _usage(self) -> Usage:
        workers = sum(cpu_seconds(p) for p in self.workers)
        return Usage(time.monotonic(), cpu_seconds(self.exporter.pid), workers, machine_cpu())

    def sample(self) -> None:
        now = time.monotonic()
        if now < self.next_sample:
            return
        self.next_sample = now + 1.0
        self.rss_max = max(self.rss_max, rss_mib(self.exporter.pid))
        seen = self.exporter.last_reading()
        if seen != self.seen:
            self.readings, self.seen = self.readings + 1, seen

    def figures(self) -> dict[str, Any]:
        self.next_sample = 0.0
        self.sample()
        end = self._usage()
        wall = end.at - self.start.at
        return {
            "seconds": round(wall, 2),
            "exporter_cpu_pct": round(100 * (end.exporter_s - self.start.exporter_s) / wall, 2),
            "exporter_rss_mib_max": round(self.rss_max, 1),
            "exporter_readings": self.readings,
            "workers_cpu_pct": round(100 * (end.workers_s - self.start.workers_s) / wall, 1),
            "machine_busy_pct": round(100 * (end.machine_s - self.start.machine_s) / (wall * (os.cpu_count() or 1)), 1),
            "workers_alive": all(proc.is_alive(p) for p in self.workers),
            "load1": round(os.getloadavg()[0], 2),
        }


def steady(stack: TestStack, stream: Stream, exporter: Exporter, pairs: int, phase_s: float) -> list[dict[str, Any]]:
    """(on, off) x `pairs` phases under the stream; latency is added once every record is in."""
    phases = []
    for i in range(2 * pairs):
        on = i % 2 == 0
        exporter.run(on)
        meter = Meter(exporter, worker_pids(stack))
        start = time.time()
        while time.time() < start + phase_s:
            meter.sample()
            time.sleep(0.2)
        end = time.time()
        row = {"phase": i + 1, "exporter": "on" if on else "off", "start": start, "end": end, **meter.figures()}
        arrived = sum(1 for a in stream.arrivals[:] if start <= a[0] < end)
        row["delivered_per_s"] = round(arrived / (end - start), 1)
        phases.append(row)
        print(
            f"steady {row['phase']} exporter {row['exporter']:3}: {row['delivered_per_s']:8.1f} records/s delivered, "
            f"exporter {row['exporter_cpu_pct']:5.2f}% CPU {row['exporter_rss_mib_max']:.1f} MiB "
            f"{row['exporter_readings']} readings, workers {row['workers_cpu_pct']:.1f}% CPU, "
            f"machine {row['machine_busy_pct']:.0f}% busy, load {row['load1']}",
            flush=True,
        )
    return phases


def with_latency(phases: list[dict[str, Any]], stream: Stream) -> None:
    """Each phase's end-to-end latency and send rate, from the records sent during it."""
    for row in phases:
        row["latency"] = latency(stream.arrivals, row["start"], row["end"])
        row["sent_per_s"] = round(row["latency"]["records"] / (row["end"] - row["start"]), 1)


class EndOffsets:
    """The sum of a topic's partitions' end offsets on one cluster, asked of the leaders each time."""

    def __init__(self, out: dict[str, Any], alias: str, topic: str) -> None:
        from confluent_kafka import Consumer, TopicPartition

        self.consumer = Consumer(kafka_conf(out, alias, **{"group.id": f"bench-lag-exporter-{os.getpid()}"}))
        partitions = self.consumer.list_topics(topic, timeout=30).topics[topic].partitions
        self.partitions = [TopicPartition(topic, p) for p in sorted(partitions)]

    def __call__(self) -> int:
        ends = (self.consumer.get_watermark_offsets(tp, timeout=10, cached=False)[1] for tp in self.partitions)
        return sum(int(end) for end in ends)

    def close(self) -> None:
        self.consumer.close()


@dataclass
class Flow:
    """What a drain acts on: the flow's source connector over REST and both ends of `orders`."""

    out: dict[str, Any]
    connect: ConnectClient
    connector: str
    source: EndOffsets
    target: EndOffsets
    workers: list[int]


def caught_up(flow: Flow, timeout_s: float = 300) -> int:
    """Wait until dr holds every record of `orders` (its end offsets reach the source's and stay
    put for a second) and return the difference: 0 unless MM2 ever wrote a record twice."""
    last: list[int] = [-1]

    def done() -> bool:
        target = flow.target()
        still, last[0] = target == last[0], target
        return still and target >= flow.source()

    wait_until(done, timeout_s, "dr to hold every record of orders", poll_s=1)
    return last[0] - flow.source()


def produce_backlog(out: dict[str, Any], records: int) -> float:
    """`records` records into `orders` on primary as fast as the producer goes; its seconds."""
    from confluent_kafka import Producer

    producer = Producer(kafka_conf(out, "primary", **{"enable.idempotence": True, "linger.ms": 20}))
    failed: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(str(err))

    started = time.monotonic()
    for i in range(records):
        value = struct.pack(">d", time.time()) + PADDING
        while True:
            try:
                producer.produce(TOPIC, key=b"backlog-%d" % i, value=value, on_delivery=delivered)
                break
            except BufferError:  # the producer's queue is full: let it send
                producer.poll(0.05)
        if i % 1000 == 0:
            producer.poll(0)
    left = producer.flush(180)
    if left or failed:
        raise RuntimeError(f"backlog: {left} records not delivered, {len(failed)} failed ({failed[:3]})")
    return time.monotonic() - started


def until_drained(flow: Flow, before: int, goal: int, meter: Meter, timeout_s: float = 900) -> float:
    """Poll dr's end offsets until they reach `goal`; when the first backlog record arrived."""
    first: float | None = None
    deadline = time.monotonic() + timeout_s
    while (now := flow.target()) < goal:
        if first is None and now > before:
            first = time.monotonic()
        if time.monotonic() > deadline:
            raise RuntimeError(f"the backlog did not drain within {timeout_s:.0f}s ({goal - now} records missing)")
        meter.sample()
        time.sleep(0.02)
    return first if first is not None else time.monotonic()


def drain(flow: Flow, exporter: Exporter, on: bool, backlog: int) -> dict[str, Any]:
    """Pause the source connector, produce `backlog`, resume it and time dr catching up."""
    exporter.run(on)
    offset = caught_up(flow)
    flow.connect.pause(flow.connector)
    flow.connect.wait_state(flow.connector, "PAUSED", 60, poll_s=0.2)
    before = flow.target()
    produce_s = produce_backlog(flow.out, backlog)
    goal = flow.source() + offset
    meter = Meter(exporter, flow.workers)
    resumed = time.monotonic()
    flow.connect.resume(flow.connector)
    first = until_drained(flow, before, goal, meter)
    done = time.monotonic()
    row = {"exporter": "on" if on else "off", "backlog": goal - before, "produce_s": round(produce_s, 2)}
    row |= {
        "drain_s": round(done - resumed, 3),
        "first_arrival_s": round(first - resumed, 3),
        "rate": round((goal - before) / (done - resumed), 1),
        "rate_after_first": round((goal - before) / max(done - first, 1e-3), 1),
        **meter.figures(),
    }
    flow.connect.wait_state(flow.connector, "RUNNING", 60, poll_s=0.5)
    return row


def drains(stack: TestStack, out: dict[str, Any], exporter: Exporter, backlog: int, repeats: int) -> list[dict]:
    connector = str(out["flows"][FLOW]["connectors"]["source"])
    with ConnectClient(out["connect"][GROUP]["url"], auth=connect_auth(out, GROUP), retry_budget_s=30) as connect:
        source, target = EndOffsets(out, "primary", TOPIC), EndOffsets(out, "dr", f"primary.{TOPIC}")
        flow = Flow(out, connect, connector, source, target, worker_pids(stack))
        rows = []
        try:
            # A first drain warms what a first one would pay for alone (caches, the tasks' fetch sessions);
            # shown, but in neither side's figures.
            for i in range(-1, 2 * repeats):
                row = {"drain": i + 1, **drain(flow, exporter, i % 2 == 0 or i < 0, backlog)}
                if i < 0:
                    row["exporter"] = "on (warm-up)"
                rows.append(row)
                print(
                    f"drain {row['drain']} exporter {row['exporter']}: {row['backlog']} records in "
                    f"{row['drain_s']:.2f}s = {row['rate']:.0f} records/s (first after {row['first_arrival_s']:.2f}s), "
                    f"exporter {row['exporter_cpu_pct']:.2f}% CPU {row['exporter_readings']} readings, "
                    f"workers {row['workers_cpu_pct']:.0f}% CPU, machine {row['machine_busy_pct']:.0f}% busy, "
                    f"load {row['load1']}",
                    flush=True,
                )
        finally:
            source.close()
            target.close()
    return rows


def measure(stack: TestStack, exporter: Exporter, args: argparse.Namespace, results: dict[str, Any]) -> None:
    out = stack.outputs()
    stream = Stream(out, args.rate, bench="lag-exporter")
    stream.start()
    try:
        wait_until(lambda: stream.received() > args.rate * 10, 300, "10 s of records arriving on dr", poll_s=0.5)
        time.sleep(args.warmup)
        results["steady"] = steady(stack, stream, exporter, args.pairs, args.phase)
        exporter.run(True)
        stream.stop()
    finally:
        stream.close()
    with_latency(results["steady"], stream)
    results["sent_acked"] = len(stream.acked)
    results["measured_rate"] = round(len(stream.acked) / max(stream.sending_s, 1e-9), 1)
    results["received_by_bench_consumer"] = stream.received()
    results["drains"] = drains(stack, out, exporter, args.backlog, args.repeats)


def interrupted(signum: int, _frame: FrameType | None) -> None:
    """SIGTERM and SIGHUP unwind like Ctrl-C, so the exporter continues and the stack is destroyed."""
    raise KeyboardInterrupt(f"signal {signum}")


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=5000.0, help="records per second into orders (steady)")
    parser.add_argument("--phase", type=float, default=30.0, help="seconds per steady phase")
    parser.add_argument("--pairs", type=int, default=3, help="(on, off) pairs of steady phases")
    parser.add_argument("--warmup", type=float, default=15.0, help="seconds of stream before the first phase")
    parser.add_argument("--backlog", type=int, default=200_000, help="records per drain")
    parser.add_argument("--repeats", type=int, default=2, help="(on, off) pairs of drains")
    parser.add_argument("--label", default="", help="results go to lag_exporter-<date>-<label>.* (default: no label)")
    return parser.parse_args()


def main() -> int:
    args = arguments()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    info = machine()
    print(f"machine: {json.dumps(info)}", flush=True)
    command = (
        f"python bench/lag_exporter/run.py --rate {args.rate:g} --phase {args.phase:g} --pairs {args.pairs} "
        f"--warmup {args.warmup:g} --backlog {args.backlog} --repeats {args.repeats}"
        + (f" --label {args.label}" if args.label else "")
    )
    day = f"{datetime.now(timezone.utc):%Y%m%d}"
    results: dict[str, Any] = {"machine": info, "command": command, "date": day, **vars(args)}
    with tempfile.TemporaryDirectory(prefix="mm2-bench-lag-exporter-") as tmp:
        stack = TestStack(Path(tmp), dev_config_with_free_ports())
        stack.init()
        exporter: Exporter | None = None
        try:
            t0 = time.monotonic()
            stack.up()
            print(f"stack up in {time.monotonic() - t0:.0f}s", flush=True)
            exporter = Exporter(stack)
            results["exporter_rss_mib_at_start"] = round(rss_mib(exporter.pid), 1)
            measure(stack, exporter, args, results)
        finally:
            if exporter is not None:
                with contextlib.suppress(OSError):
                    os.kill(exporter.pid, signal.SIGCONT)
            stack.destroy()
        results["processes_left_behind"] = stack.markers()
    results["load_avg_at_end"] = os.getloadavg()
    write(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
