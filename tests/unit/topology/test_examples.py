"""Every example stack config parses and yields the connectors its topology implies."""

from __future__ import annotations

import pytest

from components.topology import flow_connectors, needs_producer_override, parse_topology, remote_topic
from components.topology.connectors import TUNED_SOURCE_CLIENT
from tests.unit.topology.helpers import example, example_names

EXPECTED_FLOWS = {
    "active-passive.yaml": {"primary->dr"},
    "active-passive-tls.yaml": {"primary->dr"},
    "active-active.yaml": {"east->west", "west->east"},
    "kube-node.yaml": {"us->eu", "eu->us"},  # the Kubernetes lane deploys it
    "fan-out.yaml": {"k->a", "k->b", "k->c"},
    "aggregation.yaml": {"a->k", "b->k", "c->k"},
    "six-cluster-mesh.yaml": {
        "west-1->west-2",
        "west-2->west-1",
        "east-1->east-2",
        "east-2->east-1",
        "north-1->north-2",
        "north-2->north-1",
        "west-1->east-1",
        "west-1->north-1",
        "east-1->west-1",
        "east-1->north-1",
        "north-1->west-1",
        "north-1->east-1",
    },
}


def test_every_topology_of_the_brief_has_an_example() -> None:
    assert set(example_names()) == set(EXPECTED_FLOWS)


@pytest.mark.parametrize("name", sorted(EXPECTED_FLOWS))
def test_example_parses_and_yields_three_connectors_per_flow(name: str) -> None:
    topology = parse_topology(example(name))
    assert {f.name for f in topology.enabled_flows()} == EXPECTED_FLOWS[name]
    for flow in topology.enabled_flows():
        names = [spec.name for spec in flow_connectors(topology, flow).all()]
        assert names == [f"mm2-{flow.slug}-source", f"mm2-{flow.slug}-checkpoint", f"mm2-{flow.slug}-heartbeat"]


def test_fan_out_produces_through_overrides_and_aggregation_does_not() -> None:
    fan_out = parse_topology(example("fan-out.yaml"))
    for flow in fan_out.flows:
        connectors = flow_connectors(fan_out, flow)
        target_bootstrap = f"127.0.0.1:{fan_out.clusters[flow.target].port}"
        assert all(s.config["producer.override.bootstrap.servers"] == target_bootstrap for s in connectors.all())
    aggregation = parse_topology(example("aggregation.yaml"))
    for flow in aggregation.flows:
        # Workers on the target: no bootstrap override, only the MM2 user's credentials (the
        # examples' local clusters are SASL/SCRAM by default), plus the source's producer tuning.
        security = {
            "producer.override.security.protocol",
            "producer.override.sasl.mechanism",
            "producer.override.sasl.jaas.config",
        }
        tuning = {k for k in TUNED_SOURCE_CLIENT if k.startswith("producer.override.")}
        connectors = flow_connectors(aggregation, flow)
        for spec in connectors.all():
            overrides = {k for k in spec.config if k.startswith("producer.override.")}
            assert overrides == (security | tuning if spec.role == "source" else security)
        assert remote_topic(flow, "metrics") == f"{flow.source}.metrics"


def test_mesh_runs_each_flow_in_its_target_datacenter() -> None:
    mesh = parse_topology(example("six-cluster-mesh.yaml"))
    assert len(mesh.flows) == 12
    names = [s.name for f in mesh.flows for s in flow_connectors(mesh, f).all()]
    assert len(names) == len(set(names)) == 36
    for flow in mesh.flows:
        group = mesh.worker_groups[flow.worker_group]
        assert mesh.clusters[group.cluster].datacenter == mesh.clusters[flow.target].datacenter
        # only flows into the -2 clusters produce across clusters
        assert needs_producer_override(mesh, flow) == flow.target.endswith("-2")


def test_active_active_keeps_records_from_looping() -> None:
    topology = parse_topology(example("active-active.yaml"))
    east_west = topology.flow("east->west")
    assert remote_topic(east_west, "orders") == "east.orders"
    assert east_west.replication_policy.preserves_names is False
