"""components/topology/parse/pairs.py: `mm2:failover`, cluster pairs and what a switchover needs."""

from __future__ import annotations

import copy
from typing import Any

from components.topology import ConnectorRole, ConnectorState, parse_topology
from components.topology.model import Divergence
from tests.unit.topology.helpers import problem_at, problems, secure_config

PAIR = "mm2:failover.primary<->dr"


def pair_config(**pair: Any) -> dict[str, Any]:
    """The secure dev topology with the way back declared and a pair over both flows."""
    config = secure_config()
    config["flows"]["dr->primary"] = copy.deepcopy(config["flows"]["primary->dr"])
    config["failover"] = {"primary<->dr": {"active": "primary", "principals": ["app"], **pair}}
    return config


def test_a_pair_runs_its_active_flow_and_stops_the_way_back() -> None:
    topology = parse_topology(pair_config(groups=["billing-.*"], drainTimeout="30s", divergence="discard"))
    (pair,) = topology.pairs
    assert (pair.active, pair.passive, pair.active_flow, pair.standby_flow) == (
        "primary",
        "dr",
        "primary->dr",
        "dr->primary",
    )
    assert pair.principals == ("User:app",) and pair.groups == ("billing-.*",)
    assert pair.drain_timeout_s == 30 and pair.divergence is Divergence.DISCARD
    states = {f.name: {r: f.state_of(r) for r in ConnectorRole} for f in topology.flows}
    assert set(states["dr->primary"].values()) == {ConnectorState.STOPPED}
    assert set(states["primary->dr"].values()) == {ConnectorState.RUNNING}
    # Switching sides swaps which flow runs.
    switched = parse_topology(pair_config(active="dr"))
    assert {f.name: f.state_of(ConnectorRole.SOURCE) for f in switched.flows} == {
        "dr->primary": ConnectorState.RUNNING,
        "primary->dr": ConnectorState.STOPPED,
    }


def test_a_pair_needs_the_way_back() -> None:
    config = pair_config()
    del config["flows"]["dr->primary"]
    problem = problem_at(config, PAIR)
    assert "dr->primary is not declared" in problem.message and "mm2:flows.dr->primary" in problem.fix


def test_a_name_preserving_policy_has_no_way_back() -> None:
    config = pair_config()
    config["flows"]["dr->primary"]["replicationPolicy"] = {"class": "identity"}
    config["flows"]["primary->dr"]["replicationPolicy"] = {"class": "identity"}
    problem = problem_at(config, "mm2:flows.dr->primary.replicationPolicy")
    assert "in a loop" in problem.message and "{class: default}" in problem.fix


def test_a_flow_without_checkpoints_or_groups_cannot_move_groups() -> None:
    config = pair_config()
    config["flows"]["primary->dr"]["settings"] = {"emit.checkpoints.enabled": "false"}
    assert "no checkpoints" in problem_at(config, "mm2:flows.primary->dr").message
    config = pair_config()
    config["flows"]["dr->primary"]["groups"] = []
    assert "groups" in problem_at(config, "mm2:flows.dr->primary").fix


def test_the_same_pair_twice_is_two_switchovers_in_one_change() -> None:
    config = pair_config()
    config["failover"]["dr<->primary"] = {"active": "dr", "principals": ["app"]}
    problem = problem_at(config, "mm2:failover.dr<->primary")
    assert "already declared as primary<->dr" in problem.message


def test_bad_fields_are_named_with_their_fix() -> None:
    config = pair_config(active="backup", principals=["mm2", "User:admin"], groups=["("], divergence="merge")
    keys = {p.key: p for p in problems(config)}
    assert "Write primary or dr" in keys[f"{PAIR}.active"].fix
    assert "principal of the stack itself" in keys[f"{PAIR}.principals"].message
    assert "not a regular expression" in keys[f"{PAIR}.groups[0]"].message
    assert "keep" in keys[f"{PAIR}.divergence"].fix
    config = pair_config()
    config["failover"]["primary<->dr"].pop("principals")
    assert "no application principal" in problem_at(config, f"{PAIR}.principals").message
    config = pair_config()
    config["failover"] = {"primary<->nowhere": {"active": "primary", "principals": ["app"]}}
    assert "unknown cluster" in problem_at(config, "mm2:failover.primary<->nowhere").message


def test_fencing_needs_an_authenticated_principal() -> None:
    config = pair_config()
    config["clusters"]["dr"]["security"] = {"protocol": "PLAINTEXT"}
    problem = problem_at(config, PAIR)
    assert "authenticates no principal" in problem.message and "mm2:clusters.dr.security" in problem.fix


def test_an_unplanned_failover_stops_both_flows_until_the_lost_side_is_back() -> None:
    topology = parse_topology(pair_config(active="dr", unplanned=True))
    assert topology.pairs[0].unplanned
    assert {f.name: f.state_of(ConnectorRole.SOURCE) for f in topology.flows} == {
        "dr->primary": ConnectorState.STOPPED,
        "primary->dr": ConnectorState.STOPPED,
    }
    assert "true or false" in problem_at(pair_config(unplanned="maybe"), f"{PAIR}.unplanned").fix
