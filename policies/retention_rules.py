"""Source topics keep records longer than their flow's outage budget.

When a flow is down longer than a source topic's retention, Kafka deletes records MM2 has not
copied yet, and nothing says so. A flow declares the longest outage it must survive
(`outageBudget`); every source topic it replicates must keep records longer than that. The topic's
retention is its own `retention.ms`, else its cluster's default (`log.retention.*` in
brokerConfig, registered as `logRetentionMs`), else Kafka's 7 days.

Mandatory for flows marked `disasterRecovery` (the standby is the copy of record after a
failover), advisory for the others. Only topics the stack declares are judged: a topic that
exists on the cluster but not in the stack config has a retention the preview cannot see.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from graph import flow_label
from model_facts import KAFKA_DEFAULT_RETENTION_MS, ConnectorKind
from pulumi_policy import EnforcementLevel, ReportViolation, StackValidationArgs, StackValidationPolicy
from stack_view import UNKNOWN, FlowComponent, StackView, Topic, as_int, as_text
from topic_filter_rules import replicated_topics

_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000))


@dataclass(frozen=True)
class Retention:
    """How long one topic keeps records, and where that value comes from."""

    ms: int  # negative: unlimited
    origin: str  # "retention.ms in the topic's config", ...

    @property
    def unlimited(self) -> bool:
        return self.ms < 0


@dataclass(frozen=True)
class ShortRetention:
    flow: FlowComponent
    topic: Topic
    retention: Retention
    budget_ms: int


def duration_text(ms: int) -> str:
    """`86400000` -> "1d"; the largest unit that writes it exactly, else milliseconds."""
    for unit, size in _UNITS:
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def topic_retention(topic: Topic, view: StackView) -> Retention | None:
    """The topic's retention, None when preview cannot know it or deletion is not by time."""
    config = topic.config
    if config is None:
        return None
    policy = as_text(config.get("cleanup.policy"))
    if config.get("cleanup.policy") is UNKNOWN:
        return None
    if policy is not None and "delete" not in {p.strip().lower() for p in policy.split(",")}:
        return None  # compacted only: records expire by key, not by age
    raw = config.get("retention.ms")
    if raw is UNKNOWN:
        return None
    if raw is not None:
        value = as_int(raw)
        return None if value is None else Retention(value, f"retention.ms={value} in the topic's config")
    cluster = view.clusters.get(topic.cluster)
    if cluster is not None and cluster.log_retention_ms is not None:
        return Retention(cluster.log_retention_ms, f"cluster {topic.cluster}'s default from its brokerConfig")
    return Retention(KAFKA_DEFAULT_RETENTION_MS, "Kafka's default log.retention.hours=168")


def short_retentions(view: StackView, disaster_recovery: bool) -> Iterator[ShortRetention]:
    """Every (flow, source topic) whose retention does not outlast the flow's outage budget, for
    enabled flows whose `disasterRecovery` equals `disaster_recovery`."""
    for flow in view.flows:
        key = flow.flow
        if key is None or flow.enabled is not True or flow.outage_budget_seconds is None:
            continue
        if bool(flow.disaster_recovery) is not disaster_recovery:
            continue
        sources = [c for c in view.connectors_of(key, ConnectorKind.SOURCE) if c.config is not None]
        on_source = [t for t in view.topics if t.cluster == key[0]]
        names: set[str] = set()
        for connector in sources:
            include, exclude = connector.setting("topics"), connector.setting("topics.exclude")
            if include is None or exclude is None:
                continue
            names.update(replicated_topics((t.name for t in on_source), include, exclude) or ())
        budget_ms = flow.outage_budget_seconds * 1000
        for topic in on_source:
            retention = topic_retention(topic, view) if topic.name in names else None
            if retention is not None and not retention.unlimited and retention.ms <= budget_ms:
                yield ShortRetention(flow, topic, retention, budget_ms)


def _report(finding: ShortRetention, report_violation: ReportViolation) -> None:
    flow, topic, retention = finding.flow, finding.topic, finding.retention
    label = flow_label(flow.flow) if flow.flow else "?"
    kept, budget = duration_text(retention.ms), duration_text(finding.budget_ms)
    dr = " (disasterRecovery)" if flow.disaster_recovery else ""
    report_violation(
        f"Topic {topic.name} on cluster {topic.cluster}, replicated by flow {label}{dr}, keeps records for "
        f"{kept} ({retention.origin}), not longer than the flow's outage budget of {budget}: an outage of the "
        f"flow that long deletes records before MM2 copies them, and nothing reports the loss. Fix: set "
        f"retention.ms above {finding.budget_ms} ({budget}) in mm2:clusters.{topic.cluster}.topics."
        f"{topic.name}.config (or log.retention.ms in mm2:clusters.{topic.cluster}.brokerConfig), or "
        f"lower mm2:flows.{label}.outageBudget below {kept}.",
        topic.urn,
    )


def check_dr_retention(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    for finding in short_retentions(StackView.from_resources(args.resources), disaster_recovery=True):
        _report(finding, report_violation)


def check_retention(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    for finding in short_retentions(StackView.from_resources(args.resources), disaster_recovery=False):
        _report(finding, report_violation)


dr_retention_outlasts_outage_budget = StackValidationPolicy(
    name="dr-retention-outlasts-outage-budget",
    description=(
        "Every source topic of a disasterRecovery flow keeps records longer than the flow's outage budget "
        "(outageBudget): a longer outage would delete records MM2 has not copied."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=check_dr_retention,
)

retention_outlasts_outage_budget = StackValidationPolicy(
    name="retention-outlasts-outage-budget",
    description=(
        "Every source topic of a flow not marked disasterRecovery keeps records longer than the flow's "
        "outage budget (outageBudget)."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=check_retention,
)
