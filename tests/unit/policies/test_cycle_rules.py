"""no-name-preserving-replication-on-cycles: the mandatory rule, over the whole stack."""

from __future__ import annotations

from cycle_rules import no_name_preserving_replication_on_cycles as policy
from pulumi_policy import EnforcementLevel

from .builders import (
    DEFAULT_POLICY,
    IDENTITY_POLICY,
    UNKNOWN,
    UNKNOWN_MAP,
    cluster,
    connector,
    flow,
    messages,
    replication_flow,
    resource,
    run_stack,
)

CUSTOM = "com.example.mm2.KeepNamesReplicationPolicy"


def test_is_mandatory() -> None:
    assert policy.enforcement_level is EnforcementLevel.MANDATORY


def test_active_active_identity_names_the_cycle_both_flows_and_the_fix() -> None:
    forward = replication_flow("primary", "dr", IDENTITY_POLICY)
    backward = replication_flow("dr", "primary", IDENTITY_POLICY)
    violations = run_stack(policy, [cluster("primary"), cluster("dr"), *forward, *backward])
    assert len(violations) == 1
    message, where = violations[0]
    assert "cycle primary -> dr -> primary" in message
    assert f"primary->dr ({IDENTITY_POLICY}; {forward[0].urn})" in message
    assert f"dr->primary ({IDENTITY_POLICY}; {backward[0].urn})" in message
    assert "DefaultReplicationPolicy" in message
    assert "disable the reverse flow" in message and "dr->primary" in message
    assert where == forward[0].urn


def test_three_cluster_identity_cycle() -> None:
    resources = [
        *replication_flow("a", "b", IDENTITY_POLICY),
        *replication_flow("b", "c", IDENTITY_POLICY),
        *replication_flow("c", "a", IDENTITY_POLICY),
    ]
    [message] = messages(run_stack(policy, resources))
    assert "cycle a -> b -> c -> a:" in message
    for label in ("a->b (", "b->c (", "c->a ("):
        assert label in message


def test_active_active_with_default_policy_is_fine() -> None:
    resources = [*replication_flow("primary", "dr"), *replication_flow("dr", "primary")]
    assert run_stack(policy, resources) == []


def test_identity_on_a_one_way_chain_is_fine() -> None:
    resources = [*replication_flow("a", "b", IDENTITY_POLICY), *replication_flow("b", "c", IDENTITY_POLICY)]
    assert run_stack(policy, resources) == []


def test_cycle_made_only_of_connectors_in_separate_components() -> None:
    # No ReplicationFlow components: two unrelated parents each hold one direction's connectors.
    east = resource("example:index:Team", "team-east", {})
    west = resource("example:index:Team", "team-west", {})
    resources = [
        east,
        west,
        *(connector("east", "west", k, IDENTITY_POLICY, parent=east) for k in ("source", "checkpoint", "heartbeat")),
        *(connector("west", "east", k, IDENTITY_POLICY, parent=west) for k in ("source", "checkpoint", "heartbeat")),
    ]
    [(message, where)] = run_stack(policy, resources)
    assert "cycle east -> west -> east" in message
    assert "east->west (" in message and "west->east (" in message
    assert where == resources[2].urn  # the first connector of east->west


def test_component_and_connector_observations_of_one_flow_are_merged() -> None:
    # a->b only as a component (its connectors are elsewhere), b->a only as connectors.
    resources = [
        flow("a", "b", IDENTITY_POLICY),
        connector("b", "a", "source", IDENTITY_POLICY),
    ]
    [message] = messages(run_stack(policy, resources))
    assert "cycle a -> b -> a" in message


def test_custom_name_preserving_class_on_a_cycle() -> None:
    resources = [
        *replication_flow("a", "b", CUSTOM, name_preserving=True),
        *replication_flow("b", "a", DEFAULT_POLICY),
    ]
    [message] = messages(run_stack(policy, resources))
    assert f"a->b ({CUSTOM} (declared namePreserving)" in message
    assert "b->a (" not in message  # the default-policy flow is not an offender


def test_custom_class_not_declared_name_preserving_is_trusted() -> None:
    resources = [*replication_flow("a", "b", CUSTOM, name_preserving=False), *replication_flow("b", "a", CUSTOM)]
    assert run_stack(policy, resources) == []


def test_custom_class_listed_in_the_pack_config() -> None:
    resources = [*replication_flow("a", "b", CUSTOM), *replication_flow("b", "a", CUSTOM)]
    assert run_stack(policy, resources) == []
    config = {"namePreservingPolicies": [CUSTOM]}
    [message] = messages(run_stack(policy, resources, config))
    assert "a->b (" in message and "b->a (" in message


def test_one_identity_flow_on_a_mixed_cycle_is_still_a_loop() -> None:
    resources = [*replication_flow("a", "b", IDENTITY_POLICY), *replication_flow("b", "a", DEFAULT_POLICY)]
    [message] = messages(run_stack(policy, resources))
    assert "flow(s) a->b (" in message


def test_disabled_flow_without_connectors_does_not_close_a_cycle() -> None:
    resources = [*replication_flow("a", "b", IDENTITY_POLICY), flow("b", "a", IDENTITY_POLICY, enabled=False)]
    assert run_stack(policy, resources) == []


def test_unknown_values_during_preview_do_not_crash() -> None:
    resources = [
        flow("a", "b", UNKNOWN, name_preserving=UNKNOWN, enabled=UNKNOWN),
        flow(UNKNOWN, "a"),
        resource("mm2:index:ReplicationFlow", "flow-empty", {}),
        resource(
            "pulumi-python:dynamic/connect:Connector", "mm2-a-to-b-source", {"name": UNKNOWN, "config": UNKNOWN_MAP}
        ),
        connector("b", "a", "source", config={"connector.class": UNKNOWN, "source.cluster.alias": UNKNOWN}),
        cluster(UNKNOWN, brokers=UNKNOWN),
    ]
    assert run_stack(policy, resources) == []


def test_identity_known_from_the_component_while_connector_configs_are_unknown() -> None:
    resources = [
        flow("a", "b", IDENTITY_POLICY),
        flow("b", "a", IDENTITY_POLICY),
        connector("a", "b", "source", config=UNKNOWN_MAP),
        connector("b", "a", "source", config={"replication.policy.class": UNKNOWN}),
    ]
    [message] = messages(run_stack(policy, resources))
    assert "cycle a -> b -> a" in message


def test_each_strongly_connected_group_is_reported() -> None:
    resources = [
        *replication_flow("a", "b", IDENTITY_POLICY),
        *replication_flow("b", "a", IDENTITY_POLICY),
        *replication_flow("c", "d", IDENTITY_POLICY),
        *replication_flow("d", "c"),
        *replication_flow("b", "c", IDENTITY_POLICY),  # joins the groups one way only: no cycle through it
    ]
    found = messages(run_stack(policy, resources))
    assert len(found) == 2
    assert "cycle a -> b -> a" in found[0]
    assert "cycle c -> d -> c" in found[1] and "flow(s) c->d (" in found[1]
    assert all("b->c (" not in m for m in found)


def test_six_clusters_three_datacenters_mesh_with_default_policy_is_fine() -> None:
    aliases = ["west-1", "west-2", "east-1", "east-2", "north-1", "north-2"]
    resources = [r for s in aliases for t in aliases if s != t for r in replication_flow(s, t)]
    assert run_stack(policy, resources) == []
    resources.append(flow("west-1", "north-2", IDENTITY_POLICY))  # same flow, now declared identity
    [message] = messages(run_stack(policy, resources))
    assert "cycle west-1 -> north-2 -> west-1" in message


def test_any_identity_replication_policy_class_keeps_names() -> None:
    other = "com.example.mirror.IdentityReplicationPolicy"
    resources = [*replication_flow("a", "b", other), *replication_flow("b", "a", other)]
    [message] = messages(run_stack(policy, resources))
    assert f"a->b ({other};" in message


def test_a_reverse_heartbeat_connector_beside_a_one_way_identity_flow_closes_no_cycle() -> None:
    reverse = connector("dr", "primary", "heartbeat", IDENTITY_POLICY)
    named = resource(reverse.resource_type, "mm2-primary-to-dr-reverse-heartbeat", reverse.props)
    resources = [*replication_flow("primary", "dr", IDENTITY_POLICY), named]
    assert run_stack(policy, resources) == []
    # The same connector under a forward flow's name is evidence of dr->primary: a loop.
    assert len(run_stack(policy, [*replication_flow("primary", "dr", IDENTITY_POLICY), reverse])) == 1
