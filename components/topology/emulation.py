"""Where a local stack's datacenters live when the links between them are emulated.

A declared link (`mm2:links`) between two datacenters that both hold local clusters is emulated
on this machine, at the packet level (components/platform/local/wan.py does the I/O): each such
datacenter gets a network namespace of the stack, and its brokers and workers listen on the
datacenter's *home* address inside it. Traffic between two datacenters crosses their link (the
emulated delay, loss and rate); the machine itself (pulumi's providers, bin/status, the Spark
stage, tests) reaches every home address over a direct, unshaped veth.

All addresses come from one /24 of the range reserved for network benchmarks (198.18.0.0/15,
RFC 2544), picked from the stack's run root, so two stacks on a machine rarely meet (and the
provider refuses to build on a /24 already routed):

- `.1` .. `.16`: the datacenters' home addresses (on the namespace's loopback);
- `.64` + 4i: datacenter i's veth, `+1` on the machine's side, `+2` inside;
- `.128` + 4k: link k's TAP devices, `+1` in its first datacenter, `+2` in its second.

Pure: no I/O. The plan travels to the provider as plain data (`to_inputs` / `from_inputs`).
"""

from __future__ import annotations

import dataclasses
import zlib

from components.topology.emulated_network import Datacenter, EmulatedLink, NetworkPlan
from components.topology.model import LOOPBACK, Platform, Topology

BLOCKS = 512  # /24s in 198.18.0.0/15
MAX_DATACENTERS = 16
MAX_LINKS = 32
HOME_OFFSET, VETH_OFFSET, TAP_OFFSET = 1, 64, 128


def stack_block(run_root: str) -> int:
    """The stack's /24 among BLOCKS, from its run root (one per project and stack on a machine)."""
    return zlib.crc32(run_root.encode()) % BLOCKS


def block_prefix(block: int) -> str:
    """ "198.19.5" for block 261: the first three octets of the /24."""
    return f"198.{18 + block // 256}.{block % 256}"


def emulated_datacenters(topology: Topology) -> tuple[str, ...]:
    """The datacenters a declared link joins where both ends hold a local cluster, sorted."""
    local = {c.datacenter for c in topology.clusters.values() if c.platform is Platform.LOCAL and c.datacenter}
    return tuple(sorted({dc for link in topology.links if {link.a, link.b} <= local for dc in (link.a, link.b)}))


def emulation_problems(topology: Topology) -> list[str]:
    """What this module cannot lay out: more datacenters or links than one /24 holds."""
    datacenters = emulated_datacenters(topology)
    if len(datacenters) > MAX_DATACENTERS:
        return [
            f"mm2:links: {len(datacenters)} datacenters with local clusters are joined by links, and the local "
            f"platform emulates at most {MAX_DATACENTERS}. Fix: declare links between fewer datacenters."
        ]
    links = [link for link in topology.links if {link.a, link.b} <= set(datacenters)]
    if len(links) > MAX_LINKS:
        return [f"mm2:links: {len(links)} links to emulate, at most {MAX_LINKS}. Fix: declare fewer links."]
    return []


def emulation_warnings(topology: Topology) -> list[str]:
    """What a declared link does not reach on this machine: a docker cluster or worker group in a
    datacenter a link joins runs on the host network, so its traffic does not cross the link."""
    linked = {dc for link in topology.links for dc in (link.a, link.b)}
    warnings = [
        f"mm2:clusters.{alias}: a docker cluster in datacenter {c.datacenter}, which mm2:links joins to another; "
        "the docker platform runs it on this machine's network, so its traffic does not cross the link (only local "
        "clusters run behind an emulated link). The client settings derived from the link still apply"
        for alias, c in sorted(topology.clusters.items())
        if c.platform is Platform.DOCKER and c.datacenter in linked
    ]
    for name, group in sorted(topology.worker_groups.items()):
        home = topology.clusters[group.cluster].datacenter
        if group.platform is Platform.DOCKER and home in linked:
            warnings.append(
                f"mm2:workerGroups.{name}: docker workers stored on {group.cluster} (datacenter {home}, which "
                "mm2:links joins to another) run on this machine's network: what they fetch and write does not "
                "cross the link"
            )
    return warnings


def network_plan(topology: Topology, stack: str, run_root: str) -> NetworkPlan | None:
    """The namespaces and links that emulate the stack's links; None when none is emulated."""
    names = emulated_datacenters(topology)
    if not names or emulation_problems(topology):
        return None
    block = stack_block(run_root)
    prefix = block_prefix(block)
    slug = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in stack)
    datacenters = tuple(
        Datacenter(
            name=name,
            namespace=f"mm2-{slug}-{name}",
            home=f"{prefix}.{HOME_OFFSET + i}",
            outer_if=f"mm2n{block}d{i}",  # at most 9 of the kernel's 15 characters
            outer_address=f"{prefix}.{VETH_OFFSET + 4 * i + 1}",
            inner_address=f"{prefix}.{VETH_OFFSET + 4 * i + 2}",
        )
        for i, name in enumerate(names)
    )
    index = {dc.name: i for i, dc in enumerate(datacenters)}
    joined = [link for link in topology.links if {link.a, link.b} <= set(names)]
    links = tuple(
        EmulatedLink(
            name=link.name,
            a=index[link.a],
            b=index[link.b],
            tap=f"wan{k}",
            a_address=f"{prefix}.{TAP_OFFSET + 4 * k + 1}",
            b_address=f"{prefix}.{TAP_OFFSET + 4 * k + 2}",
            rtt_ms=link.rtt_ms,
            bandwidth_bps=link.bandwidth_bps,
            loss_pct=link.loss_pct,
        )
        for k, link in enumerate(joined)
    )
    return NetworkPlan(block=f"{prefix}.0/24", datacenters=datacenters, links=links)


def with_network(topology: Topology, stack: str, run_root: str) -> Topology:
    """The topology with its emulated network: each local cluster in an emulated datacenter, and
    each local worker group on such a cluster, listens on the datacenter's home address."""
    plan = network_plan(topology, stack, run_root)
    if plan is None:
        return topology
    home = {dc.name: dc.home for dc in plan.datacenters}

    def host(alias: str) -> str:
        cluster = topology.clusters[alias]
        placed = cluster.platform is Platform.LOCAL and cluster.datacenter in home
        return home[cluster.datacenter] if placed and cluster.datacenter else LOOPBACK

    clusters = {alias: dataclasses.replace(c, host=host(alias)) for alias, c in topology.clusters.items()}
    groups = {
        name: dataclasses.replace(g, host=host(g.cluster)) if g.platform is Platform.LOCAL and not g.url else g
        for name, g in topology.worker_groups.items()
    }
    return dataclasses.replace(topology, clusters=clusters, worker_groups=groups, network=plan)
