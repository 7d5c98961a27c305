"""JMX exporter rules and PrometheusRule alerts of a worker group."""

from __future__ import annotations

from components.platform.kubernetes.monitoring import jmx_exporter_config

from .objects import connect


def test_exporter_rules_match_mm2_mbeans() -> None:
    import re

    rules = jmx_exporter_config()["rules"]

    def java_to_python(pattern: str) -> str:
        return pattern

    beans = {
        "kafka.connect.mirror<type=MirrorSourceConnector, source=a, target=b, topic=a.orders, partition=0>"
        "<>replication-latency-ms-max": "kafka_connect_mirror_source_connector_$5",
        "kafka.connect.mirror<type=MirrorSourceConnector, target=b, topic=a.orders, partition=0><>record-count": (
            "kafka_connect_mirror_source_connector_$5"
        ),
        "kafka.connect.mirror<type=MirrorCheckpointConnector, source=a, target=b, group=g1, topic=a.orders, "
        "partition=3><>checkpoint-latency-ms-max": "kafka_connect_mirror_checkpoint_connector_$6",
        'kafka.connect<type=connect-worker-metrics, connector="mm2-a-to-b-source"><>connector-failed-task-count': (
            "kafka_connect_worker_$2"
        ),
    }
    for bean, name in beans.items():
        matching = [r for r in rules if re.fullmatch(java_to_python(r["pattern"]), bean)]
        assert matching and matching[0]["name"] == name, bean


def test_prometheus_rule_alerts() -> None:
    rule = connect().prometheus_rule
    assert rule is not None
    assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["kind"] == "PrometheusRule"
    [group] = rule["spec"]["groups"]
    alerts = {r["alert"]: r for r in group["rules"] if r["alert"] != "MM2HeartbeatStale"}
    assert set(alerts) == {"MM2ReplicationLatencyHigh", "MM2CheckpointLatencyHigh", "MM2ConnectorTasksFailed"}
    assert "replication_latency_ms_max" in alerts["MM2ReplicationLatencyHigh"]["expr"]
    assert "> 30000" in alerts["MM2ReplicationLatencyHigh"]["expr"]
    assert "connector_failed_task_count" in alerts["MM2ConnectorTasksFailed"]["expr"]
    stale = {r["labels"]["topic"]: r for r in group["rules"] if r["alert"] == "MM2HeartbeatStale"}
    # Both flows run on group mm2 and each direction has a flow writing heartbeats into its source.
    assert set(stale) == {"a.heartbeats", "b.heartbeats"}
    assert 'topic="a.heartbeats"' in stale["a.heartbeats"]["expr"]
    assert 'service="mm2-connect-api"' in stale["a.heartbeats"]["expr"]
