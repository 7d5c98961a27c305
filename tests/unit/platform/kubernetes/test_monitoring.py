"""JMX exporter rules and PrometheusRule alerts of a worker group."""

from __future__ import annotations

from components.platform.kubernetes.monitoring import alert_rules, lag_selector
from components.platform.settings import AlertSettings

from ..helpers import SASL_KUBERNETES, topology
from .objects import connect

LAG_ALERTS = {
    "MM2LagExporterDown",
    "MM2FlowLagAboveRPO",
    "MM2RecordsExpiredBeforeReplication",
    "MM2SourceTopicRecreated",
    "MM2LagReadingsStale",
}


def test_prometheus_rule_alerts() -> None:
    rule = connect().prometheus_rule
    assert rule is not None
    assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["kind"] == "PrometheusRule"
    [group] = rule["spec"]["groups"]
    alerts = {r["alert"]: r for r in group["rules"] if r["alert"] not in {"MM2HeartbeatStale", *LAG_ALERTS}}
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


def test_lag_rules_select_the_lag_exporter_service_it_renders() -> None:
    """The group runs flows, so its lag exporter is rendered (lag_exporter_objects.py): the lag and
    data-loss rules join, selecting its Service as its ServiceMonitor labels the targets, never
    the local platform's label."""
    workers = connect()
    assert workers.prometheus_rule is not None
    [group] = workers.prometheus_rule["spec"]["groups"]
    lag = [r for r in group["rules"] if r["alert"] in LAG_ALERTS]
    assert {r["alert"] for r in lag} == LAG_ALERTS
    assert all(lag_selector("mm2", "kafka") in r["expr"] for r in lag)
    assert not [r for r in group["rules"] if "mm2_lag_exporter=" in r["expr"]]
    [down] = [r for r in lag if r["alert"] == "MM2LagExporterDown"]
    assert down["expr"] == '(max(up{namespace="kafka",service="mm2-lag-exporter"}) or on() vector(0)) < 1'


def test_no_lag_rules_without_the_workload() -> None:
    topo = topology(SASL_KUBERNETES)
    [group] = alert_rules(topo.worker_groups["mm2"], topo, "kafka", AlertSettings(), lag_exporter=False)
    assert not [r for r in group["rules"] if r["alert"] in LAG_ALERTS]


def test_the_failure_alerts_wait_as_long_as_the_group_says() -> None:
    topo = topology(SASL_KUBERNETES)
    alerts = AlertSettings(failure_for="45s", for_duration="10m", heartbeat_window_minutes=1)
    [group] = alert_rules(topo.worker_groups["mm2"], topo, "kafka", alerts, lag_exporter=False)
    waits = {r["alert"]: r["for"] for r in group["rules"]}
    assert waits["MM2NoRecordsWhileSourceProducing"] == waits["MM2ConnectorFailed"] == "45s"
    assert waits["MM2HeartbeatStale"] == "45s" and waits["MM2ReplicationLatencyHigh"] == "10m"
    no_records = next(r for r in group["rules"] if r["alert"] == "MM2NoRecordsWhileSourceProducing")
    assert "[1m]" in no_records["expr"]
