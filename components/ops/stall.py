"""A flow that falls behind while Connect reports it running, which no connector state shows:
either its workers are not getting records across from the far side (a WAN link down, a
firewall), or its link is full and the source produces faster than the link carries.

`bin/status` runs where it reaches every cluster, which the workers may not: it reads the lag the
group's lag exporter measures, and when a flow is further behind than its RPO (STALL_FLOOR_S
without one) while its source connector and every task are RUNNING, it tells which:
- the flow copies at BOTTLENECK_SHARE or more of its declared link's bandwidth (MM2's byte-rate,
  components/ops/throughput.py): the link is the bottleneck;
- copying less, but still copying (1% of the link, 1 KiB/s without one), it copies too slowly for
  a reason other than the link, and the next steps say where to look;
- otherwise it names the side the workers read from across the distance (the source, when they
  are stored on the target) and the next step, with the copy rate when the workers serve it.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from components.ops.status_view import STATE_OK, ConnectorView
from components.ops.throughput import Throughput, bits_text, link_text
from components.outputs.contract import FlowExport, LinkExport

STALL_FLOOR_S = 60.0  # behind by more than this, with no RPO declared, while running: stalled
COPYING_SHARE = 0.01  # a flow copying less than this share of its link is getting no records
COPYING_FLOOR_BPS = 1024.0  # the same, for a flow without a declared link (bytes/s)


def stall_problem(
    flow: FlowExport,
    workers_with: str,
    lag_s: float | None,
    connectors: Sequence[ConnectorView],
    throughput: Throughput | None = None,
) -> str | None:
    """Why the flow falls behind though running (its link full, or a side unreachable); None
    when it is not behind."""
    bound = float(flow.rpo_seconds) if flow.rpo_seconds else STALL_FLOOR_S
    source = next((c for c in connectors if c.role == "source"), None)
    running = source is not None and source.state == STATE_OK and all(t.state == STATE_OK for t in source.tasks)
    if lag_s is None or lag_s <= bound or not running:
        return None
    bound_text = f"its RPO of {bound:.0f}s" if flow.rpo_seconds else f"{bound:.0f}s"
    behind = f"{lag_s:.0f}s behind (more than {bound_text})"
    if throughput is not None and throughput.link is not None and throughput.link_bound:
        return f"{behind} {_link_bound(flow, workers_with, throughput, throughput.link)}"
    far = {flow.target: flow.source, flow.source: flow.target}.get(workers_with)
    side = far or f"{flow.source} or {flow.target}"
    if throughput is not None and _copying(throughput):
        return f"{behind} {_too_slow(flow, side, throughput)}"
    rate = ""
    if throughput is not None and throughput.bytes_per_s is not None:
        rate = f" (copying {bits_text(throughput.bytes_per_s)} over the workers' last minute)"
    return (
        f"{behind} while its source connector and every task run{rate}: the "
        f"workers (stored on {workers_with or 'their cluster'}) are not getting records from {side}, which "
        f"they reach across the network. Next step: check the path from the workers to {side} (a WAN link "
        "down, a firewall, DNS); this machine may reach both clusters while the workers do not"
    )


def _copying(throughput: Throughput) -> bool:
    """Whether the flow still copies: at least COPYING_SHARE of its link, or COPYING_FLOOR_BPS
    without one. Below that, the workers' mean over their last minute is what was copied before
    the records stopped coming."""
    if throughput.bytes_per_s is None:
        return False
    share = throughput.link_share
    return share >= COPYING_SHARE if share is not None else throughput.bytes_per_s >= COPYING_FLOOR_BPS


def _too_slow(flow: FlowExport, side: str, throughput: Throughput) -> str:
    rate = bits_text(throughput.bytes_per_s or 0.0)
    link = "" if throughput.link is None else f", {throughput.link_share:.0%} of the link {link_text(throughput.link)}"
    return (
        f"while copying {rate}{link}: it copies slower than the source produces, and the link is not what "
        f"holds it. Next step: more tasks (mm2:flows.{flow.name}.tasksMax, up to the source's partitions), the "
        f"workers' CPU, the target's brokers, or a degraded path from the workers to {side}"
    )


def _link_bound(flow: FlowExport, workers_with: str, throughput: Throughput, link: LinkExport) -> str:
    """The bottleneck's cause and what takes fewer bytes across: the records cross as the source's
    producers batched them when the workers fetch across, as MM2's producer batches them when it
    writes across."""
    smaller = (
        f"compression.type on the producers writing to {flow.source}, whose batches cross as stored"
        if workers_with == flow.target
        else f"producer.compression.type in mm2:clusters.{flow.target}.client, for MM2's producer that crosses"
    )
    return (
        f"while copying {bits_text(throughput.bytes_per_s or 0.0)}, {throughput.link_share:.0%} of the link "
        f"{link_text(link)}: the link is the bottleneck; the source produces faster than the link "
        f"carries and the lag grows while it does. Next step: a wider link (then mm2:links), or fewer bytes "
        f"across it ({smaller})"
    )
