"""The flow graph of a stack, and which name-preserving flows lie on a replication cycle.

Pure: plain data in, plain data out, no pulumi import. `cycle_rules.py` turns the stack's resources
into `FlowObservation`s; everything about cycles is decided here.

Why cycles matter: DefaultReplicationPolicy renames a remote topic `<source><sep><topic>`, and
MM2's source connector refuses to replicate a topic whose name says it came from the target
(`isCycle`). A name-preserving policy (IdentityReplicationPolicy) removes that marker, so on any
cycle of enabled flows a record comes back to its origin under a name MM2 cannot tell from a
local topic and is replicated again, forever. One name-changing flow on the cycle is not enough
either: the name-preserving flow still forwards the renamed topics, which then get renamed again
on every round (`b.orders`, `b.b.orders`, ...). So every name-preserving flow on a cycle is unsafe.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

FlowKey = tuple[str, str]
"""A flow as (source alias, target alias)."""


def flow_label(key: FlowKey) -> str:
    """The flow's name as users write it in stack config and mm2.properties: `source->target`."""
    return f"{key[0]}->{key[1]}"


@dataclass(frozen=True)
class FlowObservation:
    """One resource's evidence that flow `source->target` runs.

    A flow is seen once through its ReplicationFlow component and up to three times through its
    connectors; components and connectors may live in different parents, so they are merged by
    (source, target), never by resource.
    """

    source: str
    target: str
    name_preserving: bool
    """True when this resource says the flow keeps topic names."""
    policy: str | None
    """Replication policy class (or another short description) for messages."""
    urn: str
    """Resource that carries the evidence, for the violation's location."""
    from_component: bool = False


@dataclass(frozen=True)
class Flow:
    """All observations of one flow, merged."""

    source: str
    target: str
    name_preserving: bool
    policies: tuple[str, ...]
    urns: tuple[str, ...]
    """Component URNs first, then connector URNs, in stack order."""

    @property
    def key(self) -> FlowKey:
        return (self.source, self.target)

    @property
    def label(self) -> str:
        return flow_label(self.key)


def merge_flows(observations: Iterable[FlowObservation]) -> list[Flow]:
    """One `Flow` per (source, target), in order of first appearance.

    A flow keeps names if any observation says so: the connector configs are what actually runs,
    the component's `namePreserving` is what the user declared (custom classes), and either one
    is enough to make the flow dangerous on a cycle.
    """
    order: list[FlowKey] = []
    grouped: dict[FlowKey, list[FlowObservation]] = {}
    for obs in observations:
        key = (obs.source, obs.target)
        if key not in grouped:
            grouped[key] = []
            order.append(key)
        grouped[key].append(obs)
    flows: list[Flow] = []
    for key in order:
        group = grouped[key]
        policies = tuple(dict.fromkeys(o.policy for o in group if o.policy))
        urns = tuple(dict.fromkeys([o.urn for o in group if o.from_component] + [o.urn for o in group]))
        flows.append(
            Flow(
                source=key[0],
                target=key[1],
                name_preserving=any(o.name_preserving for o in group),
                policies=policies,
                urns=urns,
            )
        )
    return flows


def strongly_connected_components(edges: Iterable[FlowKey]) -> list[frozenset[str]]:
    """Tarjan's algorithm, iterative (a mesh of many clusters must not hit the recursion limit)."""
    adjacency: dict[str, list[str]] = {}
    for source, target in edges:
        adjacency.setdefault(source, []).append(target)
        adjacency.setdefault(target, [])
    for targets in adjacency.values():
        targets.sort()

    index_of: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[frozenset[str]] = []
    counter = 0

    for root in sorted(adjacency):
        if root in index_of:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index_of[node] = lowlink[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            successors = adjacency[node]
            if child < len(successors):
                work.append((node, child + 1))
                succ = successors[child]
                if succ not in index_of:
                    work.append((succ, 0))
                elif succ in on_stack:
                    lowlink[node] = min(lowlink[node], index_of[succ])
                continue
            # All successors done: propagate lowlink to the caller and pop a finished component.
            if work:
                caller = work[-1][0]
                lowlink[caller] = min(lowlink[caller], lowlink[node])
            if lowlink[node] == index_of[node]:
                members: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.add(member)
                    if member == node:
                        break
                components.append(frozenset(members))
    return components


def edges_on_cycles(edges: Iterable[FlowKey]) -> set[FlowKey]:
    """Edges that lie on at least one directed cycle: both ends in one strongly connected component.

    A self-loop `a->a` is a cycle of its own.
    """
    edge_list = list(dict.fromkeys(edges))
    component_of: dict[str, int] = {}
    for number, members in enumerate(strongly_connected_components(edge_list)):
        for member in members:
            component_of[member] = number
    return {(s, t) for s, t in edge_list if s == t or component_of[s] == component_of[t]}


def shortest_cycle_through(edge: FlowKey, edges: Iterable[FlowKey]) -> tuple[str, ...] | None:
    """The shortest cycle that uses `edge`, as nodes from edge's source back to it, or None.

    `("a", "b", "c", "a")` is the cycle a->b->c->a. Breadth-first from the edge's target back to
    its source, successors in sorted order, so the answer is deterministic.
    """
    source, target = edge
    if source == target:
        return (source, source)
    adjacency: dict[str, list[str]] = {}
    for s, t in dict.fromkeys(edges):
        adjacency.setdefault(s, []).append(t)
    for targets in adjacency.values():
        targets.sort()
    previous: dict[str, str | None] = {target: None}
    queue: deque[str] = deque([target])
    while queue:
        node = queue.popleft()
        if node == source:
            path = [node]
            step = previous[node]
            while step is not None:
                path.append(step)
                step = previous[step]
            path.reverse()  # target ... source
            return (source, *path)
        for succ in adjacency.get(node, []):
            if succ not in previous:
                previous[succ] = node
                queue.append(succ)
    return None


def canonical_cycle(cycle: Sequence[str]) -> tuple[str, ...]:
    """A cycle's identity regardless of where it is entered: rotated to start at its least node."""
    nodes = list(cycle[:-1]) if len(cycle) > 1 and cycle[0] == cycle[-1] else list(cycle)
    start = nodes.index(min(nodes))
    rotated = nodes[start:] + nodes[:start]
    return (*rotated, rotated[0])


def cycle_edges(cycle: Sequence[str]) -> list[FlowKey]:
    """The flows a cycle uses: `("a", "b", "a")` -> `[("a", "b"), ("b", "a")]`."""
    return [(cycle[i], cycle[i + 1]) for i in range(len(cycle) - 1)]


def format_cycle(cycle: Sequence[str]) -> str:
    """`primary -> dr -> primary`."""
    return " -> ".join(cycle)


@dataclass(frozen=True)
class CycleFinding:
    """Name-preserving flows inside one strongly connected set of clusters."""

    clusters: tuple[str, ...]
    """The clusters that replicate into each other, sorted."""
    cycles: tuple[tuple[str, ...], ...]
    """For each offending flow, the shortest cycle through it (deduplicated), starting at it."""
    offending: tuple[Flow, ...]
    """Name-preserving flows on those cycles, in stack order."""


def name_preserving_cycles(flows: Sequence[Flow]) -> list[CycleFinding]:
    """Every name-preserving flow on a cycle, grouped by strongly connected component.

    `flows` are the enabled flows of the stack (merged). Components without a name-preserving
    flow are fine: DefaultReplicationPolicy on every flow of a cycle is how MM2 runs active/active.
    """
    keys = [f.key for f in flows]
    on_cycle = edges_on_cycles(keys)
    component_of: dict[str, frozenset[str]] = {}
    for members in strongly_connected_components(keys):
        for member in members:
            component_of[member] = members

    by_component: dict[frozenset[str], list[Flow]] = {}
    component_order: list[frozenset[str]] = []
    for flow in flows:
        if not flow.name_preserving or flow.key not in on_cycle:
            continue
        members = component_of[flow.source]
        if members not in by_component:
            by_component[members] = []
            component_order.append(members)
        by_component[members].append(flow)

    findings: list[CycleFinding] = []
    for members in component_order:
        offending = by_component[members]
        seen: set[tuple[str, ...]] = set()
        cycles: list[tuple[str, ...]] = []
        for flow in offending:
            cycle = shortest_cycle_through(flow.key, keys)
            if cycle is None:  # cannot happen for an edge inside a component; be safe anyway
                continue
            identity = canonical_cycle(cycle)
            if identity not in seen:
                seen.add(identity)
                cycles.append(cycle)
        findings.append(
            CycleFinding(
                clusters=tuple(sorted(members)),
                cycles=tuple(cycles),
                offending=tuple(offending),
            )
        )
    return findings
