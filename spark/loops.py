"""Which remote-looking topic names the topology can produce on each cluster (pure).

Under DefaultReplicationPolicy a topic `A<sep>t` on cluster C can only come from a flow A->C,
and `t` must itself have been possible on A. A name like `dr.primary.orders` on `primary` under
a one-way `primary->dr` flow means something replicated in a direction the stack does not
declare: a loop or a stray MM2. A name that carries the cluster's own alias, or one alias twice,
only comes from a cycle. Identity flows keep names (except heartbeats), so their loops are not
visible in names at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from components.outputs.contract import FlowExport


@dataclass(frozen=True)
class IllegalTopic:
    cluster: str
    topic: str
    reason: str


def _verdict(
    name: str, cluster: str, flows: list[FlowExport], aliases: set[str], seps: set[str], seen: tuple[str, ...]
) -> str | None:
    """None if some chain of declared flows can put `name` on `cluster`, else the reason why not."""
    for sep in sorted(seps):
        prefix, dot, rest = name.partition(sep)
        if not dot or prefix not in aliases or not rest:
            continue
        if prefix == cluster or prefix in seen:
            return f"names cluster {prefix!r} twice on its way to {cluster!r}: only a replication cycle produces it"
        if not any(f.source == prefix and f.target == cluster for f in flows):
            return f"looks replicated from {prefix!r}, but no flow {prefix}->{cluster} is declared"
        # The flow's topic filter may be a pattern, so any name from a declared flow is fine, as
        # long as the name it had upstream was itself possible there.
        return _verdict(rest, prefix, flows, aliases, seps, (*seen, cluster))
    return None  # not a remote-looking name: a local topic


def illegal_topics(topics_by_cluster: Mapping[str, Iterable[str]], flows: Iterable[FlowExport]) -> list[IllegalTopic]:
    """Alias-prefixed topics on a cluster that no declared flow (or chain of flows) produces."""
    flows = list(flows)
    aliases = set(topics_by_cluster) | {f.source for f in flows} | {f.target for f in flows}
    seps = {f.separator for f in flows} or {"."}
    found = []
    for cluster, topics in sorted(topics_by_cluster.items()):
        for topic in sorted(topics):
            if topic.startswith("__"):
                continue
            reason = _verdict(topic, cluster, flows, aliases, seps, ())
            if reason is not None:
                found.append(IllegalTopic(cluster, topic, reason))
    return found
