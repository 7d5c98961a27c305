"""Link faults on real processes: the dev stack with dr in dc2, behind an emulated link declared as
20 ms, 4 Mbit/s and 1% packet loss (components/platform/local/wan.py), its flow's RPO 15 s.

1. Under 1% loss a backlog crosses and every record arrives.
2. A link slower than the produce rate (its 4 Mbit/s, loss taken away, under 8): the lag grows, the RPO alert
   fires, and `bin/status` shows the flow copying at the link's rate (MM2's byte-rate from the
   workers' metrics agents) and names the link as the bottleneck; widened again, the flow catches up.
3. The link down for 90 s under a stream of about 50 records/s, then back: `bin/status` names the
   side the workers cannot reach while it is down (this machine still reaches both),
   MM2FlowLagAboveRPO fires in a real Prometheus and clears after; no record of the stream is
   missing, and the Spark stage passes the whole flow (duplicates only as at-least-once allows).
The figures (time to detect, longest gap, lag peak, copy rate, time to catch up) are printed.
Needs root (namespaces, TAP devices), as the docker lane does.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from components.monitoring.rules import Thresholds
from components.platform.local.layout import NETWORK_PATH
from components.platform.local.wan import LinkShape, Wan
from tests.integration.emulated import dev_across_a_link, require_emulation
from tests.integration.harness import (
    TestStack,
    free_port_block,
    kafka_conf,
    produce_batch,
    read_keys,
    run_status,
    running,
    wait_until,
)
from tests.integration.prometheus import Prometheus, stack_prometheus
from tests.integration.streaming import streamed_during
from tests.integration.validation_stage import run_stage

FLOW = "primary->dr"
RPO_S = 15
OUTAGE_S = 90.0
SHAPE = LinkShape(rtt_ms=20.0, bandwidth_bps=4e6, loss_pct=1.0)  # as declared
SCRAPE = "2s"
FAST = Thresholds(window="30s", latency_for="10s", failure_for="6s", lag_for="6s")
BOUND_S = 120.0
CLEAN = LinkShape(rtt_ms=20.0, bandwidth_bps=4e6)  # the declared rate the only limit
WIDE = LinkShape(rtt_ms=20.0, bandwidth_bps=100e6)  # widened to drain a backlog
RECORD_BYTES = 1000  # random, so nothing compresses them: what crosses is what is produced
TAP = "wan0"  # the stack's only link (components/topology/emulation.py names link k `wan<k>`)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestStack, Prometheus]]:
    require_emulation()
    cfg = dev_across_a_link(rtt="20ms", bandwidth="4Mbit", loss="1%")
    group = cfg["config"]["mm2:workerGroups"]["mm2"]
    group["lagPort"] = free_port_block(1)
    group["metricsPort"] = free_port_block(group["workers"])  # MM2's byte-rate, for bin/status
    cfg["config"]["mm2:flows"][FLOW]["rpo"] = f"{RPO_S}s"
    with running(tmp_path_factory.mktemp("wan-faults"), cfg) as stack:
        url = stack.outputs()["connect"]["mm2"]["lagUrl"]
        prometheus = stack_prometheus(stack, url, tmp_path_factory.mktemp("prometheus"), FAST, SCRAPE)
        try:
            yield stack, prometheus
        finally:
            prometheus.stop()


def _lag_s(stack: TestStack) -> float:
    """The flow's lag in seconds as its lag exporter serves it."""
    text = httpx.get(f"{stack.outputs()['connect']['mm2']['lagUrl']}/metrics", timeout=10).text
    for line in text.splitlines():
        if line.startswith("mm2_flow_lag_seconds{") and f'flow="{FLOW}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_a_backlog_crosses_a_lossy_link_whole(world: tuple[TestStack, Prometheus]) -> None:
    stack, _ = world
    outputs = stack.outputs()
    prefix = f"lossy-{uuid.uuid4().hex[:6]}-".encode()
    keys = [prefix + str(i).encode() for i in range(5000)]
    started = time.monotonic()
    produce_batch(outputs, "primary", "orders", keys)
    arrived = read_keys(outputs, "dr", "primary.orders", prefix, set(keys), BOUND_S)
    print(f"\n[wan-faults] 5000 records across {SHAPE.loss_pct:g}% loss in {time.monotonic() - started:.1f}s")
    assert set(arrived) == set(keys)


class Paced:
    """A producer writing RECORD_BYTES-byte random records to primary's `orders` at `per_s`
    until stopped: the pace is the delivery loop's own poll, not a sleep."""

    def __init__(self, outputs: dict[str, Any], per_s: float) -> None:
        self.outputs, self.per_s = outputs, per_s
        self.stop = threading.Event()
        self.sent = 0
        self.thread = threading.Thread(target=self._produce, daemon=True)

    def _produce(self) -> None:
        from confluent_kafka import Producer

        producer = Producer(kafka_conf(self.outputs, "primary", **{"linger.ms": 20}))
        started = time.monotonic()
        while not self.stop.is_set():
            while self.sent < (time.monotonic() - started) * self.per_s:
                producer.produce("orders", key=b"paced-%d" % self.sent, value=os.urandom(RECORD_BYTES))
                self.sent += 1
            producer.poll(0.01)
        assert producer.flush(120) == 0


_THROUGHPUT = re.compile(r"throughput ([0-9.]+) (kbit|Mbit)/s .*, ([0-9]+)% of the link")


def _copy_mbit(stdout: str) -> float | None:
    """The flow's copy rate in Mbit/s, as `bin/status` shows it; None when it shows none."""
    line = _THROUGHPUT.search(stdout)
    return None if line is None else float(line[1]) / (1000 if line[2] == "kbit" else 1)


def _status_once(said: Any, outputs: dict[str, Any], tmp_path: Path, what: str) -> subprocess.CompletedProcess[str]:
    """`bin/status` once `said(stdout)` (bounded); what it said last, when it never did."""
    last: list[str] = []

    def saying() -> subprocess.CompletedProcess[str] | None:
        status = run_status(outputs, tmp_path)
        last[:] = [status.stdout]
        return status if said(status.stdout) else None

    try:
        return wait_until(saying, BOUND_S, f"bin/status {what}", poll_s=3)  # type: ignore[no-any-return]
    except AssertionError as exc:
        raise AssertionError(f"{exc}; it said last:\n{last[0][-3000:] if last else ''}") from None


def test_a_link_slower_than_the_source_is_named_as_the_bottleneck(
    world: tuple[TestStack, Prometheus], tmp_path: Path
) -> None:
    stack, prometheus = world
    outputs = stack.outputs()
    wan = Wan(stack.run_dir / NETWORK_PATH)
    paced = Paced(outputs, per_s=2 * CLEAN.bandwidth_bps / 8 / RECORD_BYTES)  # twice what the link carries
    link_mbit = CLEAN.bandwidth_bps / 1e6
    wan.reshape(TAP, CLEAN)
    try:
        paced.thread.start()
        started = time.monotonic()
        named = _status_once(lambda out: "the link is the bottleneck" in out, outputs, tmp_path, "naming the link")
        named_s, lag_then = time.monotonic() - started, _lag_s(stack)
        wait_until(lambda: prometheus.firing().get("MM2FlowLagAboveRPO"), BOUND_S, "MM2FlowLagAboveRPO", 2)
        grown = wait_until(lambda: (lag := _lag_s(stack)) > lag_then and lag, BOUND_S, "the lag to keep growing", 2)
        # MM2's byte-rate is a mean over the workers' last minute: once it holds only the stream,
        # it is the link's rate.
        full = _status_once(
            lambda out: (_copy_mbit(out) or 0) >= 0.8 * link_mbit, outputs, tmp_path, "copying at the link's rate"
        )
    finally:
        paced.stop.set()
        paced.thread.join(180)
        wan.reshape(TAP, WIDE)
        widened = time.monotonic()
    try:
        wait_until(lambda: _lag_s(stack) == 0, BOUND_S, "lag back to 0 on the wide link")
        caught_up = time.monotonic() - widened
        wait_until(lambda: "MM2FlowLagAboveRPO" not in prometheus.firing(), BOUND_S, "the RPO alert to clear", 2)
    finally:
        wan.reshape(TAP, SHAPE)
    mbit = _copy_mbit(full.stdout) or 0.0
    print(
        f"\n[wan-faults] a {link_mbit:g} Mbit/s link, {paced.per_s * RECORD_BYTES * 8e-6:g} Mbit/s produced: "
        f"bin/status named the link after {named_s:.0f}s, then showed {mbit:.2f} Mbit/s copied "
        f"({mbit / link_mbit:.0%} of the link); lag {lag_then:.0f}s then {grown:.0f}s; caught up {caught_up:.0f}s "
        f"after the link was widened to {WIDE.bandwidth_bps / 1e6:g} Mbit/s"
    )
    assert named.returncode != 0 and full.returncode != 0, full.stdout[-2000:]
    assert mbit <= 1.2 * link_mbit, full.stdout[-3000:]  # a rate the link cannot carry is a wrong figure
    assert "the link is the bottleneck" in full.stdout and "not getting records" not in named.stdout + full.stdout


def test_a_link_down_for_90s_loses_nothing_and_is_reported(world: tuple[TestStack, Prometheus], tmp_path: Path) -> None:
    stack, prometheus = world
    outputs = stack.outputs()
    wan = Wan(stack.run_dir / NETWORK_PATH)
    seen: dict[str, float] = {}

    def outage() -> None:
        # The copy rate bin/status reads is the workers' mean over up to a minute: the link goes
        # down once that holds no more than this stream (not a backlog another test drained).
        quiet = 0.01 * SHAPE.bandwidth_bps / 1e6
        wait_until(
            lambda: (_copy_mbit(run_status(outputs, tmp_path).stdout) or 0.0) < quiet,
            BOUND_S,
            "the flow's copy rate down to the stream's",
            poll_s=3,
        )
        cut = time.monotonic()
        wan.cut(TAP)
        try:
            status = wait_until(
                lambda: "not getting records from primary" in (s := run_status(outputs, tmp_path)).stdout and s,
                OUTAGE_S,
                "bin/status naming primary as the side the workers cannot reach",
                poll_s=3,
            )
            seen["status"] = time.monotonic() - cut
            assert status.returncode != 0, status.stdout[-2000:]
            wait_until(lambda: prometheus.firing().get("MM2FlowLagAboveRPO"), OUTAGE_S, "MM2FlowLagAboveRPO", 2)
            seen["alert"] = time.monotonic() - cut
            # The outage lasts its declared time: a bounded poll on the clock it is measured by.
            wait_until(lambda: time.monotonic() - cut >= OUTAGE_S, OUTAGE_S + 5, "the outage's 90 s", poll_s=1)
            seen["peak"] = _lag_s(stack)
        finally:
            wan.reshape(TAP, SHAPE)
            seen["back"] = time.monotonic()

    _, streamed = streamed_during(outputs, ("primary", "orders"), ("dr", "primary.orders"), outage)
    caught_up = wait_until(lambda: _lag_s(stack) == 0, BOUND_S, "lag back to 0") and time.monotonic() - seen["back"]
    wait_until(lambda: "MM2FlowLagAboveRPO" not in prometheus.firing(), BOUND_S, "the RPO alert to clear", 2)
    print(
        f"\n[wan-faults] link down {OUTAGE_S:.0f}s: status named primary after {seen['status']:.0f}s, the alert fired "
        f"after {seen['alert']:.0f}s; lag peak {seen['peak']:.0f}s; caught up {caught_up:.0f}s after the link came "
        f"back; longest gap {streamed.longest_gap_s:.0f}s; {streamed.sent} sent, {streamed.missing} missing"
    )
    assert streamed.missing == 0
    assert run_status(outputs, tmp_path).returncode == 0, "bin/status healthy again once caught up"
    run = run_stage(outputs, tmp_path / "report.json", os.environ)
    assert run.code == 0, run.summary()
    checks = run.report["flows"][FLOW]["topics"]["orders"]["checks"]
    assert checks["completeness"]["status"] == "pass" and checks["duplicates"]["status"] == "pass", run.summary()
