"""What a Prometheus needs to watch a local stack: scrape jobs for the brokers' and workers'
JMX exporter ports (`metricsPort`) and the worker groups' lag exporters, labelled the way the
alert rules select them, and the rule file. Pure: no pulumi, no I/O.

A lag exporter listens on its worker group's `lagPort`, or without one on a port chosen when it
starts; its URL is the stack output `connect.<group>.lagUrl`, so its job comes from the stack's
outputs, not from the config.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.monitoring.rules import Selectors, Thresholds, alert_groups
from components.topology.model import Platform, Topology, WorkerGroup
from components.topology.runtime_config import worker_metrics_targets


def scrape_configs(
    topology: Topology, interval: str = "15s", lag_targets: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """One job per local cluster (label mm2_cluster) and worker group (label mm2_worker_group)
    with a metricsPort; process i is scraped at host:metricsPort+i. And one job per
    `lag_targets` entry, worker group -> its lag exporter's host:port (`LagTargets.targets`),
    labelled mm2_lag_exporter."""
    jobs: list[dict[str, Any]] = []
    for alias, cluster in sorted(topology.clusters.items()):
        if cluster.platform is Platform.LOCAL and cluster.metrics_port is not None:
            targets = [f"{cluster.host}:{cluster.metrics_port + i}" for i in range(cluster.brokers)]
            jobs.append(_job(f"mm2-cluster-{alias}", targets, {"mm2_cluster": alias}, interval))
    for name, group in sorted(topology.worker_groups.items()):
        if targets := list(worker_metrics_targets(group)):
            jobs.append(_job(f"mm2-workers-{name}", targets, {"mm2_worker_group": name}, interval))
    for name, target in sorted((lag_targets or {}).items()):
        jobs.append(_job(f"mm2-lag-{name}", [target], {"mm2_lag_exporter": name}, interval))
    return jobs


def runs_lag_exporter(topology: Topology, group: WorkerGroup) -> bool:
    """The stack runs a lag exporter for the group: a local group with an enabled flow
    (components/connect_group.py)."""
    return group.platform is Platform.LOCAL and any(f.worker_group == group.name for f in topology.enabled_flows())


@dataclass(frozen=True)
class LagTargets:
    """The lag exporters to scrape (worker group -> host:port), and why any group that has one
    gets no job."""

    targets: Mapping[str, str]
    missing: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for the operator: what was written, and what was not and why."""
        found = ", ".join(f"{g} at {t}" for g, t in sorted(self.targets.items()))
        if not self.missing:
            if found:
                return f"lag exporters: {len(self.targets)} job(s) ({found})"
            return "lag exporters: none to scrape (no local worker group with an enabled flow runs one)"
        written = f"{len(self.targets)} job(s) ({found}); " if found else "no lag targets written: "
        return f"lag exporters: {written}" + "; ".join(self.missing)


def lag_targets(topology: Topology, lag_urls: Mapping[str, str] | None) -> LagTargets:
    """Each worker group's lag exporter from `lag_urls` (group -> `connect.<group>.lagUrl` of the
    stack's outputs; None when no outputs were read)."""
    expected = [name for name, group in sorted(topology.worker_groups.items()) if runs_lag_exporter(topology, group)]
    if lag_urls is None:
        why = (
            f"the exporters of {', '.join(expected)} listen on ports chosen at deploy; give the stack's outputs "
            "(--outputs FILE, or --stack NAME --deployed) to scrape them"
        )
        return LagTargets({}, (why,) if expected else ())
    targets: dict[str, str] = {}
    missing: list[str] = []
    for name in expected:
        url = lag_urls.get(name, "")
        target = _host_port(url)
        if target is not None:
            targets[name] = target
        elif url:
            missing.append(f"group {name}: lagUrl {url!r} is not an http://host:port URL")
        else:
            missing.append(
                f"group {name}: the outputs have no connect.{name}.lagUrl (deployed before the lag exporter, "
                "or not deployed: run `bin/pulumi up`)"
            )
    return LagTargets(targets, tuple(missing))


DEFAULT_THRESHOLDS = Thresholds()


def rule_groups(topology: Topology, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list[dict[str, Any]]:
    """Every worker group's alert rules, selected by the labels `scrape_configs` sets; the lag
    rules only for groups the stack runs a lag exporter for (no other group has one to scrape)."""
    return [
        group
        for _, wg in sorted(topology.worker_groups.items())
        for group in alert_groups(
            topology, wg, Selectors() if wg.platform is Platform.LOCAL else Selectors(lag=None), thresholds
        )
    ]


# What the exporter's URL is (`http://<host>:<port>`, components/ops/lag_exporter.py serve()); the
# standard library's URL parser lives beside urllib's network code, which no pure module imports.
_LAG_URL = re.compile(r"http://(?P<host>[^/:?#@\[\]]+|\[[0-9A-Fa-f:.]+\]):(?P<port>\d{1,5})/?")


def _host_port(url: str) -> str | None:
    match = _LAG_URL.fullmatch(url.strip())
    if match is None or not 0 < int(match["port"]) < 65536:
        return None
    return f"{match['host']}:{match['port']}"


def _job(name: str, targets: list[str], labels: dict[str, str], interval: str) -> dict[str, Any]:
    return {
        "job_name": name,
        "scrape_interval": interval,
        "static_configs": [{"targets": targets, "labels": labels}],
    }
