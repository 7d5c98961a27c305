"""Switchover benchmark: how long a planned switchover refuses the application's writes.

    python bench/switchover/run.py [--rates 1000,10000,0] [--out-dir bench/results]

On a throwaway cluster pair (the stack of tests/integration/failover_app.py: two single-broker
clusters with SASL/SCRAM, one worker, primary->dr and dr->primary, `orders` with 2 partitions),
each run switches the active side while the application principal produces at a rate (0: as
fast as it can) and its consumer group has read on the old side. The application fails over as a
client would: at its first refused write it writes to the other side, retrying until accepted.
Two paths side by side, runs interleaved in one process, directions alternating:
  before  the order up to 5954a4c: fence, drain until MM2's periodic commit shows everything
          copied, stop the old flow, move the groups, lift the fence on the new side
  after   components/ops/switchover.run: fence, drain proven by the records (or the commit),
          move the groups, lift; the old flow stops after the new side takes writes
Per run: the fenced time (fence on to fence lifted) and its parts, the application's own gap
(last write accepted on the old side to the first on the new), the old flow's stop, and the
RPO: records acknowledged on the old side that are not on the new side's remote topic.
Goal: fenced at most 3 s at 10k records/s, RPO 0.

The switchover runs through components.ops directly (as `pulumi up` would run it), so both paths
meet the same stack; connector states are set by the bench between runs.
Prints the figures with the machine and writes bench/results/switchover-<date>.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.deploy.run import machine  # noqa: E402
from bench.machine import hardware_text  # noqa: E402
from components.ops import switchover as sw  # noqa: E402
from components.ops.clients import connect_client, flow  # noqa: E402
from components.ops.drain import drain  # noqa: E402
from components.outputs.contract import PartitionCut, StackExports  # noqa: E402
from tests.integration.failover_app import APP, add_app_principal, app_conf, pair_config, use_on  # noqa: E402
from tests.integration.harness import end_offsets, kafka_conf, read_keys, running, wait_until  # noqa: E402

PATHS = ("before", "after")
PAIR = "primary<->dr"


class App:
    """The application: writes `orders` at `rate`/s on the old side; at its first refusal it
    writes to the new side instead, every record until one is accepted there. Notes the times."""

    def __init__(self, outputs: dict[str, Any], old: str, new: str, rate: float, prefix: str) -> None:
        self.outputs, self.sides, self.rate, self.prefix = outputs, (old, new), rate, prefix
        self.acked: dict[str, list[bytes]] = {old: [], new: []}
        self.last_ack = {old: 0.0, new: 0.0}
        self.first_ack_new = 0.0
        self.refused_at = 0.0
        self.halt = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.started = 0.0

    def _run(self) -> None:
        from confluent_kafka import KafkaException, Producer

        old, new = self.sides
        conf = {"linger.ms": 5, "message.timeout.ms": 10000, "queue.buffering.max.messages": 200000}
        producers = {side: Producer(app_conf(self.outputs, side, **conf)) for side in self.sides}

        def delivered(side: str) -> Callable[[Any, Any], None]:
            def note(err: Any, msg: Any) -> None:
                now = time.monotonic()
                if err is None:
                    self.acked[side].append(msg.key())
                    self.last_ack[side] = now
                    if side == new and not self.first_ack_new:
                        self.first_ack_new = now
                elif side == old and not self.refused_at:
                    self.refused_at = now

            return note

        notes = {side: delivered(side) for side in self.sides}
        self.started = time.monotonic()
        sent = 0
        while not self.halt.is_set():
            side = new if self.refused_at else old
            try:
                producers[side].produce("orders", key=f"{self.prefix}-{sent}".encode(), value=b"v" * 100,
                                        on_delivery=notes[side])  # fmt: skip
            except BufferError:
                producers[side].poll(0.01)
                continue
            except KafkaException:  # refused at once: the client knows the topic's authorization failed
                if side == old and not self.refused_at:
                    self.refused_at = time.monotonic()
                producers[side].poll(0.005)
                continue
            sent += 1
            for p in producers.values():
                p.poll(0)
            if self.rate:
                ahead = sent / self.rate - (time.monotonic() - self.started)
                if ahead > 0:
                    time.sleep(ahead)
        for p in producers.values():
            p.flush(30)

    def rate_on_old(self) -> float:
        return len(self.acked[self.sides[0]]) / max(self.last_ack[self.sides[0]] - self.started, 1e-3)


def before(outputs: StackExports, request: sw.Request, say: Callable[[str], None]) -> dict[str, Any]:
    """The switchover's order up to 5954a4c, from the same building blocks."""
    t0 = time.monotonic()
    sw.fence_side(outputs, request, request.old, on=True)
    cut = drain(outputs, request, say, by_records=False)
    t1 = time.monotonic()
    _plan, _moved, problems = sw.plan_groups(outputs, request)
    assert not problems, problems
    sw.stop_flow(outputs, request.stops)
    t2 = time.monotonic()
    plan, groups, _ = sw.plan_groups(outputs, request)
    chosen = {g.group for g in groups}
    sw.execute(outputs, replace(plan, groups=tuple(g for g in plan.groups if g.group in chosen), problems=()))
    sw._origin_commits(outputs, request, sorted(chosen))
    t3 = time.monotonic()
    sw.fence_side(outputs, request, request.new, on=False)
    t4 = time.monotonic()
    parts = {"drain_s": t1 - t0, "stop_s": t2 - t1, "groups_s": t3 - t2 + (t4 - t3)}
    return {"cut": cut, "fenced_s": t4 - t0, **parts, "stop_in_fence": True}


def after(outputs: StackExports, request: sw.Request, say: Callable[[str], None]) -> dict[str, Any]:
    started = time.monotonic()
    report = sw.run(outputs, request, say)
    total = time.monotonic() - started
    parts = {"drain_s": report.seconds["drain"], "groups_s": report.fenced_s - report.seconds["drain"]}
    return {"cut": report.cut, "fenced_s": report.fenced_s, **parts, "stop_s": total - report.fenced_s,
            "stop_in_fence": False, "rpo_reported": report.rpo_records}  # fmt: skip


def set_flows(outputs: StackExports, running_flow: str, stopped_flow: str) -> None:
    """The flow old->new runs (resumed from its kept offsets), the flow new->old is stopped."""
    for name, state in ((running_flow, "RUNNING"), (stopped_flow, "STOPPED")):
        f = flow(outputs, name)
        with connect_client(outputs, f.worker_group, retry_budget_s=30.0) as client:
            for n in f.connector_names:
                client.set_state(n, state)
            for n in f.connector_names:
                client.wait_state(n, state, 120, min_tasks=0)


def caught_up(stack: Any, side: str, other: str) -> None:
    """Group `billing` at the end of its topics on `side` (the runs before wrote more than it can
    read record by record), then reading there and checkpointed by MM2 (`use_on`)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    outputs = stack.outputs()
    at_end = [
        TopicPartition(topic, p, end)
        for topic in ("orders", f"{other}.orders")
        for p, end in end_offsets(outputs, side, topic, missing_ok=True).items()
    ]
    admin = AdminClient(kafka_conf(outputs, side))
    for future in admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions("billing", at_end)]).values():
        future.result(30)
    use_on(stack, side)


def one_run(stack: Any, path: str, rate: float, old: str, new: str, cuts: dict[str, Any]) -> dict[str, Any]:
    exports = StackExports.from_json(stack.outputs())
    set_flows(exports, f"{old}->{new}", f"{new}->{old}")
    caught_up(stack, old, new)  # the group reads on the old side and MM2 checkpointed it
    request = sw.Request(
        old=old, new=new, pair=PAIR, principals=(f"User:{APP}",), groups=("billing",), drain_timeout_s=90,
        policy=None, patterns={f"{a}->{b}": (("orders",), ()) for a, b in ((old, new), (new, old))}, cuts=cuts,
    )  # fmt: skip
    outputs = stack.outputs()
    prefix = f"{path}-{rate:g}-{uuid.uuid4().hex[:6]}"
    app = App(outputs, old, new, rate, prefix)
    app.thread.start()
    wait_until(lambda: app.started and time.monotonic() - app.started > 3 and app.acked[old], 60,
               "3 s of the application writing", poll_s=0.1)  # fmt: skip
    lines: list[str] = []
    measured = (before if path == "before" else after)(exports, request, lines.append)
    wait_until(lambda: len(app.acked[new]) >= 100, 60, "the application's writes accepted on the new side", 0.1)
    app.halt.set()
    app.thread.join(60)
    acked_old = set(app.acked[old])
    copied = set(read_keys(outputs, new, f"{old}.orders", prefix.encode(), acked_old, 180))
    cuts[request.stops] = measured.pop("cut")
    return {
        "path": path, "rate_asked": rate, "rate_measured": round(app.rate_on_old()), "from": old, "to": new,
        **{k: round(v, 2) if isinstance(v, float) else v for k, v in measured.items()},
        "app_gap_s": round(app.first_ack_new - app.last_ack[old], 2),
        "acked_old": len(acked_old), "rpo_records": len(acked_old - copied), "acked_new": len(app.acked[new]),
        "said": [line for line in lines if "record(s) left to copy" not in line],
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rates", default="1000,10000,0", help="records/s asked of the application; 0: flat out")
    parser.add_argument("--out-dir", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    # Stopped with SIGTERM (timeout, kill): unwind, so the stack's processes are stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rates = [float(r) for r in args.rates.split(",")]
    info = {**machine(), "load_avg_at_start": os.getloadavg()}
    print(f"machine: {json.dumps(info)}", flush=True)
    results: dict[str, Any] = {"machine": info, "rates": rates, "runs": []}
    cuts: dict[str, tuple[PartitionCut, ...]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-switchover-") as tmp, running(Path(tmp), pair_config()) as stack:
        outputs = stack.outputs()
        for alias in ("primary", "dr"):
            add_app_principal(outputs, alias)
        old, new = "primary", "dr"
        for rate in rates:
            for path in PATHS:
                row = one_run(stack, path, rate, old, new, cuts)
                results["runs"].append(row)
                print(json.dumps(row), flush=True)
                old, new = new, old
    results["load_avg_at_end"] = os.getloadavg()
    write(results, Path(args.out_dir))
    return 0


def write(results: dict[str, Any], out: Path) -> None:
    day = f"{datetime.now(timezone.utc):%Y%m%d}"
    (out / f"switchover-{day}.json").write_text(json.dumps(results, indent=2) + "\n")
    info = results["machine"]
    rate = {0.0: "flat out"}
    lines = [
        f"# Switchover benchmark ({datetime.now(timezone.utc):%Y-%m-%d})",
        "",
        f"Machine: {hardware_text(info)}; Kafka {info.get('kafka')}, "
        f"{info.get('java')}; load average {', '.join(f'{x:.1f}' for x in info['load_avg_at_start'])} at start, "
        f"{', '.join(f'{x:.1f}' for x in results['load_avg_at_end'])} at end. Command: "
        f"`python bench/switchover/run.py --rates {','.join(f'{r:g}' for r in results['rates'])}`.",
        "",
        "Two single-broker clusters (SASL/SCRAM) and one Connect worker on this machine; `orders` with 2 "
        "partitions; the application principal writes 100-byte records and fails over at its first refused "
        "write; its group `billing` moves. Both paths in the same run, interleaved, directions alternating. "
        "Fenced: from the fence on the old side to the fence lifted on the new one (`fencedSeconds`). "
        "Application gap: its last write accepted on the old side to its first on the new. RPO: records "
        "acknowledged on the old side missing from the new side's remote topic.",
        "",
        "| path | records/s asked (measured) | fenced (s) | drain (s) | old flow stopped (s) | groups + lift (s) "
        "| application gap (s) | RPO (records of acknowledged) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results["runs"]:
        where = "in the fence" if r["stop_in_fence"] else "after"
        asked = rate.get(r["rate_asked"], f"{r['rate_asked']:g}")
        lines.append(
            f"| {r['path']} | {asked} ({r['rate_measured']}) "
            f"| {r['fenced_s']} | {r['drain_s']} | {r['stop_s']} ({where}) | {r['groups_s']} | {r['app_gap_s']} "
            f"| {r['rpo_records']} of {r['acked_old']} |"
        )
    after_10k = [r for r in results["runs"] if r["path"] == "after" and r["rate_asked"] == 10000]
    met = bool(after_10k) and all(r["fenced_s"] <= 3 and r["rpo_records"] == 0 for r in after_10k)
    lines += ["", f"Goal fenced <= 3 s at 10k records/s with RPO 0: {'met' if met else 'NOT met'}."]
    (out / f"switchover-{day}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
