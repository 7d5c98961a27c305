"""A worker group's lag exporter plan from the topology (PURE), shared by the platforms that run
the exporter: locally a process of the stack (local/lag_exporter.py), on Kubernetes a Deployment.
"""

from __future__ import annotations

from collections.abc import Mapping

from components.topology import ConnectorRole, Topology, connector_name
from components.topology.connectors import group_bootstrap_servers
from components.watch.lag_plan import LagFlow, LagPlan, split_client


def lag_flows(topology: Topology, group: str) -> tuple[LagFlow, ...]:
    """The enabled flows the worker group runs, as the exporter reads them."""
    return tuple(
        LagFlow(
            name=f.name,
            source=f.source,
            target=f.target,
            connector=connector_name(f, ConnectorRole.SOURCE),
            topics=f.topics,
            topics_exclude=f.topics_exclude,
            rpo_seconds=f.rpo_seconds,
        )
        for f in topology.enabled_flows()
        if f.worker_group == group
    )


def plan_clusters(topology: Topology, group: str) -> tuple[str, ...]:
    """The clusters the exporter reads: every source of the group's flows and its storage cluster."""
    wanted = {topology.worker_groups[group].cluster, *(f.source for f in lag_flows(topology, group))}
    return tuple(sorted(wanted))


def public_clients(
    topology: Topology, group: str, clients: Mapping[str, Mapping[str, str]]
) -> dict[str, dict[str, str]]:
    """Each read cluster's bootstrap and the public part of its client settings."""
    out = {}
    for alias in plan_clusters(topology, group):
        public, _secret = split_client(clients.get(alias) or {})
        bootstrap = group_bootstrap_servers(topology.clusters[alias], topology.worker_groups[group])
        out[alias] = {"bootstrap.servers": bootstrap, **public}
    return out


def secret_clients(
    topology: Topology, group: str, clients: Mapping[str, Mapping[str, str]]
) -> dict[str, dict[str, str]]:
    """The secret part of each read cluster's client settings (the secrets file's content)."""
    return {alias: split_client(clients.get(alias) or {})[1] for alias in plan_clusters(topology, group)}


def plan_for(
    topology: Topology, group: str, clients: Mapping[str, Mapping[str, str]], *, listen: str, poll_s: float
) -> LagPlan:
    """The plan of `group`'s exporter; `clients` maps each cluster alias to its librdkafka settings."""
    declared = topology.worker_groups[group]
    return LagPlan(
        group=group,
        storage_cluster=declared.cluster,
        offsets_topic=declared.offset_topic,
        clusters=public_clients(topology, group, clients),
        flows=lag_flows(topology, group),
        listen=listen,
        poll_s=poll_s,
    )
