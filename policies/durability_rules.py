"""Durability of a flow: replication factors that fit their cluster, disaster-recovery flows that
sync consumer-group offsets, and source connectors with enough tasks outside dev."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from graph import flow_label
from model_facts import CONNECTOR_TYPE, MM2_DEFAULTS, ConnectorKind
from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from rule_config import DEV_STACKS_SCHEMA, config_flag, config_integer, config_schema, current_stack_name, is_dev_stack
from stack_view import UNKNOWN, StackView, as_bool, as_int, connector_from_props, plain

# --------------------------------------------------------------------------------------------
# Replication factors fit the cluster the topic lives on
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicReplicationFactor:
    key: str
    topic: str
    on_source: bool


REPLICATION_FACTOR_TOPICS: Final[Mapping[ConnectorKind, tuple[TopicReplicationFactor, ...]]] = {
    ConnectorKind.SOURCE: (
        TopicReplicationFactor("replication.factor", "remote topics", on_source=False),
        TopicReplicationFactor("offset-syncs.topic.replication.factor", "offset-syncs topic", on_source=True),
    ),
    ConnectorKind.CHECKPOINT: (
        TopicReplicationFactor("checkpoints.topic.replication.factor", "checkpoints topic", False),
    ),
    ConnectorKind.HEARTBEAT: (
        TopicReplicationFactor("heartbeats.topic.replication.factor", "heartbeats topic", False),
    ),
}


def check_replication_factors(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    apply_defaults = config_flag(args.get_config(), "applyMm2Defaults", True)
    view = StackView.from_resources(args.resources)
    for connector in view.connectors:
        if connector.kind is None or connector.flow is None or connector.config is None:
            continue
        for spec in REPLICATION_FACTOR_TOPICS[connector.kind]:
            on_source = spec.on_source
            if spec.key.startswith("offset-syncs"):
                location = connector.setting("offset-syncs.topic.location")
                if location is None:
                    continue
                on_source = location.strip().lower() != "target"
            alias = connector.flow[0] if on_source else connector.flow[1]
            cluster = view.clusters.get(alias)
            if cluster is None or cluster.brokers is None or cluster.brokers < 1:
                continue
            raw = connector.raw(spec.key)
            if raw is UNKNOWN or (raw is None and not apply_defaults):
                continue
            defaulted = raw is None
            factor = as_int(MM2_DEFAULTS[spec.key] if defaulted else raw)
            if factor is None or factor < 1:  # -1: the broker's default.replication.factor
                continue
            if factor > cluster.brokers:
                how = "is not set, so MM2's default" if defaulted else "is"
                report_violation(
                    f"Connector {connector.name} (flow {flow_label(connector.flow)}): {spec.key} {how} "
                    f"{factor}, but it creates the {spec.topic} on cluster '{alias}', which has "
                    f"{cluster.brokers} broker(s); MM2 cannot create the topic and the connector fails. "
                    f"Fix: set {spec.key} to at most {cluster.brokers} in the flow's settings, or give "
                    f"'{alias}' at least {factor} brokers.",
                    connector.urn,
                )


# --------------------------------------------------------------------------------------------
# Disaster-recovery flows sync consumer-group offsets
# --------------------------------------------------------------------------------------------


def check_dr_offset_sync(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = StackView.from_resources(args.resources)
    for component in view.flows:
        flow = component.flow
        if flow is None or component.enabled is not True or component.disaster_recovery is not True:
            continue
        label = flow_label(flow)
        checkpoints = [c for c in view.connectors_of(flow, ConnectorKind.CHECKPOINT) if c.config is not None]
        fix = (
            f'Fix: set sync.group.offsets.enabled: "true" (and leave emit.checkpoints.enabled true) in the '
            f"settings of flow {label}, or set disasterRecovery: false if consumers will not fail over."
        )
        if not checkpoints:
            # Connector missing is rule 3's finding; an unknown config falls back to the component.
            if component.sync_group_offsets is False:
                report_violation(
                    f"Flow {label} ({component.urn}) is marked disasterRecovery but syncGroupOffsets is false: "
                    f"after failover its consumer groups have no committed offsets on '{flow[1]}'. {fix}",
                    component.urn,
                )
            continue
        for checkpoint in checkpoints:
            sync = as_bool(checkpoint.setting("sync.group.offsets.enabled"))
            emit = as_bool(checkpoint.setting("emit.checkpoints.enabled"))
            problems: list[str] = []
            if sync is False:
                problems.append("sync.group.offsets.enabled is not true")
            if emit is False:
                problems.append("emit.checkpoints.enabled is false (offset sync needs checkpoints)")
            if problems:
                report_violation(
                    f"Flow {label} is marked disasterRecovery but its checkpoint connector {checkpoint.name}: "
                    f"{'; '.join(problems)}. After failover, consumers on '{flow[1]}' find no translated "
                    f"offsets in __consumer_offsets and restart from the reset policy. {fix}",
                    checkpoint.urn,
                )


# --------------------------------------------------------------------------------------------
# tasks.max >= 2 for source connectors outside dev (resource validation)
# --------------------------------------------------------------------------------------------


def check_source_tasks(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type != CONNECTOR_TYPE:
        return
    config_args = args.get_config()
    if is_dev_stack(config_args):
        return
    minimum = config_integer(config_args, "minTasks", 2)
    props = plain(args.props)
    if not isinstance(props, Mapping):
        return
    connector = connector_from_props(args.urn, args.name, props)
    if connector.kind is not ConnectorKind.SOURCE or connector.config is None:
        return
    tasks = as_int(connector.setting("tasks.max"))
    if tasks is None or tasks >= minimum:
        return
    how = "is not set (Connect's default 1)" if connector.raw("tasks.max") is None else f"is {tasks}"
    flow = f" (flow {flow_label(connector.flow)})" if connector.flow else ""
    report_violation(
        f"Source connector {connector.name}{flow}: tasks.max {how} on stack '{current_stack_name()}'; one task "
        f"replicates every partition alone, cannot keep up with production load and stops the flow whenever "
        f"its worker restarts. Fix: set tasksMax (tasks.max) to at least {minimum} for the flow.",
        None,
    )


replication_factor_within_broker_count = StackValidationPolicy(
    name="replication-factor-within-broker-count",
    description=(
        "Replication factors of remote topics and of MM2's checkpoints, heartbeats and offset-syncs topics "
        "must not exceed the broker count of the cluster that hosts them."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=check_replication_factors,
    config_schema=config_schema(
        applyMm2Defaults={
            "type": "boolean",
            "default": True,
            "description": "Check MM2's defaults (2 for remote topics, 3 for internal topics) when a key is unset.",
        }
    ),
)

disaster_recovery_syncs_group_offsets = StackValidationPolicy(
    name="disaster-recovery-syncs-group-offsets",
    description="Flows marked disasterRecovery sync consumer-group offsets to the target.",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=check_dr_offset_sync,
)

source_connector_min_tasks = ResourceValidationPolicy(
    name="source-connector-min-tasks",
    description="MirrorSourceConnector runs at least two tasks outside dev stacks.",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=check_source_tasks,
    config_schema=config_schema(
        devStacks=DEV_STACKS_SCHEMA,
        minTasks={"type": "integer", "minimum": 1, "default": 2, "description": "Smallest tasks.max allowed."},
    ),
)
