"""The emulated network of a local stack with links (type ``pulumi-python:dynamic/local:Network``).

It builds what `components.topology.emulation.NetworkPlan` lays out: per datacenter a network
namespace whose loopback holds the datacenter's home address and whose veth reaches the machine
(a route on the machine sends the home address there, unshaped); per link a TAP device in each
of its two namespaces, joined by vde switches and `wirefilter` (components/platform/local/wan.py),
and a route in each namespace sending the other side's home address across it.

- create: refuses a /24 the machine already routes, or a namespace that already exists (left
  by another stack, or a crash); on any failure removes whatever it made.
- update: a link's new shape restarts its wirefilter only (brokers and workers keep running).
- replace: any other change (datacenters, addresses) rebuilds it, after the processes in it
  were stopped (they depend on it).
- read: reports ``healthy: false`` when a namespace or forwarder is gone, so `pulumi refresh`
  shows the drift and the next `up` repairs it: the forwarders of a link that lost one, or the
  whole network when a namespace is gone (after a reboot, with every process in it).
- delete: stops the forwarders, deletes the veths (their routes go with them) and the namespaces.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider, UpdateResult

from components.platform.local.wan import (
    LinkShape,
    Side,
    Wan,
    WanError,
    check_can_emulate,
    namespaces,
    wait_reachable,
)
from components.rpc_values import plain
from components.topology.emulated_network import INNER_VETH, EmulatedLink, NetworkPlan

LOG = logging.getLogger("dynamic_provider.network")


def _ip(step: str, *args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise WanError(f"emulated network: {step} failed: `ip {' '.join(args)}`: {done.stderr.strip()}")


def network_problems(plan: NetworkPlan) -> list[str]:
    """Why this machine cannot build the plan, as preview problems naming `mm2:links`."""
    try:
        check_can_emulate()
    except WanError as exc:
        names = ", ".join(link.name for link in plan.links)
        return [
            f"mm2:links: the local platform emulates {names} by running each datacenter's brokers and workers "
            f"in a network namespace of its own; {exc}"
        ]
    return []


def _described(link: EmulatedLink) -> str:
    loss = f", {link.loss_pct:g}% loss" if link.loss_pct else ""
    return f"rtt {link.rtt_ms:g} ms, {link.bandwidth_bps / 1e6:g} Mbit/s{loss}"


def _shape(link: EmulatedLink) -> LinkShape:
    return LinkShape(rtt_ms=link.rtt_ms, bandwidth_bps=link.bandwidth_bps, loss_pct=link.loss_pct)


def _in_use(plan: NetworkPlan) -> list[str]:
    """What already holds the plan's /24 or its namespaces' names on this machine."""
    prefix = plan.block.rsplit(".", 1)[0] + "."
    routes = subprocess.run(["ip", "-4", "route", "show"], capture_output=True, text=True, check=False).stdout
    found = [f"route `{line}`" for line in routes.splitlines() if line.startswith(prefix)]
    existing = set(namespaces(""))
    found += [f"namespace {dc.namespace}" for dc in plan.datacenters if dc.namespace in existing]
    return found


def build(plan: NetworkPlan, run_dir: Path) -> None:
    """Everything the plan lays out, or nothing (a failure removes what was made)."""
    check_can_emulate()
    if taken := _in_use(plan):
        raise WanError(
            f"emulated network {plan.block}: already in use on this machine ({'; '.join(taken)}). Fix: destroy "
            "the stack that holds it, or remove what a crashed run left (`ip netns delete <name>`)."
        )
    wan = Wan(run_dir)
    try:
        for dc in plan.datacenters:
            wan.namespace(dc.namespace)
            _ip(f"home address of {dc.name}", "-n", dc.namespace, "addr", "add", f"{dc.home}/32", "dev", "lo")
            _ip(f"veth of {dc.name}", "link", "add", dc.outer_if, "type", "veth", "peer", "name", INNER_VETH,
                "netns", dc.namespace)  # fmt: skip
            _ip(f"veth of {dc.name}", "addr", "add", f"{dc.outer_address}/30", "dev", dc.outer_if)
            _ip(f"veth of {dc.name}", "-n", dc.namespace, "addr", "add", f"{dc.inner_address}/30", "dev", INNER_VETH)
            _ip(f"veth of {dc.name}", "-n", dc.namespace, "link", "set", INNER_VETH, "up")
            _ip(f"veth of {dc.name}", "link", "set", dc.outer_if, "up")
            _ip(f"route to {dc.name}", "route", "add", f"{dc.home}/32", "via", dc.inner_address, "dev", dc.outer_if)
        for link in plan.links:
            a, b = plan.datacenters[link.a], plan.datacenters[link.b]
            wan.link(link.tap, _ends(plan, link), link.tap, 30, _shape(link))
            for here, there, via in ((a, b, link.b_address), (b, a, link.a_address)):
                _ip(f"route {here.name} -> {there.name}", "-n", here.namespace, "route", "add", f"{there.home}/32",
                    "via", via, "dev", link.tap, "src", here.home)  # fmt: skip
            wait_reachable(Side(a.namespace, a.home), b.home)
    except BaseException:
        _down(plan, run_dir)
        raise


def _down(plan: NetworkPlan, run_dir: Path) -> None:
    Wan(run_dir).down((dc.namespace for dc in plan.datacenters), (dc.outer_if for dc in plan.datacenters))


def _namespaces_exist(plan: NetworkPlan) -> bool:
    listed = set(namespaces(""))
    return all(dc.namespace in listed for dc in plan.datacenters)


def healthy(plan: NetworkPlan, run_dir: Path) -> bool:
    """Every namespace exists and every link's forwarders run."""
    wan = Wan(run_dir)
    return _namespaces_exist(plan) and all(wan.alive(link.tap) for link in plan.links)


def _ends(plan: NetworkPlan, link: EmulatedLink) -> tuple[Side, Side]:
    a, b = plan.datacenters[link.a], plan.datacenters[link.b]
    return Side(a.namespace, link.a_address), Side(b.namespace, link.b_address)


def repair(plan: NetworkPlan, run_dir: Path) -> None:
    """What a refresh found gone, made again: the whole network when a namespace is gone (after
    a reboot, with every process in it), else the forwarders of each link that lost one, with
    the brokers and workers in the namespaces left running."""
    if not _namespaces_exist(plan):
        _down(plan, run_dir)
        build(plan, run_dir)
        return
    wan = Wan(run_dir)
    for link in plan.links:
        if not wan.alive(link.tap):
            LOG.info(f"emulated link {link.name}: a forwarder was gone, started again")
            wan.forwarders(link.tap, _ends(plan, link), link.tap, _shape(link))


def _plan(props: Mapping[str, Any]) -> NetworkPlan:
    return NetworkPlan.from_inputs(plain(props["plan"]))


def _structure(plan: NetworkPlan) -> tuple[Any, ...]:
    """What a change of rebuilds: everything but the links' shapes."""
    return (
        plan.block,
        plan.datacenters,
        tuple((k.name, k.a, k.b, k.tap, k.a_address, k.b_address) for k in plan.links),
    )


class NetworkProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        plan = _plan(props)
        build(plan, Path(props["run_dir"]))
        homes = ", ".join(f"{dc.name} at {dc.home} (namespace {dc.namespace})" for dc in plan.datacenters)
        links = ", ".join(f"{link.name} {_described(link)}" for link in plan.links)
        LOG.info(f"emulated network {plan.block}: {homes}; {links}")
        return CreateResult(id_=_plan(props).block, outs={**props, "healthy": True})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        old, new = _plan(olds), _plan(news)
        rebuild = _structure(old) != _structure(new) or olds.get("run_dir") != news.get("run_dir")
        changed = rebuild or old != new or olds.get("healthy") is False
        return DiffResult(changes=changed, replaces=["plan"] if rebuild else [], delete_before_replace=True)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        old, new, run_dir = _plan(olds), _plan(news), Path(news["run_dir"])
        repair(old, run_dir)
        wan = Wan(run_dir)
        for before, after in zip(old.links, new.links, strict=True):
            if before != after:
                LOG.info(f"emulated link {after.name}: now {_described(after)} (its wirefilter restarted)")
                wan.reshape(after.tap, _shape(after))
        return UpdateResult(outs={**news, "healthy": True})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_=id_, outs={**props, "healthy": healthy(_plan(props), Path(props["run_dir"]))})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        _down(_plan(props), Path(props["run_dir"]))


class Network(Resource, module="local", name="Network"):
    """The namespaces and links that emulate a local stack's WAN links."""

    healthy: pulumi.Output[bool]

    def __init__(self, resource_name: str, plan: NetworkPlan, run_dir: str, opts: pulumi.ResourceOptions) -> None:
        super().__init__(
            NetworkProvider(), resource_name, {"plan": plan.to_inputs(), "run_dir": run_dir, "healthy": None}, opts
        )


@dataclass(frozen=True)
class LocalNetwork:
    """What the local platform's processes need of the emulated network: the resource to start
    after, and the plan that says which namespace a host is in."""

    resource: pulumi.Resource
    plan: NetworkPlan

    def namespace_of(self, host: str) -> str | None:
        return self.plan.namespace_of(host)
