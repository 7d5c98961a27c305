"""The pure flow-graph analysis: components, cycles, merging observations."""

from __future__ import annotations

import itertools

from graph import (
    FlowObservation,
    canonical_cycle,
    cycle_edges,
    edges_on_cycles,
    format_cycle,
    merge_flows,
    name_preserving_cycles,
    shortest_cycle_through,
    strongly_connected_components,
)


def obs(source: str, target: str, preserving: bool, urn: str | None = None, component: bool = False) -> FlowObservation:
    return FlowObservation(
        source, target, preserving, "identity" if preserving else "default", urn or f"{source}->{target}", component
    )


def test_strongly_connected_components_split_a_cycle_from_its_tail() -> None:
    components = strongly_connected_components([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e")])
    assert sorted(sorted(c) for c in components) == [["a", "b", "c"], ["d"], ["e"]]


def test_edges_on_cycles() -> None:
    edges = [("a", "b"), ("b", "a"), ("b", "c"), ("c", "c"), ("c", "d")]
    assert edges_on_cycles(edges) == {("a", "b"), ("b", "a"), ("c", "c")}


def test_a_chain_has_no_cycle() -> None:
    assert edges_on_cycles([("a", "b"), ("b", "c")]) == set()


def test_long_chain_does_not_hit_the_recursion_limit() -> None:
    nodes = [f"c{i}" for i in range(5000)]
    edges = [*itertools.pairwise(nodes), (nodes[-1], nodes[0])]
    assert len(edges_on_cycles(edges)) == 5000


def test_shortest_cycle_through_an_edge() -> None:
    edges = [("a", "b"), ("b", "c"), ("c", "a"), ("b", "a")]
    assert shortest_cycle_through(("a", "b"), edges) == ("a", "b", "a")
    assert shortest_cycle_through(("b", "c"), edges) == ("b", "c", "a", "b")
    assert shortest_cycle_through(("a", "a"), [("a", "a")]) == ("a", "a")
    assert shortest_cycle_through(("a", "b"), [("a", "b"), ("b", "c")]) is None


def test_canonical_cycle_ignores_the_entry_point() -> None:
    assert canonical_cycle(("b", "c", "a", "b")) == canonical_cycle(("a", "b", "c", "a")) == ("a", "b", "c", "a")
    assert cycle_edges(("a", "b", "c", "a")) == [("a", "b"), ("b", "c"), ("c", "a")]
    assert format_cycle(("primary", "dr", "primary")) == "primary -> dr -> primary"


def test_merge_dedupes_by_flow_and_any_preserving_observation_wins() -> None:
    flows = merge_flows(
        [
            obs("a", "b", False, "connector-1"),
            obs("a", "b", True, "component", component=True),
            obs("b", "a", False),
        ]
    )
    assert [f.label for f in flows] == ["a->b", "b->a"]
    assert flows[0].name_preserving is True
    assert flows[0].urns == ("component", "connector-1")  # the component is where the violation goes
    assert flows[0].policies == ("default", "identity")
    assert flows[1].name_preserving is False


def test_two_way_identity_is_one_finding_with_both_flows() -> None:
    findings = name_preserving_cycles(merge_flows([obs("primary", "dr", True), obs("dr", "primary", True)]))
    assert len(findings) == 1
    assert findings[0].cycles == (("primary", "dr", "primary"),)
    assert [f.label for f in findings[0].offending] == ["primary->dr", "dr->primary"]
    assert findings[0].clusters == ("dr", "primary")


def test_three_cycle() -> None:
    findings = name_preserving_cycles(merge_flows([obs("a", "b", True), obs("b", "c", True), obs("c", "a", True)]))
    assert [f.cycles for f in findings] == [(("a", "b", "c", "a"),)]


def test_default_policy_cycle_and_identity_chain_are_fine() -> None:
    assert name_preserving_cycles(merge_flows([obs("a", "b", False), obs("b", "a", False)])) == []
    assert name_preserving_cycles(merge_flows([obs("a", "b", True), obs("b", "c", True)])) == []


def test_only_the_name_preserving_flows_of_a_mixed_cycle_offend() -> None:
    findings = name_preserving_cycles(merge_flows([obs("a", "b", True), obs("b", "a", False), obs("b", "c", True)]))
    assert len(findings) == 1
    assert [f.label for f in findings[0].offending] == ["a->b"]  # b->c is on no cycle


def test_separate_cycles_are_separate_findings() -> None:
    flows = merge_flows(
        [obs("a", "b", True), obs("b", "a", True), obs("c", "d", True), obs("d", "c", False), obs("b", "c", True)]
    )
    findings = name_preserving_cycles(flows)
    assert [f.clusters for f in findings] == [("a", "b"), ("c", "d")]
    assert [[f.label for f in finding.offending] for finding in findings] == [["a->b", "b->a"], ["c->d"]]
