"""The brokers of the clusters `bin/status` reads: which are down or behind, and where they run.

A broker is down when it holds replicas but is not in the cluster's metadata (fenced or gone);
behind when it is there but some of its replicas are out of the in-sync set. Where the stack runs
the brokers as pods (Kubernetes, `ClusterExport.pods`), `pod_place` asks the API server which
node a broker's pod is on and whether that node is Ready, so the line names both.

Pure but for `pod_place`.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from components.platform.kubernetes.metadata import ZONE_LABEL


@dataclass(frozen=True)
class PartitionReplicas:
    """One partition as the cluster's metadata shows it: its replicas and in-sync replicas (broker ids)."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class BrokerGap:
    """A broker that is down (not in the metadata) or behind (replicas out of sync)."""

    broker: int
    down: bool
    behind: int  # partitions with a replica on it that is not in sync
    place: str = ""  # where it runs, when the platform tells (`pod_place`)


@dataclass(frozen=True)
class ClusterHealth:
    alias: str
    brokers: tuple[int, ...]  # every broker the metadata names: live ones and replica holders
    gaps: tuple[BrokerGap, ...]
    under_replicated: int  # partitions with fewer in-sync replicas than replicas

    @property
    def healthy(self) -> bool:
        return not self.gaps and not self.under_replicated

    @property
    def problems(self) -> tuple[str, ...]:
        return tuple(gap_problem(self.alias, gap) for gap in self.gaps)


def cluster_health(alias: str, live: Iterable[int], partitions: Sequence[PartitionReplicas]) -> ClusterHealth:
    """What the metadata of cluster `alias` says of its brokers: `live` are the registered ones."""
    up = set(live)
    behind = Counter(b for p in partitions for b in p.replicas if b not in p.isr)
    brokers = tuple(sorted(up | {b for p in partitions for b in p.replicas}))
    gaps = tuple(BrokerGap(b, b not in up, behind[b]) for b in brokers if b not in up or behind[b])
    under = sum(1 for p in partitions if len(p.isr) < len(p.replicas))
    return ClusterHealth(alias, brokers, gaps, under)


def gap_problem(alias: str, gap: BrokerGap) -> str:
    """One line: the broker, what is wrong, where it runs, and the next step."""
    replicas = f"{gap.behind} of its partition replicas out of sync"
    where = f" It runs as {gap.place}." if gap.place else ""
    if gap.down:
        step = (
            "bring the node back (the broker rejoins and catches up by itself)"
            if "NotReady" in gap.place
            else "start the broker again; it rejoins and catches up by itself"
        )
        down = f"cluster {alias}: broker {gap.broker} is down (not registered with the cluster), {replicas}."
        return f"{down}{where} Next step: {step}."
    return (
        f"cluster {alias}: broker {gap.broker} is behind, {replicas}.{where} Next step: wait while it catches up; "
        "if the count does not fall, check its disk and network."
    )


def health_lines(clusters: Sequence[ClusterHealth]) -> list[str]:
    """The human view: nothing for a healthy cluster, a verdict and its problems otherwise."""
    lines = []
    for c in clusters:
        if c.healthy:
            continue
        down = [g.broker for g in c.gaps if g.down]
        answering = len(c.brokers) - len(down)
        lines.append(
            f"cluster {c.alias}  DEGRADED: {answering} of {len(c.brokers)} brokers registered, "
            f"{c.under_replicated} partition(s) under-replicated"
        )
        lines += [f"  why degraded: {problem}" for problem in c.problems]
    return lines


def health_json(c: ClusterHealth) -> dict[str, Any]:
    return {
        "healthy": c.healthy,
        "brokers": list(c.brokers),
        "down": [g.broker for g in c.gaps if g.down],
        "behind": {str(g.broker): g.behind for g in c.gaps if g.behind},
        "underReplicated": c.under_replicated,
        "problems": list(c.problems),
    }


def pod_place(pods: Mapping[str, str], broker: int, environ: Mapping[str, str] = os.environ) -> str:
    """Where broker `broker` of a cluster whose brokers run as pods (`pods`: context, namespace,
    statefulset) runs: its pod, its node and zone, and whether the node is Ready. A reason in
    place of the node when the API server cannot tell."""
    from components.platform.kubernetes.access import kubeconfig_context
    from components.platform.kubernetes.api import Unsupported, get_json

    name = f"{pods['statefulset']}-{broker}"
    try:
        config, base, context = kubeconfig_context(environ, pods.get("context") or "")
        pod = get_json(config, context, f"/api/v1/namespaces/{pods['namespace']}/pods/{name}", base)
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            return f"pod {name}, not placed on a node ({(pod.get('status') or {}).get('phase', 'no phase')})"
        node = get_json(config, context, f"/api/v1/nodes/{node_name}", base)
    except (Unsupported, OSError, ValueError, KeyError) as exc:
        return f"pod {name} (its node could not be read: {exc})"
    return f"pod {name} on node {node_name}{_zone(node)}, {node_condition(node)}"


def _zone(node: Mapping[str, Any]) -> str:
    zone = ((node.get("metadata") or {}).get("labels") or {}).get(ZONE_LABEL)
    return f" ({zone})" if zone else ""


def node_condition(node: Mapping[str, Any]) -> str:
    """'which is Ready', or 'which is NotReady: <the node controller's message>'."""
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    if ready is not None and ready.get("status") == "True":
        return "which is Ready"
    message = (ready or {}).get("message") or "no Ready condition"
    return f"which is NotReady: {message.rstrip('.')}"
