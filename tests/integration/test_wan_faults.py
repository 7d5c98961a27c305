"""Link faults on real processes: the dev stack with dr in dc2, behind an emulated link of 20 ms,
100 Mbit/s and 1% packet loss (components/platform/local/wan.py), its flow's RPO 15 s.

1. Under 1% loss a backlog crosses and every record arrives.
2. The link down for 90 s under a stream of about 50 records/s, then back: `bin/status` names the
   side the workers cannot reach while it is down (this machine still reaches both),
   MM2FlowLagAboveRPO fires in a real Prometheus and clears after; no record of the stream is
   missing, and the Spark stage passes the whole flow (duplicates only as at-least-once allows).
The figures (time to detect, longest gap, lag peak, time to catch up) are printed.
Needs root (namespaces, TAP devices), as the docker lane does.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from components.monitoring.rules import Thresholds
from components.platform.local.layout import NETWORK_PATH
from components.platform.local.wan import LinkShape, Wan
from tests.integration.emulated import dev_across_a_link, require_emulation
from tests.integration.harness import (
    TestStack,
    free_port_block,
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
SHAPE = LinkShape(rtt_ms=20.0, bandwidth_bps=100e6, loss_pct=1.0)
SCRAPE = "2s"
FAST = Thresholds(window="30s", latency_for="10s", failure_for="6s", lag_for="6s")
BOUND_S = 120.0
TAP = "wan0"  # the stack's only link (components/topology/emulation.py names link k `wan<k>`)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestStack, Prometheus]]:
    require_emulation()
    cfg = dev_across_a_link(rtt="20ms", bandwidth="100Mbit", loss="1%")
    cfg["config"]["mm2:workerGroups"]["mm2"]["lagPort"] = free_port_block(1)
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


def test_a_link_down_for_90s_loses_nothing_and_is_reported(world: tuple[TestStack, Prometheus], tmp_path: Path) -> None:
    stack, prometheus = world
    outputs = stack.outputs()
    wan = Wan(stack.run_dir / NETWORK_PATH)
    seen: dict[str, float] = {}

    def outage() -> None:
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
