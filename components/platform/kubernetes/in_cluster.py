"""How the stack's clients inside a Kubernetes cluster (a group's workers, its lag exporter and its
watcher) reach a Kafka cluster: in-cluster when they run beside it, through its public listener
otherwise. Pure: the topology and the settings in, a topology or preview warnings out.

A kubernetes cluster's `bootstrap` is the address this machine reaches (an external listener,
public load balancers); `internalBootstrap` is what pods beside it use. Pods in the same
Kubernetes cluster that go out through the public listener are slower, billed as egress on most
clouds, and depend on the load balancers; pods elsewhere cannot resolve the in-cluster name. So
each worker group gets its own answer (`with_public_clusters`): in prod's two regions, each
region's workers reach their own cluster in-cluster and the other region's publicly.
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

from components.platform.container_broker import CLIENT_PORT
from components.platform.kubernetes.names import KafkaNames
from components.platform.settings import KubernetesSettings
from components.platform.topology_facts import group_clusters
from components.topology.model import Cluster, Platform, Topology, WorkerGroup


def beside(cluster: Cluster, group: WorkerGroup, settings: KubernetesSettings) -> bool:
    """Whether `group`'s pods run in the network of kubernetes cluster `cluster`: both in the same
    Kubernetes cluster (the same kubeconfig `context`; two unset contexts are the same one)."""
    return group.platform is Platform.KUBERNETES and (
        settings.group(group.name).context == settings.cluster(cluster.alias).context
    )


def with_public_clusters(topology: Topology, settings: KubernetesSettings) -> Topology:
    """`topology` with each worker group's `public_clusters`: the kubernetes clusters with an
    `internalBootstrap` that the group is not beside, so it reaches them at `bootstrap`. Clusters
    of other platforms keep `internalBootstrap` for every group (an existing cluster: its network
    is the user's to know)."""
    groups = dict(topology.worker_groups)
    for name, group in groups.items():
        public = frozenset(
            cluster.alias
            for cluster in group_clusters(topology, group)
            if cluster.platform is Platform.KUBERNETES
            and cluster.internal_bootstrap
            and not beside(cluster, group, settings)
        )
        if public != group.public_clusters:
            groups[name] = dataclasses.replace(group, public_clusters=public)
    return dataclasses.replace(topology, worker_groups=MappingProxyType(groups))


def public_bootstrap_notes(topology: Topology, settings: KubernetesSettings) -> list[str]:
    """A warning per kubernetes cluster without `internalBootstrap` that worker groups beside it
    reach at its public `bootstrap` (groups elsewhere go on using `bootstrap` once it is set)."""
    users: dict[str, list[str]] = {}
    for group in topology.worker_groups.values():
        for cluster in group_clusters(topology, group):
            users.setdefault(cluster.alias, []).append(group.name)
    notes = []
    for alias, names in sorted(users.items()):
        cluster = topology.clusters[alias]
        if cluster.platform is not Platform.KUBERNETES or not cluster.bootstrap or cluster.internal_bootstrap:
            continue
        near = sorted(g for g in names if beside(cluster, topology.worker_groups[g], settings))
        if not near:
            continue
        service = f"{KafkaNames(alias).bootstrap}.{settings.namespace}.svc:{CLIENT_PORT}"
        notes.append(
            f"mm2:clusters.{alias}.internalBootstrap is unset, so the workers of {', '.join(near)} (their "
            f"lag exporters and watchers too), in the same Kubernetes cluster as {alias}, reach it at its bootstrap "
            f"{cluster.bootstrap}, through its external listener. Set internalBootstrap: {service}."
        )
    return notes
