"""How the stack's clients inside a Kubernetes cluster (a group's workers, its lag exporter and its
watcher) reach a cluster of the same Kubernetes cluster. Pure: the topology and the settings in,
preview warnings out.

A kubernetes cluster's `bootstrap` is the address this machine reaches (an external listener,
public load balancers); `internalBootstrap` is what pods use. Without it, pods in the same
Kubernetes cluster go out through the public listener too: slower, billed as egress on most
clouds, and dependent on the load balancers.
"""

from __future__ import annotations

from components.platform.container_broker import CLIENT_PORT
from components.platform.kubernetes.names import KafkaNames
from components.platform.settings import KubernetesSettings
from components.platform.topology_facts import group_clusters
from components.topology.model import Platform, Topology


def public_bootstrap_notes(topology: Topology, settings: KubernetesSettings) -> list[str]:
    """A warning per kubernetes cluster that in-cluster clients would reach at its public
    `bootstrap` although `internalBootstrap` could serve them all: every worker group using it
    runs in its Kubernetes cluster (`internalBootstrap` is one address for every group; with a
    group elsewhere there is no such fix yet, and no warning)."""
    users: dict[str, list[str]] = {}
    for group in topology.worker_groups.values():
        for cluster in group_clusters(topology, group):
            users.setdefault(cluster.alias, []).append(group.name)
    notes = []
    for alias, groups in sorted(users.items()):
        cluster = topology.clusters[alias]
        if cluster.platform is not Platform.KUBERNETES or not cluster.bootstrap or cluster.internal_bootstrap:
            continue
        context = settings.cluster(alias).context
        beside = all(
            topology.worker_groups[g].platform is Platform.KUBERNETES and settings.group(g).context == context
            for g in groups
        )
        if not beside:
            continue
        service = f"{KafkaNames(alias).bootstrap}.{settings.namespace}.svc:{CLIENT_PORT}"
        notes.append(
            f"mm2:clusters.{alias}.internalBootstrap is unset, so the workers of {', '.join(sorted(groups))} (their "
            f"lag exporters and watchers too), in the same Kubernetes cluster as {alias}, reach it at its bootstrap "
            f"{cluster.bootstrap}, through its external listener. Set internalBootstrap: {service}."
        )
    return notes
