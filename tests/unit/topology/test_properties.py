"""Invariants over generated topologies (hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from components.topology import flow_connectors, parse_topology, worker_properties
from components.topology.mm2_properties import export_properties, import_properties

ALIASES = ["primary", "dr", "west-1", "west-2", "east-1", "east-2", "edge_a", "k"]
AGREE = (  # source and checkpoint must read the same offset syncs and the same topics
    "replication.policy.class",
    "replication.policy.separator",
    "offset-syncs.topic.location",
    "emit.offset-syncs.enabled",
    "topic.filter.class",
    "topics",
    "topics.exclude",
    "source.cluster.alias",
    "target.cluster.alias",
)


@st.composite
def stack_configs(draw: st.DrawFn) -> dict[str, Any]:
    aliases = draw(st.lists(st.sampled_from(ALIASES), min_size=2, max_size=6, unique=True))
    clusters: dict[str, Any] = {}
    port = 20000
    for alias in aliases:
        brokers = draw(st.integers(min_value=1, max_value=3))
        cluster: dict[str, Any] = {"platform": "local", "brokers": brokers, "port": port}
        if draw(st.booleans()):
            cluster["security"] = {
                "protocol": "SASL_PLAINTEXT",
                "saslMechanism": draw(st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])),
                "username": "mm2",
                "password": {"secret": f"{alias}.mm2.password"},
            }
        if draw(st.booleans()):
            cluster["client"] = {"producer.linger.ms": "5", "consumer.fetch.min.bytes": "1"}
        clusters[alias] = cluster
        port += 10
    group_clusters = draw(st.lists(st.sampled_from(aliases), min_size=1, max_size=3, unique=True))
    groups = {
        f"g{i}": {"cluster": alias, "workers": 2, "restPort": 30000 + 10 * i} for i, alias in enumerate(group_clusters)
    }
    pairs = [(s, t) for s in aliases for t in aliases if s != t]
    chosen = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=len(pairs), unique=True))
    separator = draw(st.sampled_from([".", "_", "-"]))
    flows: dict[str, Any] = {}
    for source, target in chosen:
        flow: dict[str, Any] = {
            "workerGroup": draw(st.sampled_from(sorted(groups))),
            "enabled": draw(st.booleans()),
            "topics": draw(
                st.lists(st.sampled_from(["orders", "payments-.*", "events\\..*"]), min_size=1, max_size=3, unique=True)
            ),
            "tasksMax": draw(st.integers(min_value=1, max_value=8)),
            "exactlyOnce": draw(st.booleans()),
            "disasterRecovery": draw(st.booleans()),
            "settings": {
                "offset-syncs.topic.location": draw(st.sampled_from(["source", "target"])),
                "emit.heartbeats.interval.seconds": str(draw(st.integers(1, 60))),
            },
        }
        flows[f"{source}->{target}"] = flow
    return {
        "defaults": {"replicationPolicy": {"class": "default", "separator": separator}},
        "clusters": clusters,
        "workerGroups": groups,
        "flows": flows,
    }


@settings(max_examples=60, deadline=None)
@given(stack_configs())
def test_every_enabled_flow_yields_three_matching_connectors(config: dict[str, Any]) -> None:
    topology = parse_topology(config)
    for flow in topology.enabled_flows():
        specs = flow_connectors(topology, flow).all()
        assert [s.role for s in specs] == ["source", "checkpoint", "heartbeat"]
        for spec in specs:
            assert spec.config["source.cluster.alias"] == flow.source
            assert spec.config["target.cluster.alias"] == flow.target
            assert spec.config["name"] == spec.name
            assert spec.config["connector.class"] == spec.connector_class
        source, checkpoint, _ = specs
        for key in AGREE:
            assert source.config.get(key) == checkpoint.config.get(key), key


@settings(max_examples=40, deadline=None)
@given(stack_configs())
def test_generation_is_deterministic(config: dict[str, Any]) -> None:
    first, second = parse_topology(config), parse_topology(config)
    assert first == second
    for a, b in zip(first.enabled_flows(), second.enabled_flows(), strict=True):
        assert flow_connectors(first, a) == flow_connectors(second, b)
        assert list(flow_connectors(first, a).source.config) == list(flow_connectors(second, b).source.config)


@settings(max_examples=40, deadline=None)
@given(stack_configs())
def test_connector_names_are_unique_across_a_topology(config: dict[str, Any]) -> None:
    topology = parse_topology(config)
    names = [s.name for f in topology.enabled_flows() for s in flow_connectors(topology, f).all()]
    assert len(names) == len(set(names)) == 3 * len(topology.enabled_flows())


@settings(max_examples=40, deadline=None)
@given(stack_configs())
def test_secrets_only_as_placeholders_and_overrides_allowed_where_used(config: dict[str, Any]) -> None:
    topology = parse_topology(config)
    for flow in topology.enabled_flows():
        for spec in flow_connectors(topology, flow).all():
            for key, value in spec.config.items():
                if key.endswith("sasl.jaas.config"):
                    assert 'password="${file:/etc/mm2/secrets.properties:' in value
            needs = any(k.startswith("producer.override.") for k in spec.config)
            group = topology.worker_groups[flow.worker_group]
            if needs:
                assert worker_properties(topology, group, 0)["connector.client.config.override.policy"] == "All"
            if group.cluster != flow.target:
                assert (
                    spec.config["producer.override.bootstrap.servers"]
                    == spec.config["target.cluster.bootstrap.servers"]
                )


@settings(max_examples=30, deadline=None)
@given(stack_configs())
def test_mm2_properties_round_trip_is_a_fixed_point(config: dict[str, Any]) -> None:
    first = export_properties(parse_topology(config))
    assert export_properties(parse_topology(import_properties(first).config)) == first
