"""components/platform/local/network.py without a network: what the preview says when the machine
cannot emulate the links, and what a change of the plan does (reshape in place, or rebuild)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from components.platform.local import network, wan
from components.topology.emulated_network import NetworkPlan
from components.topology.emulation import network_plan
from tests.unit.topology.helpers import wan as wan_topology


def _plan(**link: Any) -> NetworkPlan:
    plan = network_plan(wan_topology(**link), "dev", "/projects/mm2/.mm2/run/dev")
    assert plan is not None
    return plan


def _props(plan: NetworkPlan) -> dict[str, Any]:
    return {"plan": plan.to_inputs(), "run_dir": "/projects/mm2/.mm2/run/dev/wan.network", "healthy": True}


def test_without_root_the_preview_names_the_links_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wan.os, "geteuid", lambda: 1000)
    [problem] = network.network_problems(_plan())
    assert problem.startswith("mm2:links: the local platform emulates dc1<->dc2")
    assert "needs root" in problem and "Fix: run as root" in problem


def test_without_vde2_the_preview_names_the_bootstrap_that_installs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wan.os, "geteuid", lambda: 0)
    monkeypatch.setattr(wan.shutil, "which", lambda tool: None if tool == "wirefilter" else f"/usr/bin/{tool}")
    [problem] = network.network_problems(_plan())
    assert "needs wirefilter" in problem and "bin/bootstrap --wan" in problem


def test_a_new_link_shape_is_an_update_and_new_datacenters_a_rebuild() -> None:
    provider = network.NetworkProvider()
    before = _plan()
    reshaped = provider.diff("id", _props(before), _props(_plan(rtt="100ms")))
    assert reshaped.changes and not reshaped.replaces
    moved = dataclasses.replace(before, block="198.18.9.0/24")
    rebuilt = provider.diff("id", _props(before), _props(moved))
    assert rebuilt.changes and rebuilt.replaces == ["plan"] and rebuilt.delete_before_replace
    assert not provider.diff("id", _props(before), _props(before)).changes


def test_a_network_found_gone_by_a_refresh_is_built_again_at_the_next_up() -> None:
    plan = _plan()
    gone = {**_props(plan), "healthy": False}
    assert network.NetworkProvider().diff("id", gone, _props(plan)).changes
