"""How fast a flow copies: MM2's own `byte-rate` (MirrorSourceConnector, per remote topic
partition: bytes per second of the records its tasks got acknowledged by the target, averaged
over the workers' metrics window, 30 s x 2 samples by default), summed over the flow's partitions
and over its worker group's workers, as their JMX exporter agents serve it (`metricsPort`,
exported as `connect.<group>.metricsUrls`). Against the flow's declared link, that says whether
the link is what holds a flow back (components/ops/stall.py). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from components.monitoring.jmx_exporter import BYTE_RATE
from components.ops.exposition import samples
from components.outputs.contract import FlowExport, LinkExport

BOTTLENECK_SHARE = 0.7  # copying at least this share of its link's bandwidth: the link holds the flow


@dataclass(frozen=True)
class Throughput:
    """A flow's copy rate as its workers measure it; `bytes_per_s` None: not measured (`why`)."""

    bytes_per_s: float | None
    link: LinkExport | None = None
    why: str = ""

    @property
    def link_share(self) -> float | None:
        """The copy rate over the link's bandwidth; None without either."""
        if self.bytes_per_s is None or self.link is None:
            return None
        return self.bytes_per_s * 8 / self.link.bandwidth_bps

    @property
    def link_bound(self) -> bool:
        """Whether the flow copies near its link's bandwidth (BOTTLENECK_SHARE or more)."""
        share = self.link_share
        return share is not None and share >= BOTTLENECK_SHARE


def flow_throughput(flow: FlowExport, texts: Sequence[str | None], why: str = "") -> Throughput:
    """The flow's copy rate from its workers' /metrics texts (None: a worker that did not answer).
    A worker's beans carry the flow's target (and, on Kafka 3.5+, its source) as labels."""
    if not texts or all(t is None for t in texts):
        return Throughput(None, flow.link, why or "no worker's metrics answered")
    remotes = set(flow.topics.values())
    total, seen = 0.0, False
    for text in texts:
        for labels, value in samples(text, BYTE_RATE):
            mine = labels.get("source") == flow.source or (not labels.get("source") and labels.get("topic") in remotes)
            if labels.get("target") == flow.target and mine:
                total, seen = total + value, True
    if not seen:
        return Throughput(None, flow.link, "its workers export no byte-rate for it yet (no task has copied a record)")
    return Throughput(total, flow.link)


def bits_text(bytes_per_s: float) -> str:
    """A rate for people, in bits per second as links are sold: 3.62 Mbit/s."""
    bps = bytes_per_s * 8
    for unit, size in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= size:
            return f"{bps / size:.3g} {unit}"
    return f"{bps:.0f} bit/s"


def link_text(link: LinkExport) -> str:
    return f"{link.name} ({bits_text(link.bandwidth_bps / 8)}, rtt {link.rtt_ms:g} ms)"


def throughput_line(view: Throughput | None) -> str | None:
    """The status table's line for a flow's copy rate; None when its workers serve no metrics."""
    if view is None:
        return None
    if view.bytes_per_s is None:
        return f"  throughput - ({view.why})"
    line = f"  throughput {bits_text(view.bytes_per_s)} over the workers' last minute (MM2 byte-rate)"
    if view.link is not None:
        line += f", {view.link_share:.0%} of the link {link_text(view.link)}"
    return line
