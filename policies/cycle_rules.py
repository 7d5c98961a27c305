"""No name-preserving replication on a cycle of flows (mandatory); the cycle search is in graph.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from graph import (
    FlowObservation,
    cycle_edges,
    flow_label,
    format_cycle,
    merge_flows,
    name_preserving_cycles,
)
from model_facts import DEFAULT_POLICY_CLASS, IDENTITY_POLICY_CLASS
from pulumi_policy import EnforcementLevel, ReportViolation, StackValidationArgs, StackValidationPolicy
from rule_config import config_schema, config_strings, string_array
from stack_view import StackView

DEFAULT_NAME_PRESERVING_POLICIES: Final = (
    IDENTITY_POLICY_CLASS,
    # Strimzi's pre-Kafka-3.0 copy of the same policy.
    "io.strimzi.kafka.connect.mirror.IdentityReplicationPolicy",
)


def is_name_preserving_class(class_name: str, preserving: Sequence[str]) -> bool:
    """Whether a replication policy class keeps topic names.

    Any class called IdentityReplicationPolicy does, whatever its package; other custom classes
    only when listed (or declared `namePreserving` on the flow).
    """
    name = class_name.strip()
    return name in preserving or name.rsplit(".", 1)[-1] == "IdentityReplicationPolicy"


def check_no_name_preserving_cycles(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    preserving = config_strings(args.get_config(), "namePreservingPolicies", DEFAULT_NAME_PRESERVING_POLICIES)
    view = StackView.from_resources(args.resources)
    observations: list[FlowObservation] = []
    for component in view.flows:
        if component.flow is None or component.enabled is not True:
            continue
        klass = component.replication_policy
        by_class = klass is not None and is_name_preserving_class(klass, preserving)
        declared = component.name_preserving is True
        label = klass
        if declared and not by_class:
            label = f"{klass or 'custom policy'} (declared namePreserving)"
        observations.append(
            FlowObservation(
                source=component.flow[0],
                target=component.flow[1],
                name_preserving=by_class or declared,
                policy=label,
                urn=component.urn,
                from_component=True,
            )
        )
    for connector in view.connectors:
        if connector.flow is None:
            continue
        klass = connector.setting("replication.policy.class")
        observations.append(
            FlowObservation(
                source=connector.flow[0],
                target=connector.flow[1],
                name_preserving=klass is not None and is_name_preserving_class(klass, preserving),
                policy=klass,
                urn=connector.urn,
            )
        )

    for finding in name_preserving_cycles(merge_flows(observations)):
        flows = "; ".join(
            f"{flow.label} ({', '.join(flow.policies) or 'name-preserving policy'}; {flow.urns[0]})"
            for flow in finding.offending
        )
        labels = ", ".join(flow.label for flow in finding.offending)
        cycles = "; ".join(format_cycle(cycle) for cycle in finding.cycles)
        # Closing edge of each cycle: for active/active that is the reverse flow.
        breakers = ", ".join(dict.fromkeys(flow_label(cycle_edges(c)[-1]) for c in finding.cycles))
        report_violation(
            f"Replication loop on cycle {cycles}: flow(s) {flows} keep topic names, so a record that "
            f"travels the cycle comes back to its origin cluster under a name MM2 cannot tell from a "
            f"local topic and is replicated again, forever (clusters {', '.join(finding.clusters)}). "
            f"Fix: use DefaultReplicationPolicy ({DEFAULT_POLICY_CLASS}, remote topics prefixed "
            f"'<source alias><separator>') instead of a name-preserving policy on {labels} - every flow of "
            f"the cycle needs the prefix - or disable the reverse flow to break the cycle (e.g. {breakers}).",
            finding.offending[0].urns[0],
        )


no_name_preserving_replication_on_cycles = StackValidationPolicy(
    name="no-name-preserving-replication-on-cycles",
    description=(
        "No flow that keeps topic names (IdentityReplicationPolicy or a custom name-preserving policy) may "
        "lie on a cycle of replication flows: records would be replicated around the cycle forever."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=check_no_name_preserving_cycles,
    config_schema=config_schema(
        namePreservingPolicies=string_array(
            DEFAULT_NAME_PRESERVING_POLICIES,
            "Replication policy classes that keep topic names (besides any *.IdentityReplicationPolicy and "
            "flows declared namePreserving).",
        )
    ),
)
