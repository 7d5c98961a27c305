"""components/topology/parse/cross_checks.py: ports and settings shared across sections."""

from __future__ import annotations

from components.topology import parse_topology
from tests.unit.topology.helpers import dev_config, example, problem_at


def test_flows_sharing_a_target_must_agree_on_policy_and_heartbeats() -> None:
    config = example("aggregation.yaml")
    config["clusters"]["k"]["brokers"] = 3
    config["flows"]["b->k"] = {"replicationPolicy": {"separator": "_"}}
    config["flows"]["c->k"] = {"settings": {"heartbeats.topic.replication.factor": "1"}}
    separator = problem_at(config, "mm2:flows.b->k.replicationPolicy.separator")
    assert "share target k" in separator.message
    heartbeats = problem_at(config, 'mm2:flows.c->k.settings["heartbeats.topic.replication.factor"]')
    assert "heartbeats.topic.replication.factor" in heartbeats.message


def test_disabled_flows_do_not_conflict_on_shared_target() -> None:
    config = example("aggregation.yaml")
    config["flows"]["b->k"] = {"enabled": False, "replicationPolicy": {"class": "identity"}}
    parse_topology(config)


def test_overlapping_local_ports() -> None:
    config = dev_config()
    config["clusters"]["dr"]["port"] = 19093  # primary uses 19092..19093
    config["workerGroups"]["mm2"]["restPort"] = 19095  # dr uses 19093..19094, workers 19095..19096
    config["workerGroups"]["other"] = {"cluster": "dr", "restPort": 19096}
    assert "overlap mm2:clusters.primary.port" in problem_at(config, "mm2:clusters.dr.port").message
    assert "overlap mm2:workerGroups.mm2.restPort" in problem_at(config, "mm2:workerGroups.other.restPort").message
