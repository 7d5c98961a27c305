"""ReplicationFlow: one MM2 flow `source->target` as its three connectors on a Connect worker group.

MirrorSourceConnector copies records, topic configs and ACLs and writes offset syncs;
MirrorCheckpointConnector translates consumer-group offsets; MirrorHeartbeatConnector emits
heartbeats. All three are created in parallel, each waiting until it and its tasks reach the
state the flow declares (`state` / `connectorStates`: running unless paused or stopped).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi

from components.connect.provider import Connector
from components.connect_group import ConnectWorkerGroup
from components.kafka_cluster import KafkaCluster
from components.outputs.contract import FlowExport, LinkExport
from components.rollout import CredentialRollout
from components.topology import (
    ConnectorRole,
    ConnectorSpec,
    Flow,
    FlowConnectors,
    Topology,
    checkpoints_topic,
    flow_connectors,
    heartbeats_topic,
    offset_syncs_cluster,
    offset_syncs_topic,
    remote_topic,
    reverse_heartbeat_connector,
)
from components.topology.connectors import exactly_once_active, transform_aliases
from components.topology.link_preview import derived_lines, peak_rate_warning
from components.topology.links import link_of
from components.topology.model import Platform
from components.topology.objectives import rpo_warnings
from components.topology.security import flow_secret_keys, unmanaged_exactly_once_grants
from components.topology.settings import pass_through_keys


class ReplicationFlow(pulumi.ComponentResource):
    """The three MM2 connectors of one flow, and what the flow produces on the target."""

    connectors: dict[ConnectorRole, Connector]
    summary: pulumi.Output[dict[str, Any]]

    def __init__(
        self,
        name: str,
        flow: Flow,
        topology: Topology,
        group: ConnectWorkerGroup,
        clusters: dict[str, KafkaCluster],
        credentials: pulumi.Output[Mapping[str, str]] | None = None,
        after: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = _registered_props(flow)
        super().__init__("mm2:index:ReplicationFlow", name, props, opts)
        _preview_notes(self, flow, topology)
        specs = flow_connectors(topology, flow)
        unchecked = sorted({k for spec in specs.all() for k in pass_through_keys(_user_keys(flow, spec.role))})
        if unchecked:
            pulumi.log.info(
                f"ReplicationFlow {flow.name}: {', '.join(unchecked)} are checked by Connect's validation at preview "
                "when the worker group answers, else before the connectors are first created."
            )
        # A connector must not start before the clusters it reads and writes, and the topics it
        # replicates, exist; nor before the workers that will run it.
        # A pair's Switchover (`after`) stops and starts the flow itself, in its order.
        depends: list[pulumi.Resource] = [group, clusters[flow.source], clusters[flow.target], *after]
        # Workers the stack deploys are rolled to the flow's exactly-once support before the
        # connectors change: the preview must not refuse it on the workers still running.
        managed = topology.worker_groups[flow.worker_group].platform is not Platform.EXTERNAL
        access = _access_check(flow, topology, clusters[flow.target])
        # An unplanned failover's flows touch the lost cluster, where stopping a connector waits
        # (up to admin.timeout.ms): ask for the state, do not wait for it.
        lost = any(p.unplanned and flow.name in (p.active_flow, p.standby_flow) for p in topology.pairs)

        def connector(spec: ConnectorSpec) -> Connector:
            return Connector(
                spec.name,
                connect_url=group.url,
                connector_name=spec.name,
                config=dict(spec.config),
                auth=group.auth,
                ca_pem=group.ca_pem,
                desired_state=flow.state_of(spec.role).connect_state,
                managed_workers=managed or None,
                other_urls=group.other_urls or None,
                wait_for_state=False if lost else None,
                access_check=access if spec.role is ConnectorRole.SOURCE else None,
                opts=pulumi.ResourceOptions(parent=self, depends_on=depends),
            )

        self.connectors = {spec.role: connector(spec) for spec in specs.all()}
        # `reverseHeartbeats`: a fourth connector, heartbeats target -> source, in the same state as
        # the flow's heartbeat connector (topology/connectors.py: reverse_heartbeat_connector).
        reverse = reverse_heartbeat_connector(topology, flow)
        self.reverse_heartbeat: Connector | None = connector(reverse) if reverse is not None else None
        every = (*specs.all(), *([reverse] if reverse is not None else []))
        resources = [*self.connectors.values(), *([self.reverse_heartbeat] if self.reverse_heartbeat else [])]
        states = {spec.name: resource.state for spec, resource in zip(every, resources, strict=True)}
        keys = flow_secret_keys(topology, flow)
        self.rollout: CredentialRollout | None = None
        # On kubernetes the workers roll onto a changed secrets file (their pod template carries
        # its digest), so every task starts again with the new values: restarting them after
        # would only stop them a second time.
        rolls = topology.worker_groups[flow.worker_group].platform is Platform.KUBERNETES
        if keys and credentials is not None and not rolls:
            # Connector configs hold placeholders only, so a rotated password changes none of
            # them: restart the flow's connectors when the passwords they resolve change.
            self.rollout = CredentialRollout(
                f"{name}-rollout",
                flow=flow.name,
                connect_url=group.url,
                connectors=[spec.name for spec in every],
                credentials=credentials.apply(lambda v: {k: str(v[k]) for k in keys}),
                auth=group.auth,
                ca_pem=group.ca_pem,
                states={spec.name: flow.state_of(spec.role).connect_state for spec in every},
                opts=pulumi.ResourceOptions(parent=self, depends_on=resources),
            )
        self.summary = pulumi.Output.all(**states).apply(functools.partial(flow_export, flow, topology, specs))
        self.register_outputs({**props, "summary": self.summary})


def _preview_notes(resource: pulumi.Resource, flow: Flow, topology: Topology) -> None:
    """What the preview says on the flow: objectives its signals cannot measure and a peakRate its
    WAN link cannot carry (warnings), the client settings derived from that link (info)."""
    warnings = [*rpo_warnings(flow)]
    peak = peak_rate_warning(topology, flow)
    warnings += [peak] if peak is not None else []
    for warning in warnings:
        pulumi.log.warn(f"ReplicationFlow {warning}", resource=resource)
    for line in derived_lines(topology, flow):
        pulumi.log.info(f"ReplicationFlow {line}", resource=resource)


def _registered_props(flow: Flow) -> dict[str, Any]:
    """The flow's registered inputs, also registered as outputs (see KafkaCluster): the policies
    read them (the loop policy its replication policy, the retention policy its outage budget)."""
    policy = flow.replication_policy
    return {
        "source": flow.source,
        "target": flow.target,
        "enabled": flow.enabled,
        "replicationPolicy": policy.class_name,
        "separator": policy.separator,
        "namePreserving": policy.preserves_names,
        "disasterRecovery": flow.disaster_recovery,
        "syncGroupOffsets": flow.settings.get("sync.group.offsets.enabled") == "true",
        "workerGroup": flow.worker_group,
        # Declared objectives in seconds (`rpo`, `outageBudget`).
        "rpoSeconds": flow.rpo_seconds,
        "outageBudgetSeconds": flow.outage_budget_seconds,
    }


def _access_check(flow: Flow, topology: Topology, target: KafkaCluster) -> pulumi.Output[dict[str, Any]] | None:
    """What the source connector's preview check needs to see that a target the stack does not
    grant ACLs on already holds the flow's exactly-once grants (None when there is nothing to check)."""
    grants = unmanaged_exactly_once_grants(topology, flow)
    if not grants:
        return None
    return pulumi.Output.all(bootstrap=target.bootstrap, client=target.client).apply(
        lambda v: {
            "flow": flow.name,
            "cluster": flow.target,
            "bootstrap": v["bootstrap"],
            "client": dict(v["client"]),
            "acls": [a.as_dict() for a in grants],
        }
    )


def _user_keys(flow: Flow, role: ConnectorRole) -> list[str]:
    return (
        [*flow.settings, *flow.role_settings.get(role, {})]
        if role is ConnectorRole.SOURCE
        else [*flow.role_settings.get(role, {})]
    )


def flow_export(flow: Flow, topology: Topology, specs: FlowConnectors, states: Mapping[str, str]) -> dict[str, Any]:
    """The flow's entry in the stack outputs (the contract's `FlowExport`), given its connectors
    and the live state of each by connector name."""
    policy = flow.replication_policy
    return FlowExport(
        name=flow.name,
        source=flow.source,
        target=flow.target,
        worker_group=flow.worker_group,
        connectors={spec.role.value: spec.name for spec in specs.all()},
        states=dict(states),
        desired_states={spec.role.value: flow.state_of(spec.role).connect_state for spec in specs.all()},
        topics={t.name: remote_topic(flow, t.name) for t in topology.clusters[flow.source].topics},
        checkpoints_topic=checkpoints_topic(flow),
        offset_syncs_topic=offset_syncs_topic(flow),
        heartbeats_topic=heartbeats_topic(flow),
        exactly_once=exactly_once_active(topology, flow),
        offset_lag_max=int(flow.settings.get("offset.lag.max", "100")),
        groups=tuple(flow.groups),
        separator=policy.separator,
        name_preserving=policy.preserves_names,
        offset_syncs_cluster=offset_syncs_cluster(flow),
        enabled=flow.enabled,
        reverse_heartbeats_connector=reverse.name if (reverse := reverse_heartbeat_connector(topology, flow)) else None,
        transforms=transform_aliases(specs.source.config),
        rpo_seconds=flow.rpo_seconds,
        outage_budget_seconds=flow.outage_budget_seconds,
        loss_acknowledged_at_ms=flow.loss_acknowledged_at_ms,
        link=LinkExport(link.name, link.rtt_ms, link.bandwidth_bps) if (link := link_of(topology, flow)) else None,
    ).to_json()
