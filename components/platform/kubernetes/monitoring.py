"""Monitoring of a Connect worker group on Kubernetes: the port of the Prometheus JMX exporter
agent (baked into the Kafka image) and the PrometheusRule alerts. The exporter's rules and the
alert rules are shared by every platform (`components/monitoring`). Pure: no pulumi import and
no I/O."""

from __future__ import annotations

from typing import Any

from components.monitoring.jmx_exporter import jmx_exporter_config
from components.monitoring.rules import Selectors, Thresholds, alert_groups
from components.platform.kubernetes.names import ConnectNames, LagExporterNames
from components.platform.settings import AlertSettings
from components.topology.model import Topology, WorkerGroup

METRICS_PORT = 9404


def alert_rules(
    group: WorkerGroup, topology: Topology, namespace: str, alerts: AlertSettings, *, lag_exporter: bool = False
) -> list[dict[str, Any]]:
    """The PrometheusRule groups: the shared MM2 alert rules, selecting this group's Service
    (and brokers by an `mm2_cluster` label, where a cluster is scraped with one).

    `lag_exporter`: the group's lag exporter runs as a workload behind the Service
    `<group>-lag-exporter` (lag_exporter_objects.py, a group with an enabled flow), scraped by a
    ServiceMonitor: then the lag and data-loss rules join, selecting that Service. Off without
    that workload: its down alert would never clear."""
    names = ConnectNames(group.name)
    selectors = Selectors(
        workers=f'namespace="{namespace}",service="{names.service}"',
        brokers=f'namespace="{namespace}",mm2_cluster="{{cluster}}"',
        lag=lag_selector(group.name, namespace) if lag_exporter else None,
    )
    thresholds = Thresholds(
        replication_latency_ms=alerts.replication_latency_ms,
        checkpoint_latency_ms=alerts.checkpoint_latency_ms,
        window=f"{alerts.heartbeat_window_minutes}m",
        latency_for=alerts.for_duration,
        failure_for=alerts.failure_for,
    )
    return alert_groups(topology, group, selectors, thresholds)


def lag_selector(group: str, namespace: str) -> str:
    """PromQL matchers of the group's lag exporter (`Selectors.lag` on Kubernetes): its
    ServiceMonitor's targets carry the namespace and the Service's name, as the workers' do."""
    return f'namespace="{namespace}",service="{LagExporterNames(group).service}"'


__all__ = ["METRICS_PORT", "alert_rules", "jmx_exporter_config", "lag_selector"]
