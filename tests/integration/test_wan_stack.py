"""A local stack whose two datacenters are joined by a declared link runs across it, emulated.

The dev stack with `dr` moved to datacenter dc2 and `mm2:links` dc1<->dc2 at 40 ms and 100 Mbit/s:
`pulumi up` puts each datacenter's brokers and workers in a network namespace of the stack's,
on addresses in 198.18.0.0/15, joined by the emulated link (components/platform/local/wan.py).
The test checks, on the running stack:
- the clusters advertise their datacenters' addresses, and the machine reaches both directly
  (a round trip well under the link's);
- between the datacenters a round trip takes the link's rtt;
- MM2's workers (in dc2, beside dr) fetch from primary across the link, and a record produced
  on primary arrives on dr;
- a new rtt and bandwidth reshape the link in place, with no broker or worker restarted (the
  bandwidth-delay product is kept, so no derived setting changes);
- a forwarder gone is found by a refresh and started again by `up`, the processes left running;
and after `pulumi destroy`: no namespace, forwarder or route of the stack is left. A namespace of
the stack's name already on the machine fails `up` before any broker starts, naming it.
Needs root (namespaces, TAP devices), as the docker lane does.
"""

from __future__ import annotations

import ipaddress
import subprocess
import uuid
from pathlib import Path

from components.platform.local import process as proc
from components.platform.local.layout import NETWORK_PATH
from components.platform.local.wan import Wan, namespaces
from tests.integration.emulated import dev_across_a_link, require_emulation
from tests.integration.harness import arrives, deployed, produce_one, running

RTT_MS = 40.0
TAP = "wan0"  # the stack's only link (components/topology/emulation.py names link k `wan<k>`)
BENCHMARK_RANGE = ipaddress.ip_network("198.18.0.0/15")


def _ping_ms(command: list[str]) -> float:
    done = subprocess.run([*command, "-c", "5", "-i", "0.2"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return float(done.stdout.rsplit("=", 1)[1].split("/")[1])


def _hosts(bootstrap: str) -> set[str]:
    return {server.rsplit(":", 1)[0] for server in bootstrap.split(",")}


def test_a_stack_across_an_emulated_link(tmp_path: Path) -> None:
    require_emulation()
    with running(tmp_path, dev_across_a_link(rtt=f"{RTT_MS:g}ms", bandwidth="100Mbit")) as stack:
        prefix = f"mm2-{stack.name}-"
        assert sorted(namespaces(prefix)) == [f"{prefix}dc1", f"{prefix}dc2"]
        outputs = stack.outputs()
        [primary] = _hosts(outputs["clusters"]["primary"]["bootstrap"])
        [dr] = _hosts(outputs["clusters"]["dr"]["bootstrap"])
        assert primary != dr
        assert {ipaddress.ip_address(primary), ipaddress.ip_address(dr)} <= set(BENCHMARK_RANGE.hosts())

        direct = _ping_ms(["ping", primary])
        across = _ping_ms(["ip", "netns", "exec", f"{prefix}dc2", "ping", primary])
        print(f"\n[wan-stack] machine -> dc1 {direct:.2f} ms; dc2 -> dc1 {across:.1f} ms over a declared {RTT_MS:g}")
        assert direct < RTT_MS / 4, "the machine's own path must not cross the link"
        assert abs(across - RTT_MS) <= 0.1 * RTT_MS

        key = uuid.uuid4().hex.encode()
        produce_one(outputs, "primary", "orders", key, b"across the link")
        assert arrives(outputs, "dr", "primary.orders", key, 120, "wan-stack")
        # The source consumer of the workers (in dc2) holds connections to primary's broker in dc1.
        sockets = subprocess.run(
            ["ip", "netns", "exec", f"{prefix}dc2", "ss", "-Htn", "state", "established", "dst", primary],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert sockets.strip(), "no connection from dc2 to primary crosses the link"

        # A new shape is reshaped in place: with the bandwidth-delay product kept (twice the rtt,
        # half the rate), no derived setting changes, so no broker or worker restarts.
        before = {marker: proc.find_pids(marker) for marker in stack.markers()}
        stack.config["config"]["mm2:links"]["dc1<->dc2"] = {"rtt": f"{2 * RTT_MS:g}ms", "bandwidth": "50Mbit"}
        stack.write_config()
        assert f"emulated link dc1<->dc2: now rtt {2 * RTT_MS:g} ms, 50 Mbit/s" in stack.up().stdout
        assert {marker: proc.find_pids(marker) for marker in stack.markers()} == before
        slower = _ping_ms(["ip", "netns", "exec", f"{prefix}dc2", "ping", primary])
        assert abs(slower - 2 * RTT_MS) <= 0.1 * 2 * RTT_MS, f"{slower:.1f} ms after the rtt became {2 * RTT_MS:g}"

        # A forwarder gone is drift a refresh finds: `up --refresh` starts the link's forwarders
        # again and leaves the brokers and workers running.
        wan = Wan(stack.run_dir / NETWORK_PATH)
        wan.cut(TAP)
        assert not wan.alive(TAP)
        assert "a forwarder was gone, started again" in stack.up("--refresh").stdout
        assert wan.alive(TAP)
        assert {marker: proc.find_pids(marker) for marker in stack.markers()} == before
        assert _ping_ms(["ip", "netns", "exec", f"{prefix}dc2", "ping", primary]) >= RTT_MS
    assert list(namespaces(prefix)) == [], "namespaces left behind by destroy"
    routes = subprocess.run(["ip", "-4", "route", "show"], capture_output=True, text=True, check=True).stdout
    assert primary not in routes and dr not in routes, routes


def test_a_namespace_already_there_fails_up_before_anything_starts(tmp_path: Path) -> None:
    require_emulation()
    with deployed(tmp_path, dev_across_a_link(rtt="10ms", bandwidth="100Mbit")) as stack:
        taken = f"mm2-{stack.name}-dc1"
        subprocess.run(["ip", "netns", "add", taken], check=True)
        try:
            failed = stack.pulumi("up", "--yes", "--skip-preview", check=False)
            assert failed.returncode != 0
            assert f"already in use on this machine (namespace {taken})" in failed.stdout, failed.stdout[-3000:]
            assert "Fix: destroy the stack that holds it" in failed.stdout
            assert list(namespaces(f"mm2-{stack.name}-")) == [taken], "only the namespace that was there"
            assert stack.markers() == [], "no broker or worker started"
        finally:
            subprocess.run(["ip", "netns", "delete", taken], check=False)
