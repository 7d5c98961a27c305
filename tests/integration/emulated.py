"""The dev stack across an emulated WAN link (components/platform/local/wan.py), for the tests of
a stack whose datacenters the local platform runs in network namespaces."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.integration.harness import dev_config_with_free_ports
from tests.tools import required_tool


def require_emulation() -> None:
    """Root and vde2, or the test fails naming the fix (nothing skips for a missing tool)."""
    if os.geteuid() != 0:  # like the docker lane's dockerd: the suite runs as root
        pytest.fail("an emulated link needs root (network namespaces, TAP devices). Fix: run bin/test as root.")
    for tool in ("vde_switch", "vde_plug2tap", "wirefilter"):
        required_tool(tool, "vde2")


def dev_across_a_link(**link: str) -> dict[str, Any]:
    """The dev stack on free ports with dr in dc2, behind the link dc1<->dc2 `link` declares."""
    cfg = dev_config_with_free_ports()
    config = cfg["config"]
    config["mm2:clusters"]["dr"]["datacenter"] = "dc2"
    config["mm2:links"] = {"dc1<->dc2": dict(link)}
    return cfg
