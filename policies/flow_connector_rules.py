"""A flow's connectors: every enabled flow runs all three, and its source and checkpoint agree."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from graph import flow_label
from model_facts import ConnectorKind, connector_name
from pulumi_policy import EnforcementLevel, ReportViolation, StackValidationArgs, StackValidationPolicy
from stack_view import StackView, comparable

# --------------------------------------------------------------------------------------------
# Every enabled flow has its three connectors
# --------------------------------------------------------------------------------------------

_MISSING_WHY: Final[Mapping[ConnectorKind, str]] = {
    ConnectorKind.SOURCE: "no records are replicated",
    ConnectorKind.CHECKPOINT: "consumer-group offsets are not translated, so failover restarts consumers at "
    "the wrong position",
    ConnectorKind.HEARTBEAT: "nothing shows the flow is alive, so a silent stall is found only at failover",
}


def check_flow_connectors(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = StackView.from_resources(args.resources)
    for flow in view.enabled_flows():
        missing: list[ConnectorKind] = []
        for kind in ConnectorKind:
            expected = connector_name(flow[0], flow[1], kind)
            if view.connectors_of(flow, kind) or any(c.name == expected for c in view.connectors):
                continue
            missing.append(kind)
        if not missing:
            continue
        where = view.flow_urn(flow)
        details = "; ".join(f"no {k.class_name} ({_MISSING_WHY[k]})" for k in missing)
        names = ", ".join(connector_name(flow[0], flow[1], k) for k in missing)
        report_violation(
            f"Flow {flow_label(flow)} ({where}): {details}. Fix: deploy all three connectors for the flow "
            f"(expected {names}); do not remove or disable them in the flow's settings.",
            where,
        )


# --------------------------------------------------------------------------------------------
# Source and checkpoint connectors of one flow agree
# --------------------------------------------------------------------------------------------

# The checkpoint connector re-derives what the source connector did: which topics were
# replicated (topic filter), what they are called on the target (policy, separator) and where
# the offset syncs are (location). Any disagreement breaks offset translation silently.
AGREEMENT_KEYS: Final = (
    "replication.policy.class",
    "replication.policy.separator",
    "offset-syncs.topic.location",
    "topics",
    "topics.exclude",
    "topic.filter.class",
)


def check_connectors_agree(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = StackView.from_resources(args.resources)
    for flow in view.enabled_flows():
        sources = view.connectors_of(flow, ConnectorKind.SOURCE)
        if not sources:
            continue
        source = sources[0]
        for key in AGREEMENT_KEYS:
            expected = source.setting(key)
            if expected is None:
                continue
            for other in view.connectors_of(flow, ConnectorKind.CHECKPOINT):
                actual = other.setting(key)
                if actual is None or comparable(key, actual) == comparable(key, expected):
                    continue
                report_violation(
                    f"Flow {flow_label(flow)}: {key} differs between {source.name} ('{expected}'"
                    f"{' by default' if source.raw(key) is None else ''}) and {other.name} ('{actual}'"
                    f"{' by default' if other.raw(key) is None else ''}). The checkpoint connector then "
                    f"looks for other topics, other remote names or another offset-syncs topic than the "
                    f"source connector wrote, and translated offsets are wrong or never emitted. "
                    f"Fix: set {key} once at the flow level so all connectors of {flow_label(flow)} get "
                    f"the same value.",
                    other.urn,
                )


flow_has_all_connectors = StackValidationPolicy(
    name="flow-has-all-connectors",
    description="Every enabled flow runs its source, checkpoint and heartbeat connectors.",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=check_flow_connectors,
)

flow_connectors_agree = StackValidationPolicy(
    name="flow-connectors-agree",
    description=(
        "The source and checkpoint connectors of one flow agree on replication policy, separator, "
        "offset-syncs topic location and topic filter."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=check_connectors_agree,
)
