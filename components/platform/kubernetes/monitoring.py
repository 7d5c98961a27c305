"""Monitoring of a Connect worker group on Kubernetes: the Prometheus JMX exporter agent and the
PrometheusRule alerts. The exporter's rules and the alert rules are shared by every platform
(`components/monitoring`). Pure: no pulumi import and no I/O."""

from __future__ import annotations

from typing import Any

from components.monitoring.jmx_exporter import jmx_exporter_config
from components.monitoring.rules import Selectors, Thresholds, alert_groups
from components.platform.kubernetes.metadata import container_security
from components.platform.kubernetes.names import ConnectNames
from components.platform.settings import AlertSettings, ConnectPodSettings
from components.topology.model import Topology, WorkerGroup

METRICS_PORT = 9404
AGENT_DIR = "/opt/mm2/agent"
AGENT_JAR = f"{AGENT_DIR}/jmx_prometheus_javaagent.jar"


def jmx_agent_init_container(pod: ConnectPodSettings) -> dict[str, Any]:
    """Fetches the exporter's java agent into the `agent` volume before the worker starts."""
    return {
        "name": "jmx-agent",
        "image": pod.downloader_image,
        "command": ["curl", "-fsSL", "--retry", "5", "-o", AGENT_JAR, pod.agent_url],
        "volumeMounts": [{"name": "agent", "mountPath": AGENT_DIR}],
        "securityContext": container_security(),
    }


def alert_rules(group: WorkerGroup, topology: Topology, namespace: str, alerts: AlertSettings) -> list[dict[str, Any]]:
    """The PrometheusRule groups: the shared MM2 alert rules, selecting this group's Service
    (and brokers by an `mm2_cluster` label, where a cluster is scraped with one)."""
    service = ConnectNames(group.name).service
    selectors = Selectors(
        workers=f'namespace="{namespace}",service="{service}"',
        brokers=f'namespace="{namespace}",mm2_cluster="{{cluster}}"',
    )
    thresholds = Thresholds(
        replication_latency_ms=alerts.replication_latency_ms,
        checkpoint_latency_ms=alerts.checkpoint_latency_ms,
        window=f"{alerts.heartbeat_window_minutes}m",
        latency_for=alerts.for_duration,
    )
    return alert_groups(topology, group, selectors, thresholds)


__all__ = ["AGENT_JAR", "METRICS_PORT", "alert_rules", "jmx_agent_init_container", "jmx_exporter_config"]
