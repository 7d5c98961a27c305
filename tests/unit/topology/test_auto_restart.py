"""Which connectors a worker group's watcher restarts."""

from __future__ import annotations

from components.topology import parse_topology
from components.topology.auto_restart import watched_connectors
from tests.unit.topology.helpers import dev_config


def test_only_enabled_roles_of_enabled_flows_of_the_group() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["autoRestart"] = {"enabled": True, "maxRestarts": 4, "heartbeat": {"enabled": False}}
    topology = parse_topology(config)
    assert watched_connectors(topology, "mm2") == {
        "mm2-primary-to-dr-checkpoint": 4,
        "mm2-primary-to-dr-source": 4,
    }
    config["flows"]["primary->dr"]["enabled"] = False
    assert watched_connectors(parse_topology(config), "mm2") == {}


def test_no_auto_restart_no_watcher() -> None:
    assert watched_connectors(parse_topology(dev_config()), "mm2") == {}
