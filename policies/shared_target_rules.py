"""Flows into one target cluster agree on the settings MM2 shares through that cluster."""

from __future__ import annotations

from graph import FlowKey, flow_label
from model_facts import MM2_DEFAULTS, SHARED_TARGET_KEYS, ConnectorKind
from pulumi_policy import EnforcementLevel, ReportViolation, StackValidationArgs, StackValidationPolicy
from rule_config import config_schema, config_strings, string_array
from stack_view import UNKNOWN, StackView, comparable


def _shared_value(view: StackView, flow: FlowKey, key: str) -> tuple[str, str] | None:
    """(value, where) for a flow's setting, from the connector that owns it; None when unknown."""
    kinds = SHARED_TARGET_KEYS.get(key, tuple(ConnectorKind))
    for kind in kinds:
        for connector in view.connectors_of(flow, kind):
            if connector.config is None:
                continue
            raw = connector.raw(key)
            if raw is UNKNOWN:
                return None
            if raw is None and key not in MM2_DEFAULTS:
                return ("(unset)", connector.name)
            value = connector.setting(key)
            return None if value is None else (value, connector.name)
    component = view.component_of(flow)
    if component is not None:
        if key == "replication.policy.class" and component.replication_policy is not None:
            return (component.replication_policy, component.urn)
        if key == "replication.policy.separator" and component.separator is not None:
            return (component.separator, component.urn)
    return None


def check_shared_target_settings(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    keys = config_strings(args.get_config(), "sharedKeys", tuple(SHARED_TARGET_KEYS))
    view = StackView.from_resources(args.resources)
    by_target: dict[str, list[FlowKey]] = {}
    for flow in view.enabled_flows():
        by_target.setdefault(flow[1], []).append(flow)
    for target, flows in by_target.items():
        if len(flows) < 2:
            continue
        for key in keys:
            values: dict[FlowKey, tuple[str, str]] = {}
            for flow in flows:
                found = _shared_value(view, flow, key)
                if found is not None:
                    values[flow] = found
            distinct = {comparable(key, value) for value, _ in values.values()}
            if len(distinct) < 2:
                continue
            listing = "; ".join(f"{flow_label(f)}: '{v}' ({where})" for f, (v, where) in values.items())
            cluster = view.clusters.get(target)
            report_violation(
                f"Flows into cluster '{target}' disagree on {key}: {listing}. These flows share topics and "
                f"naming on '{target}' (remote and internal topic names are parsed with one replication "
                f"policy; all heartbeat connectors write the one heartbeats topic), so one of them is "
                f"misread or silently overridden. Fix: set {key} once in mm2:defaults.settings (or to the "
                f"same value on every flow into '{target}').",
                cluster.urn if cluster is not None else view.flow_urn(next(iter(values))),
            )


shared_target_settings_consistent = StackValidationPolicy(
    name="shared-target-settings-consistent",
    description="Flows into the same target cluster set target-shared MM2 settings identically.",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=check_shared_target_settings,
    config_schema=config_schema(
        sharedKeys=string_array(
            tuple(SHARED_TARGET_KEYS), "MM2 settings that every flow into one target cluster must agree on."
        )
    ),
)
