"""The emulated WAN link (components/platform/local/wan.py) behaves as the link it declares.

Two network namespaces joined by vde2 switches and wirefilter, 50 ms round trip at 50 Mbit/s:
- a ping's round trip is within 10% of the declared RTT;
- TCP with a fixed small window moves window/RTT within 15% (the window the receiver really
  advertised, which Linux sizes at about 1.25x the 64 KiB asked for);
- bulk TCP with autotuned windows reaches the declared rate within 15%;
- `down` leaves no namespace, forwarder or socket behind.
The CPU the forwarders spend at that rate is printed. Needs root (namespaces, TAP devices), as the
docker lane does.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.platform.local.wan import REALTIME, EmulatedLink, LinkShape, Side, namespaces
from tests.integration.harness import free_port_block, wait_until
from tests.tools import required_tool

SHAPE = LinkShape(rtt_ms=50.0, bandwidth_bps=50e6)


@pytest.fixture(scope="module")
def link(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmulatedLink]:
    if os.geteuid() != 0:  # like the docker lane's dockerd: the suite runs as root
        pytest.fail("an emulated link needs root (network namespaces, TAP devices). Fix: run bin/test as root.")
    for tool, package in (*((t, "vde2") for t in ("vde_switch", "vde_plug2tap", "wirefilter")), ("iperf3", "iperf3")):
        required_tool(tool, package)
    tag = f"mm2-wan-{uuid.uuid4().hex[:6]}"
    run_dir = tmp_path_factory.mktemp("wan") / "link"
    with EmulatedLink(tag, SHAPE, run_dir) as emulated:
        yield emulated
    assert list(namespaces(tag)) == [], "namespaces left behind"
    assert not run_dir.exists(), "the link's sockets left behind"
    assert not _forwarders(str(run_dir)), "forwarders left running"


def _forwarders(run_dir: str) -> list[int]:
    """Pids of processes whose command line names `run_dir` (the link's switches and plugs)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if run_dir.encode() in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def _cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds of `pids` so far."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _iperf(a: Side, b: Side, *extra: str) -> dict[str, Any]:
    """One iperf3 run a -> b; the sender's end-of-run figures."""
    port = free_port_block(1)
    # At the forwarders' priority: the endpoints measure the link, not the machine's load.
    server = subprocess.Popen(
        b.run(*REALTIME, "iperf3", "-s", "-1", "-B", b.address, "-p", str(port)), stdout=subprocess.DEVNULL
    )
    try:
        listening = b.run("ss", "-Hltn", f"sport = :{port}")
        wait_until(lambda: subprocess.run(listening, capture_output=True, text=True).stdout.strip(), 10, "iperf3", 0.1)
        client = a.run(*REALTIME, "iperf3", "-c", b.address, "-p", str(port), "-t", "4", "-J", *extra)
        done = subprocess.run(client, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr
        sender: dict[str, Any] = json.loads(done.stdout)["end"]["streams"][0]["sender"]
        return sender
    finally:
        server.wait(15)


def test_a_round_trip_takes_the_declared_rtt(link: EmulatedLink) -> None:
    a, b = link.sides
    ping = subprocess.run(
        a.run("ping", "-c", "10", "-i", "0.2", b.address), capture_output=True, text=True, check=False
    )
    assert ping.returncode == 0, ping.stdout + ping.stderr
    average = float(ping.stdout.rsplit("=", 1)[1].split("/")[1])
    print(f"\n[wan] ping {average:.1f} ms over a declared {SHAPE.rtt_ms:.0f} ms")
    assert abs(average - SHAPE.rtt_ms) <= 0.1 * SHAPE.rtt_ms


def test_a_fixed_window_moves_window_over_rtt(link: EmulatedLink) -> None:
    sent = _iperf(*link.sides, "-w", "64K")
    window, rtt_s = sent["max_snd_wnd"], sent["mean_rtt"] / 1e6
    predicted = window * 8 / rtt_s
    print(f"\n[wan] 64 KiB asked, {window} B advertised: {sent['bits_per_second'] / 1e6:.1f} Mbit/s, "
          f"window/RTT {predicted / 1e6:.1f}")  # fmt: skip
    assert abs(sent["bits_per_second"] - predicted) <= 0.15 * predicted


def test_bulk_tcp_reaches_the_declared_rate(link: EmulatedLink) -> None:
    assert SHAPE.bandwidth_bps is not None
    forwarders = _forwarders(str(link.run_dir))
    assert len(forwarders) == 5, forwarders  # two switches, two plugs, wirefilter
    before = _cpu_s(forwarders)
    sent = _iperf(*link.sides)
    cpu = (_cpu_s(forwarders) - before) / sent["seconds"]
    print(f"\n[wan] bulk {sent['bits_per_second'] / 1e6:.1f} Mbit/s over a declared {SHAPE.bandwidth_bps / 1e6:.0f}; "
          f"the forwarders used {cpu:.2f} CPU")  # fmt: skip
    assert abs(sent["bits_per_second"] - SHAPE.bandwidth_bps) <= 0.15 * SHAPE.bandwidth_bps
