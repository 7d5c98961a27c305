"""Monitoring of a Connect worker group on Kubernetes: the Prometheus JMX exporter (agent, its
rules) and the PrometheusRule alerts. Pure: no pulumi import and no I/O."""

from __future__ import annotations

from typing import Any

from components.platform.kubernetes.metadata import container_security
from components.platform.kubernetes.names import ConnectNames
from components.platform.settings import AlertSettings, ConnectPodSettings
from components.platform.topology_facts import heartbeat_topics
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


def jmx_exporter_config() -> dict[str, Any]:
    """Prometheus JMX exporter rules for MM2 and Connect (MBean names: mm2-internals §4).

    Only matching beans are exported. The MirrorSourceConnector pattern accepts beans with and
    without the `source` tag (Kafka versions differ); label `source` is empty when it is absent.
    """
    return {
        "lowercaseOutputName": True,
        "lowercaseOutputLabelNames": True,
        "rules": [
            {
                "pattern": r"kafka.connect.mirror<type=MirrorSourceConnector, (?:source=([^,]+), )?target=([^,]+), "
                r"topic=([^,]+), partition=([0-9]+)><>([a-z-]+)",
                "name": "kafka_connect_mirror_source_connector_$5",
                "labels": {"source": "$1", "target": "$2", "topic": "$3", "partition": "$4"},
                "type": "GAUGE",
            },
            {
                "pattern": r"kafka.connect.mirror<type=MirrorCheckpointConnector, source=([^,]+), target=([^,]+), "
                r"group=([^,]+), topic=([^,]+), partition=([0-9]+)><>([a-z-]+)",
                "name": "kafka_connect_mirror_checkpoint_connector_$6",
                "labels": {"source": "$1", "target": "$2", "group": "$3", "topic": "$4", "partition": "$5"},
                "type": "GAUGE",
            },
            {
                "pattern": r"kafka.connect<type=connect-worker-metrics, connector=\"?([^\"]+)\"?><>([a-z-]+)",
                "name": "kafka_connect_worker_$2",
                "labels": {"connector": "$1"},
                "type": "GAUGE",
            },
            {
                "pattern": r"kafka.connect<type=connect-worker-metrics><>([a-z-]+)",
                "name": "kafka_connect_worker_$1",
                "type": "GAUGE",
            },
            {
                "pattern": r"kafka.connect<type=connect-worker-rebalance-metrics><>([a-z-]+)",
                "name": "kafka_connect_worker_rebalance_$1",
                "type": "GAUGE",
            },
        ],
    }


def alert_rules(group: WorkerGroup, topology: Topology, namespace: str, alerts: AlertSettings) -> list[dict[str, Any]]:
    """PrometheusRule groups: replication latency, checkpoint latency, heartbeat staleness, failed tasks."""
    sel = f'namespace="{namespace}",service="{ConnectNames(group.name).service}"'
    heartbeat = r"(.+\\.)?heartbeats"
    base_labels = {"mm2_worker_group": group.name}
    rules: list[dict[str, Any]] = [
        {
            "alert": "MM2ReplicationLatencyHigh",
            "expr": f"max by (source, target, topic) (kafka_connect_mirror_source_connector_replication_latency_ms_max"
            f'{{{sel},topic!~"{heartbeat}"}}) > {alerts.replication_latency_ms}',
            "for": alerts.for_duration,
            "labels": {**base_labels, "severity": "warning"},
            "annotations": {
                "summary": "MM2 replication latency above {alerts} ms".replace(
                    "{alerts}", str(alerts.replication_latency_ms)
                ),
                "description": "Records of {{ $labels.topic }} reach {{ $labels.target }} {{ $value }} ms after they "
                "were produced (measured from the record timestamp; a backlog or producer clock skew also raises it).",
            },
        },
        {
            "alert": "MM2CheckpointLatencyHigh",
            "expr": "max by (source, target, group) "
            "(kafka_connect_mirror_checkpoint_connector_checkpoint_latency_ms_max"
            f"{{{sel}}}) > {alerts.checkpoint_latency_ms}",
            "for": alerts.for_duration,
            "labels": {**base_labels, "severity": "warning"},
            "annotations": {
                "summary": "MM2 consumer-group checkpoints are late",
                "description": "Offsets of group {{ $labels.group }} are translated to {{ $labels.target }} "
                "{{ $value }} ms after they were read; failover would rewind further than expected.",
            },
        },
        {
            "alert": "MM2ConnectorTasksFailed",
            "expr": "sum by (connector) (kafka_connect_worker_connector_failed_task_count"
            f'{{{sel},connector=~"mm2-.*"}}) > 0',
            "for": "2m",
            "labels": {**base_labels, "severity": "critical"},
            "annotations": {
                "summary": "MM2 connector {{ $labels.connector }} has failed tasks",
                "description": "{{ $value }} task(s) FAILED; see GET /connectors/{{ $labels.connector }}/status "
                "and restart with POST /connectors/{{ $labels.connector }}/restart?includeTasks=true&onlyFailed=true.",
            },
        },
    ]
    window = f"{alerts.heartbeat_window_minutes}m"
    for target, topic in heartbeat_topics(topology, group):
        rules.append(
            {
                "alert": "MM2HeartbeatStale",
                # `or vector(0)`: a heartbeat topic that never arrived is as stale as one that stopped.
                "expr": f"(sum(increase(kafka_connect_mirror_source_connector_record_count"
                f'{{{sel},target="{target}",topic="{topic}"}}[{window}])) or vector(0)) < 1',
                "for": "2m",
                "labels": {**base_labels, "severity": "critical", "target": target, "topic": topic},
                "annotations": {
                    "summary": f"No MM2 heartbeats in {topic} on {target} for {window}",
                    "description": "The replication path into the target is stalled or broken (heartbeats are "
                    "emitted every second and always replicated).",
                },
            }
        )
    return [{"name": f"mm2-{group.name}", "rules": rules}]
