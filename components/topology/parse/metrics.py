"""`metricsPort` of local clusters and worker groups: the Prometheus JMX exporter's loopback
ports (broker or worker i serves /metrics on metricsPort+i). Opt-in: without it no agent runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.topology.model import Cluster, Platform, WorkerGroup
from components.topology.parse.problems import Problems, path
from components.topology.parse.values import as_int

METRICS_PORT = "metricsPort"


def parse_metrics_port(
    problems: Problems, mapping: Mapping[str, Any], where: str, platform: Platform, count: int | None
) -> int | None:
    """The first metrics port, when given and valid (`count` processes use consecutive ports)."""
    if METRICS_PORT not in mapping:
        return None
    key = f"{where}.{METRICS_PORT}"
    if platform is not Platform.LOCAL:
        problems.add(
            key,
            f"metricsPort applies to the local platform only, not {platform.value}.",
            "Remove it; on kubernetes the worker pods expose metrics on 9404 (mm2-platform metrics: true).",
        )
        return None
    port = as_int(problems, mapping[METRICS_PORT], key, minimum=1024, maximum=65535)
    if port is not None and count is not None and port + count - 1 > 65535:
        problems.add(key, f"ports {port}..{port + count - 1} run past 65535.", "Pick a lower metricsPort.")
        return None
    return port


def check_metrics_ports(problems: Problems, clusters: Mapping[str, Cluster], groups: Mapping[str, WorkerGroup]) -> None:
    """Every metrics port range against every other port of the stack, naming the metricsPort key."""
    others: list[tuple[str, int, int]] = []
    metrics: list[tuple[str, int, int]] = []
    for c in clusters.values():
        if c.platform in (Platform.LOCAL, Platform.DOCKER) and c.port is not None:
            others.append((path("clusters", c.alias, "port"), c.port, c.port + 2 * c.brokers - 1))
        if c.metrics_port is not None:
            metrics.append((path("clusters", c.alias, METRICS_PORT), c.metrics_port, c.metrics_port + c.brokers - 1))
    for g in groups.values():
        if g.platform in (Platform.LOCAL, Platform.DOCKER) and g.rest_port is not None:
            others.append((path("workerGroups", g.name, "restPort"), g.rest_port, g.rest_port + g.workers - 1))
        if g.metrics_port is not None:
            metrics.append((path("workerGroups", g.name, METRICS_PORT), g.metrics_port, g.metrics_port + g.workers - 1))
    for i, (key, start, end) in enumerate(metrics):
        for other, o_start, o_end in others + metrics[i + 1 :]:
            if start <= o_end and o_start <= end:
                problems.add(
                    key,
                    f"metrics ports {start}..{end} collide with {other} ({o_start}..{o_end}).",
                    f"Pick a metricsPort outside {o_start}..{o_end} (one port per broker or worker).",
                )
