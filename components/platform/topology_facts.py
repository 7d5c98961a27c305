"""Facts every platform derives from the topology: the KRaft cluster id of a cluster and the
clusters a worker group talks to (the heartbeat topics its flows deliver are the pure core's:
`components.topology.connectors.heartbeat_topics`).

Pure: no pulumi import and no I/O.
"""

from __future__ import annotations

import base64
import hashlib

from components.topology.model import Cluster, Topology, WorkerGroup


def kraft_cluster_id(stack: str, alias: str) -> str:
    """A stable KRaft cluster id (base64url of 16 bytes) per stack and cluster, for every platform,
    so an update never re-formats storage under another id.

    Never starts with '-' (like Kafka's own Uuid.randomUuid): tools read such an id as an option.
    Ids that did not start with '-' are unchanged by that rule."""
    seed = f"mm2/{stack}/{alias}"
    for attempt in range(256):
        digest = hashlib.sha256((seed if attempt == 0 else f"{seed}#{attempt}").encode()).digest()[:16]
        text = base64.urlsafe_b64encode(digest).decode().rstrip("=")
        if not text.startswith("-"):
            return text
    raise AssertionError("unreachable: 1 in 64 digests starts with '-'")


def group_clusters(topology: Topology, group: WorkerGroup) -> tuple[Cluster, ...]:
    """The clusters a worker group talks to: its storage cluster and every flow end it runs."""
    aliases = {group.cluster}
    for flow in topology.enabled_flows():
        if flow.worker_group == group.name:
            aliases.update((flow.source, flow.target))
    return tuple(topology.clusters[a] for a in sorted(aliases))
