"""The loopback ports Prometheus scrapes on the local platform, all opt-in:

- `metricsPort` of clusters and worker groups: the Prometheus JMX exporter agents (broker or
  worker i serves /metrics on metricsPort+i); without it no agent runs;
- `lagPort` of worker groups: the group's lag exporter (components/ops/lag_exporter.py); without
  it the exporter takes a free port at each start, so its URL changes when it restarts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from components.topology.model import Cluster, Platform, WorkerGroup
from components.topology.parse.problems import Problems, path
from components.topology.parse.values import as_int

METRICS_PORT = "metricsPort"
LAG_PORT = "lagPort"

# Where the same figures come from off the local platform: each key's fix when it is given there.
_ELSEWHERE = {
    METRICS_PORT: "Remove it; on kubernetes the worker pods expose metrics on 9404 (mm2-platform metrics: true).",
    LAG_PORT: "Remove it; on kubernetes the lag exporter has its own Service "
    "(http://<group>-lag-exporter.<namespace>.svc:9404, exported as connect.<group>.lagUrl).",
}
# How a collision names the ports of each key, and what a fix must keep in mind.
_WHAT = {METRICS_PORT: "metrics ports {start}..{end} collide", LAG_PORT: "the lag exporter's port {start} collides"}
_SPAN = {METRICS_PORT: " (one port per broker or worker)", LAG_PORT: ""}


class _Ports(NamedTuple):
    key: str  # mm2:... path of the setting
    start: int
    end: int  # inclusive


def parse_metrics_port(
    problems: Problems, mapping: Mapping[str, Any], where: str, platform: Platform, count: int | None
) -> int | None:
    """The first metrics port, when given and valid (`count` processes use consecutive ports)."""
    return _loopback_port(problems, mapping, where, platform, METRICS_PORT, count)


def parse_lag_port(problems: Problems, mapping: Mapping[str, Any], where: str, platform: Platform) -> int | None:
    """The worker group's lag exporter port, when given and valid."""
    return _loopback_port(problems, mapping, where, platform, LAG_PORT, 1)


def _loopback_port(
    problems: Problems, mapping: Mapping[str, Any], where: str, platform: Platform, field: str, count: int | None
) -> int | None:
    if field not in mapping:
        return None
    key = f"{where}.{field}"
    if platform is not Platform.LOCAL:
        problems.add(key, f"{field} applies to the local platform only, not {platform.value}.", _ELSEWHERE[field])
        return None
    port = as_int(problems, mapping[field], key, minimum=1024, maximum=65535)
    if port is not None and count is not None and port + count - 1 > 65535:
        problems.add(key, f"ports {port}..{port + count - 1} run past 65535.", f"Pick a lower {field}.")
        return None
    return port


def check_metrics_ports(problems: Problems, clusters: Mapping[str, Cluster], groups: Mapping[str, WorkerGroup]) -> None:
    """Every scraped port (metricsPort ranges, lagPort) against every other port of the stack,
    naming the scraped port's key; two scraped ports that collide are reported once."""
    fixed, scraped = _stack_ports(clusters, groups)
    for i, mine in enumerate(scraped):
        field = mine.key.rsplit(".", 1)[1]
        what = _WHAT[field].format(start=mine.start, end=mine.end)
        for other in fixed + scraped[i + 1 :]:
            if mine.start <= other.end and other.start <= mine.end:
                problems.add(
                    mine.key,
                    f"{what} with {other.key} ({other.start}..{other.end}).",
                    f"Pick a {field} outside {other.start}..{other.end}{_SPAN[field]}.",
                )


def _stack_ports(
    clusters: Mapping[str, Cluster], groups: Mapping[str, WorkerGroup]
) -> tuple[list[_Ports], list[_Ports]]:
    """(the ports brokers and workers listen on, the opt-in ports Prometheus scrapes)."""
    fixed: list[_Ports] = []
    scraped: list[_Ports] = []
    for c in clusters.values():
        if c.platform in (Platform.LOCAL, Platform.DOCKER) and c.port is not None:
            fixed.append(_Ports(path("clusters", c.alias, "port"), c.port, c.port + 2 * c.brokers - 1))
        if c.metrics_port is not None:
            end = c.metrics_port + c.brokers - 1
            scraped.append(_Ports(path("clusters", c.alias, METRICS_PORT), c.metrics_port, end))
    for g in groups.values():
        if g.platform in (Platform.LOCAL, Platform.DOCKER) and g.rest_port is not None:
            fixed.append(_Ports(path("workerGroups", g.name, "restPort"), g.rest_port, g.rest_port + g.workers - 1))
        if g.metrics_port is not None:
            end = g.metrics_port + g.workers - 1
            scraped.append(_Ports(path("workerGroups", g.name, METRICS_PORT), g.metrics_port, end))
        if g.lag_port is not None:
            scraped.append(_Ports(path("workerGroups", g.name, LAG_PORT), g.lag_port, g.lag_port))
    return fixed, scraped
