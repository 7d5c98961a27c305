"""What a Prometheus needs to watch a local stack: scrape jobs for the brokers' and workers'
JMX exporter ports (`metricsPort`) labelled the way the alert rules select them, and the rule
file. Pure: no pulumi, no I/O."""

from __future__ import annotations

from typing import Any

from components.monitoring.rules import Selectors, Thresholds, alert_groups
from components.topology.model import Platform, Topology


def scrape_configs(topology: Topology, interval: str = "15s") -> list[dict[str, Any]]:
    """One job per local cluster (label mm2_cluster) and worker group (label mm2_worker_group)
    with a metricsPort; process i is scraped at 127.0.0.1:metricsPort+i."""
    jobs: list[dict[str, Any]] = []
    for alias, cluster in sorted(topology.clusters.items()):
        if cluster.platform is Platform.LOCAL and cluster.metrics_port is not None:
            targets = [f"127.0.0.1:{cluster.metrics_port + i}" for i in range(cluster.brokers)]
            jobs.append(_job(f"mm2-cluster-{alias}", targets, {"mm2_cluster": alias}, interval))
    for name, group in sorted(topology.worker_groups.items()):
        if group.platform is Platform.LOCAL and group.metrics_port is not None:
            targets = [f"127.0.0.1:{group.metrics_port + i}" for i in range(group.workers)]
            jobs.append(_job(f"mm2-workers-{name}", targets, {"mm2_worker_group": name}, interval))
    return jobs


DEFAULT_THRESHOLDS = Thresholds()


def rule_groups(topology: Topology, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list[dict[str, Any]]:
    """Every worker group's alert rules, selected by the labels `scrape_configs` sets."""
    return [
        group
        for _, wg in sorted(topology.worker_groups.items())
        for group in alert_groups(topology, wg, Selectors(), thresholds)
    ]


def _job(name: str, targets: list[str], labels: dict[str, str], interval: str) -> dict[str, Any]:
    return {
        "job_name": name,
        "scrape_interval": interval,
        "static_configs": [{"targets": targets, "labels": labels}],
    }
