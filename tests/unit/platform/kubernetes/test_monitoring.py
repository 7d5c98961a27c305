"""JMX exporter rules and PrometheusRule alerts of a worker group."""

from __future__ import annotations

from components.platform.kubernetes.monitoring import lag_selector

from .objects import connect


def test_prometheus_rule_alerts() -> None:
    rule = connect().prometheus_rule
    assert rule is not None
    assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["kind"] == "PrometheusRule"
    [group] = rule["spec"]["groups"]
    alerts = {r["alert"]: r for r in group["rules"] if r["alert"] != "MM2HeartbeatStale"}
    # The shared rules (components/monitoring/rules.py), selecting the group's Service.
    assert set(alerts) == {
        "MM2WorkerGroupDown",
        "MM2ReplicationLatencyHigh",
        "MM2CheckpointLatencyHigh",
        "MM2ConnectorFailed",
        "MM2ConnectorTasksFailed",
        "MM2NoRecordsWhileSourceProducing",
    }
    assert "replication_latency_ms_max" in alerts["MM2ReplicationLatencyHigh"]["expr"]
    assert "> 30000" in alerts["MM2ReplicationLatencyHigh"]["expr"]
    assert "connector_failed_task_count" in alerts["MM2ConnectorTasksFailed"]["expr"]
    # The Service's scrape targets: a group with no ready pod has none left, which counts as down.
    assert alerts["MM2WorkerGroupDown"]["expr"] == (
        '(max(up{namespace="kafka",service="mm2-connect-api"}) or on() vector(0)) < 1'
    )
    replicated = [r for r in group["rules"] if r["alert"] == "MM2HeartbeatStale" and "flow" not in r["labels"]]
    stale = {r["labels"]["topic"]: r for r in replicated}
    # Both flows run on group mm2 and each direction has a flow writing heartbeats into its source.
    assert set(stale) == {"a.heartbeats", "b.heartbeats"}
    assert 'topic="a.heartbeats"' in stale["a.heartbeats"]["expr"]
    assert 'service="mm2-connect-api"' in stale["a.heartbeats"]["expr"]


def test_lag_alerts_select_the_lag_exporters_service() -> None:
    """Whatever rules read the lag exporter's metrics select its Service, as its ServiceMonitor
    labels the targets (monitoring.lag_selector), never the local platform's label."""
    rule = connect().prometheus_rule
    assert rule is not None
    [group] = rule["spec"]["groups"]
    lag_rules = [r for r in group["rules"] if "mm2_lag_exporter" in r["expr"] or "lag-exporter" in r["expr"]]
    lag_rules += [r for r in group["rules"] if any(m in r["expr"] for m in ("mm2_flow_lag", "mm2_expired_records"))]
    for r in lag_rules:
        assert lag_selector("mm2", "kafka") in r["expr"], r["alert"]
