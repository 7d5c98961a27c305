"""What the preview says about the WAN links flows cross: each derived client setting with its
reason (or the explicit value that replaces it), and a flow whose `peakRate` the link cannot carry.

Apart from links.py because it reads the flow's effective connector config (connectors.py), which
itself applies what links.py derives.
"""

from __future__ import annotations

from components.topology.connectors import flow_connectors
from components.topology.links import (
    KAFKA_BROKER_SOCKET_BUFFER,
    RATE_UNITS,
    derived_broker_settings,
    derived_link_settings,
    format_quantity,
    link_of,
)
from components.topology.model import Flow, Platform, Topology


def derived_lines(topology: Topology, flow: Flow) -> tuple[str, ...]:
    """One line per setting derived from the link the flow's records cross: `flow a->b: <key>
    <value> = <reason>`, and which value the flow's connector gets instead when the stack's
    settings (cluster client overrides, `settings`) set the key to another."""
    derived = derived_link_settings(topology, flow)
    if not derived:
        return ()
    config = flow_connectors(topology, flow).source.config
    lines = []
    for item in derived:
        line = f"flow {flow.name}: {item.key} {item.value} = {item.reason}"
        effective = config.get(item.key)
        if effective is not None and effective != item.value:
            line += f"; overridden by the stack's settings ({effective})"
        lines.append(line)
    return tuple(lines)


def peak_rate_warning(topology: Topology, flow: Flow) -> str | None:
    """The warning when the flow declares a `peakRate` above the bandwidth of the link it crosses."""
    link = link_of(topology, flow)
    if link is None or flow.peak_rate_bps is None or flow.peak_rate_bps <= link.bandwidth_bps:
        return None
    return (
        f"flow {flow.name}: peakRate {format_quantity(flow.peak_rate_bps, RATE_UNITS)} exceeds link {link.name}'s "
        f"bandwidth {format_quantity(link.bandwidth_bps, RATE_UNITS)}: lag will grow without bound while it lasts."
    )


def link_lines(topology: Topology) -> list[str]:
    """Every enabled flow's derived lines, then its peakRate warning if any, in flow order."""
    lines: list[str] = []
    for flow in topology.enabled_flows():
        lines += derived_lines(topology, flow)
        warning = peak_rate_warning(topology, flow)
        if warning is not None:
            lines.append(warning)
    return lines


def broker_lines(topology: Topology, alias: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(info lines, warnings) on the broker settings derived for cluster `alias` (components/
    topology/links.py, applied by `with_link_broker_settings`): a cluster the stack runs gets
    them, or keeps its own brokerConfig value (named); an external cluster's operators are told
    what to set, since the stack cannot."""
    cluster = topology.clusters[alias]
    info: list[str] = []
    warnings: list[str] = []
    for item in derived_broker_settings(topology, alias):
        if cluster.platform is Platform.EXTERNAL:
            warnings.append(
                f"cluster {alias} (external): set {item.key} to at least {item.value} on its brokers "
                f"({item.reason}); Kafka's default {KAFKA_BROKER_SOCKET_BUFFER} holds each connection across the "
                "link to that many bytes per round trip"
            )
            continue
        line = f"cluster {alias}: brokerConfig {item.key} {item.value} = {item.reason}"
        effective = cluster.broker_config.get(item.key)
        if effective is not None and effective != item.value:
            line += f"; overridden by the stack's brokerConfig ({effective})"
        info.append(line)
    return tuple(info), tuple(warnings)
