"""The emulated link's shape as wirefilter's options (the link itself: tests/integration/test_wan_emulation.py)."""

from __future__ import annotations

from pathlib import Path

from components.platform.local.wan import EmulatedLink, LinkShape


def test_the_round_trip_is_split_between_the_two_directions_and_the_rate_is_in_bytes() -> None:
    assert LinkShape(rtt_ms=50).wirefilter_args() == ["-d", "25"]
    assert LinkShape(rtt_ms=25, bandwidth_bps=200e6, loss_pct=0.01).wirefilter_args() == [
        *("-d", "12.5", "-l", "0.01", "-b", "25000000")
    ]


def test_each_link_has_its_own_namespaces_and_subnet(tmp_path: Path) -> None:
    a, b = EmulatedLink("mm2-x", LinkShape(rtt_ms=1), tmp_path, subnet=3).sides
    assert (a.namespace, a.address, b.namespace, b.address) == ("mm2-x-a", "198.18.3.1", "mm2-x-b", "198.18.3.2")
    assert a.run("ping", b.address) == ["ip", "netns", "exec", "mm2-x-a", "ping", "198.18.3.2"]
