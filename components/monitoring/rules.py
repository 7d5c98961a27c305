"""The alert rules for MM2, one set for every platform: only the label matchers that select a
worker group's, a cluster's and a lag exporter's scrape targets differ (`Selectors`). Pure: no
pulumi, no I/O.

Alerts (Prometheus rule-group format, as `promtool test rules` and PrometheusRule take them):
- MM2ReplicationLatencyHigh: a replicated topic's records arrive late.
- MM2CheckpointLatencyHigh: consumer-group checkpoints are late.
- MM2WorkerGroupDown: no worker of the group is scraped as up (`up` is 0 for every worker target,
  or the group has no target left: a Kubernetes Service with no ready pod drops its endpoints).
- MM2ConnectorFailed / MM2ConnectorTasksFailed: a connector or one of its tasks is FAILED.
- MM2HeartbeatStale: per flow, its heartbeat connector emitted none in the window (every flow,
  one-way ones included), and per replicated `<source>.heartbeats` topic, none arrived.
- MM2NoRecordsWhileSourceProducing: per flow, the source cluster took records into the flow's
  topics in the window but MM2 replicated none.

From the worker group's lag exporter (components/watch/lag.py `METRICS`; only where the platform
runs one, `Selectors.lag`, and the group has enabled flows):
- MM2FlowLagAboveRPO: per flow, its oldest record not yet copied is older than the flow's
  declared RPO (`mm2:flows.<flow>.rpo`, a constant in the expression).
- MM2RecordsExpiredBeforeReplication: per flow, at once: records of a source partition were
  gone before MM2 copied them (data loss): deleted from the source (reason `deleted`: by retention
  or a delete-records call, which a log start cannot tell apart) or with a re-created topic.
- MM2SourceTopicRecreated: per flow, at once: a replicated source topic was deleted and created
  again under the same name.
- MM2LagExporterDown: the exporter is not scraped as up (or has no target): lag and data loss
  are invisible.
- MM2LagReadingsStale: per flow, the exporter answers but its readings of the flow are stale: the
  last good one was older than three reading intervals (3 x POLL_S) when last scraped, or read
  errors grew in the window and no reading is fresh (as when it never read the flow): its lag and
  data-loss figures are the last good reading's.
A series that is absent counts as zero (`or vector(0)`): a stopped task exports nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.monitoring.jmx_exporter import (
    BROKER_MESSAGES_IN,
    CHECKPOINT_LATENCY_MAX,
    CONNECTOR_STATUS,
    FAILED_TASK_COUNT,
    RECORD_COUNT,
    REPLICATION_LATENCY_MAX,
    SOURCE_RECORDS_WRITTEN,
)
from components.topology.connectors import connector_name, heartbeat_topics, remote_topic
from components.topology.model import ConnectorRole, Flow, Topology, WorkerGroup
from components.topology.objectives import format_duration
from components.watch.lag_plan import POLL_S

# The lag exporter's metrics the rules read (components/watch/lag.py METRICS; a test pins them).
FLOW_LAG_SECONDS = "mm2_flow_lag_seconds"
EXPIRED_RECORDS = "mm2_expired_records_total"
TOPIC_RECREATIONS = "mm2_source_topic_recreations_total"
LAST_READ = "mm2_lag_last_read_timestamp_seconds"
READ_ERRORS = "mm2_lag_read_errors_total"
# A flow's readings are stale once the last good one is older than three reading intervals: one
# slow or failed reading is not staleness, three in a row are.
STALE_AFTER_S = 3 * POLL_S

HEARTBEATS_RE = r"(.+\.)?heartbeats"
INTERNAL_RE = r"__.*|.*[.-]internal|(.+\.)?heartbeats"


@dataclass(frozen=True)
class Thresholds:
    """When the alerts fire. `window`: how far back heartbeats and records are counted."""

    replication_latency_ms: int = 30_000
    checkpoint_latency_ms: int = 180_000
    window: str = "5m"
    latency_for: str = "5m"
    failure_for: str = "2m"
    # A group with no live worker replicates nothing: say so sooner than a connector failure,
    # after enough scrapes (every 15 s or less) that one missed scrape is not an outage. Also how
    # long a lag exporter's readings may stay stale (MM2LagReadingsStale): as blind as one down.
    down_for: str = "1m"
    # How long a flow's lag may stay above its RPO before the alert fires: long enough that one
    # slow reading (the exporter reads every 5 s) is not a breach, short beside any sane RPO.
    lag_for: str = "1m"
    # How far back a data-loss counter's last value is looked up, so a counter that comes back
    # after a scrape gap is compared with what was seen before the gap, not taken as new.
    counter_lookback: str = "1d"


@dataclass(frozen=True)
class Selectors:
    """PromQL label matchers (without braces) of a worker group's, a cluster's and the group's lag
    exporter's targets; `{group}` and `{cluster}` are filled in. `lag` is None where the platform
    runs no lag exporter: then the group gets no lag rules (they could never fire, and the
    exporter-down rule would never clear)."""

    workers: str = 'mm2_worker_group="{group}"'
    brokers: str = 'mm2_cluster="{cluster}"'
    lag: str | None = 'mm2_lag_exporter="{group}"'


def quote(text: str) -> str:
    """A PromQL double-quoted string literal's body."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def alert_groups(topology: Topology, group: WorkerGroup, selectors: Selectors, t: Thresholds) -> list[dict[str, Any]]:
    """The rule group of worker group `group`: its flows' alerts."""
    sel = selectors.workers.format(group=group.name)
    base = {"mm2_worker_group": group.name}
    rules: list[dict[str, Any]] = [
        alert_rule(
            "MM2WorkerGroupDown",
            # `or on() vector(0)`: no target at all is as dead as every target down.
            f"(max(up{{{sel}}}) or on() vector(0)) < 1",
            t.down_for,
            {**base, "severity": "critical"},
            f"MM2 worker group {group.name} has no live worker",
            f"No worker of {group.name} has answered a scrape for {t.down_for}: nothing of its flows is replicated. "
            "See `bin/status` (names the group in seconds); locally the watcher restarts dead workers, "
            "on Kubernetes check the pods.",
        ),
        alert_rule(
            "MM2ReplicationLatencyHigh",
            f'max by (source, target, topic) ({REPLICATION_LATENCY_MAX}{{{sel},topic!~"{quote(HEARTBEATS_RE)}"}})'
            f" > {t.replication_latency_ms}",
            t.latency_for,
            {**base, "severity": "warning"},
            f"MM2 replication latency above {t.replication_latency_ms} ms",
            "Records of {{ $labels.topic }} reach {{ $labels.target }} {{ $value }} ms after they were produced "
            "(measured from the record timestamp; a backlog or producer clock skew also raises it).",
        ),
        alert_rule(
            "MM2CheckpointLatencyHigh",
            f"max by (source, target, group) ({CHECKPOINT_LATENCY_MAX}{{{sel}}}) > {t.checkpoint_latency_ms}",
            t.latency_for,
            {**base, "severity": "warning"},
            "MM2 consumer-group checkpoints are late",
            "Offsets of group {{ $labels.group }} are translated to {{ $labels.target }} {{ $value }} ms after "
            "they were read; failover would rewind further than expected.",
        ),
        alert_rule(
            "MM2ConnectorFailed",
            f'max by (connector) ({CONNECTOR_STATUS}{{{sel},connector=~"mm2-.*",status="failed"}}) > 0',
            t.failure_for,
            {**base, "severity": "critical"},
            "MM2 connector {{ $labels.connector }} is FAILED",
            "See `bin/status` or GET /connectors/{{ $labels.connector }}/status for the trace; restart with "
            "`bin/connectors restart --failed-only`.",
        ),
        alert_rule(
            "MM2ConnectorTasksFailed",
            f'sum by (connector) ({FAILED_TASK_COUNT}{{{sel},connector=~"mm2-.*"}}) > 0',
            t.failure_for,
            {**base, "severity": "critical"},
            "MM2 connector {{ $labels.connector }} has failed tasks",
            "{{ $value }} task(s) FAILED; see `bin/status` for the trace and restart with "
            "`bin/connectors restart --failed-only`.",
        ),
    ]
    flows = [f for f in topology.enabled_flows() if f.worker_group == group.name]
    for flow in flows:
        rules.append(_emitted_heartbeats(flow, sel, base, t))
    for target, topic in heartbeat_topics(topology, group):
        rules.append(_replicated_heartbeats(target, topic, sel, base, t))
    for flow in flows:
        rules.append(_no_records(flow, sel, selectors.brokers.format(cluster=flow.source), base, t))
    if selectors.lag is not None and flows:
        rules += _lag_rules(group, flows, selectors.lag.format(group=group.name), base, t)
    return [{"name": f"mm2-{group.name}", "rules": rules}]


def alert_rule(
    alert: str, expr: str, for_: str, labels: dict[str, str], summary: str, description: str
) -> dict[str, Any]:
    return {
        "alert": alert,
        "expr": expr,
        "for": for_,
        "labels": labels,
        "annotations": {"summary": summary, "description": description},
    }


def _emitted_heartbeats(flow: Flow, sel: str, base: dict[str, str], t: Thresholds) -> dict[str, Any]:
    connector = connector_name(flow, ConnectorRole.HEARTBEAT)
    return alert_rule(
        "MM2HeartbeatStale",
        f'(sum(increase({SOURCE_RECORDS_WRITTEN}{{{sel},connector="{quote(connector)}"}}[{t.window}]))'
        " or vector(0)) < 1",
        t.failure_for,
        {**base, "severity": "critical", "flow": flow.name, "target": flow.target, "topic": "heartbeats"},
        f"Flow {flow.name}: no heartbeats emitted into {flow.target} for {t.window}",
        f"Connector {connector} wrote no heartbeat (one per second when healthy): the flow's path into "
        f"{flow.target} is stalled, or its heartbeat connector is stopped or failed.",
    )


def _replicated_heartbeats(target: str, topic: str, sel: str, base: dict[str, str], t: Thresholds) -> dict[str, Any]:
    return alert_rule(
        "MM2HeartbeatStale",
        f'(sum(increase({RECORD_COUNT}{{{sel},target="{quote(target)}",topic="{quote(topic)}"}}[{t.window}]))'
        " or vector(0)) < 1",
        t.failure_for,
        {**base, "severity": "critical", "target": target, "topic": topic},
        f"No MM2 heartbeats replicated into {topic} on {target} for {t.window}",
        "The replication path into the target is stalled or broken (heartbeats are emitted every second and "
        "always replicated).",
    )


def _no_records(flow: Flow, sel: str, broker_sel: str, base: dict[str, str], t: Thresholds) -> dict[str, Any]:
    alternatives = "|".join(f"(?:{p})" for p in flow.topics) or ".*"
    remote = remote_topic(flow, "\0")
    prefix = remote.split("\0", 1)[0]
    remote_re = _escape_regex(prefix) + f"(?:{alternatives})"
    produced = (
        f'sum(increase({BROKER_MESSAGES_IN}{{{broker_sel},topic=~"{quote(alternatives)}",'
        f'topic!~"{quote(INTERNAL_RE)}"}}[{t.window}])) > 0'
    )
    replicated = (
        f'(sum(increase({RECORD_COUNT}{{{sel},target="{quote(flow.target)}",topic=~"{quote(remote_re)}",'
        f'topic!~"{quote(HEARTBEATS_RE)}"}}[{t.window}])) or vector(0)) < 1'
    )
    return alert_rule(
        "MM2NoRecordsWhileSourceProducing",
        f"({produced}) and on() ({replicated})",
        t.failure_for,
        {**base, "severity": "critical", "flow": flow.name, "source": flow.source, "target": flow.target},
        f"Flow {flow.name}: {flow.source} takes records but none reach {flow.target}",
        f"The flow's topics on {flow.source} received records in the last {t.window} and its source connector "
        "replicated none: check `bin/status` (connector state, lag) and the worker logs.",
    )


def _escape_regex(text: str) -> str:
    return "".join(f"\\{c}" if c in r".^$*+?()[]{}|\\" else c for c in text)


# --- from the lag exporter --------------------------------------------------------------------


def _lag_rules(
    group: WorkerGroup, flows: list[Flow], lag_sel: str, base: dict[str, str], t: Thresholds
) -> list[dict[str, Any]]:
    """The rules on the group's lag exporter: its being up, and per flow lag and data loss."""
    rules = [
        alert_rule(
            "MM2LagExporterDown",
            f"(max(up{{{lag_sel}}}) or on() vector(0)) < 1",
            t.down_for,
            {**base, "severity": "warning"},
            f"The lag exporter of MM2 worker group {group.name} is down",
            f"The lag exporter of {group.name} has not answered a scrape for {t.down_for}: the lag of its flows "
            "and records expired before replication are invisible (MM2FlowLagAboveRPO and "
            "MM2RecordsExpiredBeforeReplication cannot fire). Locally `bin/pulumi up --refresh` starts it again"
            + (
                f" on its lagPort ({group.lag_port}), at the same address"
                if group.lag_port is not None
                else " on a new port (mm2:workerGroups.<group>.lagPort keeps one): then run "
                "`bin/prometheus-config --stack <stack> --deployed` again"
            )
            + f"; its log is lag-exporter-{group.name}/lag-exporter.log in the stack's run directory.",
        )
    ]
    for flow in flows:
        rules += [
            _lag_above_rpo(flow, lag_sel, base, t),
            _expired(flow, lag_sel, base, t),
            _recreated(flow, lag_sel, base, t),
            _readings_stale(group, flow, lag_sel, base, t),
        ]
    return rules


def _flow_labels(flow: Flow) -> dict[str, str]:
    return {"flow": flow.name, "source": flow.source, "target": flow.target}


def _flow_sel(flow: Flow, lag_sel: str) -> str:
    return f'{lag_sel},flow="{quote(flow.name)}"'


def _lag_above_rpo(flow: Flow, lag_sel: str, base: dict[str, str], t: Thresholds) -> dict[str, Any]:
    rpo = format_duration(flow.rpo_seconds)
    return alert_rule(
        "MM2FlowLagAboveRPO",
        f"max by (flow, source, target) ({FLOW_LAG_SECONDS}{{{_flow_sel(flow, lag_sel)}}}) > {flow.rpo_seconds}",
        t.lag_for,
        {**base, "severity": "critical", **_flow_labels(flow)},
        f"Flow {flow.name} is behind its RPO {rpo}",
        f"The oldest record of flow {flow.name} not yet copied from {flow.source} to {flow.target} is "
        f"{{{{ $value }}}} s old, above the flow's RPO {rpo} ({flow.rpo_seconds} s) for {t.lag_for}: a failover "
        "now would lose more than the RPO allows. Next step: `bin/status` (is the flow paused or stopped, a "
        "connector or task FAILED, its worker group down?); a backlog that is catching up clears it.",
    )


def _expired(flow: Flow, lag_sel: str, base: dict[str, str], t: Thresholds) -> dict[str, Any]:
    budget = format_duration(flow.outage_budget_seconds)
    return alert_rule(
        "MM2RecordsExpiredBeforeReplication",
        counter_grew(EXPIRED_RECORDS, _flow_sel(flow, lag_sel), "flow, source, target, topic, partition, reason", t),
        "0s",
        {**base, "severity": "critical", **_flow_labels(flow)},
        f"Flow {flow.name}: records of {{{{ $labels.topic }}}}[{{{{ $labels.partition }}}}] were deleted on "
        f"{flow.source} before MM2 copied them",
        f"Records of {{{{ $labels.topic }}}} partition {{{{ $labels.partition }}}} were deleted on {flow.source} "
        f"(reason: {{{{ $labels.reason }}}}) before MM2 copied them to {flow.target}: data loss, they are "
        "not on the target and cannot be replicated any more. Reason deleted: retention or a delete-records "
        "call removed them (the log start does not say which); recreated: the topic was created again. "
        "The exporter's /expired (stack output connect.<group>.lagUrl) and `bin/status` name the offsets "
        "and the count. Next step: bring the flow back to its RPO; if retention deleted them, raise the "
        f"topic's retention.ms above the flow's outage budget ({budget}) (the policy "
        "`dr-retention-outlasts-outage-budget` checks it); if a delete-records call did, find who made it "
        "on the source cluster. This alert resolves after "
        f"{t.window}; the loss stays listed, and keeps `bin/status` and the Spark stage failing the flow until "
        f"it is reviewed and acknowledged: mm2:flows.{flow.name}.lossAcknowledged.",
    )


def _recreated(flow: Flow, lag_sel: str, base: dict[str, str], t: Thresholds) -> dict[str, Any]:
    return alert_rule(
        "MM2SourceTopicRecreated",
        counter_grew(TOPIC_RECREATIONS, _flow_sel(flow, lag_sel), "flow, source, target, topic", t),
        "0s",
        {**base, "severity": "critical", **_flow_labels(flow)},
        f"Flow {flow.name}: source topic {{{{ $labels.topic }}}} was deleted and created again",
        f"Topic {{{{ $labels.topic }}}} on {flow.source} has a new topic ID: it was deleted and created again "
        f"under the same name. Records of the old topic MM2 had not copied are lost (counted by "
        "MM2RecordsExpiredBeforeReplication with reason recreated), and the remote topic on "
        f"{flow.target} holds the old topic's records followed by the new one's. Next step: `bin/status`; "
        "check who re-created the topic and whether consumers on the target must be reset; then acknowledge it: "
        f"mm2:flows.{flow.name}.lossAcknowledged.",
    )


def _readings_stale(
    group: WorkerGroup, flow: Flow, lag_sel: str, base: dict[str, str], t: Thresholds
) -> dict[str, Any]:
    sel, by, stale = _flow_sel(flow, lag_sel), "flow, source, target", f"{STALE_AFTER_S:g}"
    # The reading's age when Prometheus last scraped it, not at evaluation (`time() - ...`): that
    # adds up to a scrape interval (15 s by default), so a healthy exporter scraped late in the
    # evaluation cycle would look stale. `min`: the freshest of any instance (a new port).
    age = f"min by ({by}) (timestamp({LAST_READ}{{{sel}}}) - {LAST_READ}{{{sel}}})"
    # Read errors count only with no fresh reading: one failed reading among good ones is not
    # staleness; errors and no timestamp at all are an exporter that has never read the flow.
    failing = f"({counter_grew(READ_ERRORS, sel, by, t)}) unless on ({by}) ({age} <= {stale})"
    return alert_rule(
        "MM2LagReadingsStale",
        f"({age} > {stale}) or ({failing})",
        t.down_for,
        {**base, "severity": "warning", **_flow_labels(flow)},
        f"Flow {flow.name}: the lag exporter of {group.name} has no fresh reading of it",
        f"The lag exporter of {group.name} answers scrapes, but its last good reading of flow {flow.name} is "
        f"more than {stale} s old (three reading intervals), or its readings of the flow failed within "
        f"{t.window} and none is fresh, for {t.down_for}: the flow's lag and records expired before "
        "replication it serves are the last good reading's (none if it never read the flow), so "
        "MM2FlowLagAboveRPO and MM2RecordsExpiredBeforeReplication may stay silent. Likely cause: a "
        f"cluster not answering the exporter, most often the flow's source {flow.source}. Next step: its "
        f"log names the cluster and the error (locally lag-exporter-{group.name}/lag-exporter.log in the "
        f"stack's run directory; on Kubernetes the log of the group's lag exporter Deployment); check "
        "that cluster's brokers and the exporter's client settings for it. It clears at the next good reading.",
    )


def counter_grew(metric: str, sel: str, by: str, t: Thresholds) -> str:
    """PromQL: the series of counter `metric` (aggregated `by`, so a new exporter instance or port
    continues the same series) that grew: within the window (`increase`, through a reset), above
    the last value seen before the window (so growth during a scrape gap counts), or that were
    never seen before the window and are above 0 (a counter whose first sample already counts
    something: the exporter found the loss in its first reading)."""
    now = f"max by ({by}) ({metric}{{{sel}}})"
    before = f"max by ({by}) (last_over_time({metric}{{{sel}}}[{t.counter_lookback}] offset {t.window}))"
    grew = f"max by ({by}) (increase({metric}{{{sel}}}[{t.window}])) > 0"
    return f"({grew}) or ({now} > ({before} or {now} * 0))"
