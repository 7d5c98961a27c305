"""components/topology/parse: the whole stack config parses, and every problem is reported at once."""

from __future__ import annotations

import pytest

from components.topology import (
    TopologyError,
    flow_connectors,
    parse_topology,
    with_secrets_file,
    worker_properties,
)
from tests.unit.topology.helpers import FLOW, dev_config


def test_with_secrets_file_changes_every_placeholder() -> None:
    config = dev_config()
    config["clusters"]["dr"]["security"] = {
        "protocol": "SASL_PLAINTEXT",
        "saslMechanism": "SCRAM-SHA-256",
        "username": "mm2",
        "password": {"secret": "dr.mm2.password"},
    }
    topology = with_secrets_file(parse_topology(config), "mm2", "/tmp/run/secrets.properties")
    props = worker_properties(topology, topology.worker_groups["mm2"], 0)
    # The worker connects as its own user, connectors as the MM2 user: both through the file.
    assert 'username="connect-mm2"' in props["sasl.jaas.config"]
    assert "${file:/tmp/run/secrets.properties:mm2.worker.password}" in props["sasl.jaas.config"]
    assert props["producer.sasl.jaas.config"] == props["sasl.jaas.config"]
    source = flow_connectors(topology, topology.flows[0]).source.config
    assert "${file:/tmp/run/secrets.properties:dr.mm2.password}" in source["target.cluster.sasl.jaas.config"]
    own = worker_properties(topology, topology.worker_groups["mm2"], 0, worker_secrets_file="/w/secrets.properties")
    assert "${file:/w/secrets.properties:mm2.worker.password}" in own["sasl.jaas.config"]


def test_valid_dev_config_parses_with_string_numbers_and_bools() -> None:
    config = dev_config()
    config["clusters"]["primary"]["brokers"] = "1"
    config["clusters"]["primary"]["port"] = "19092"
    config["flows"]["primary->dr"]["disasterRecovery"] = "true"
    config["flows"]["primary->dr"]["tasksMax"] = "2"
    topology = parse_topology(config)
    assert topology.clusters["primary"].port == 19092
    assert topology.flows[0].tasks_max == 2
    assert topology.flows[0].disaster_recovery is True


def test_every_problem_is_reported_at_once() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["topics"] = ["("]
    config["flows"]["primary->dr"]["settings"] = {"tasks.max": "2", "refresh.topics.interval.seconds": "soon"}
    config["flows"]["x->dr"] = {}
    config["clusters"]["dr"]["port"] = 19092
    config["clusters"]["primary"]["security"] = {
        "protocol": "SASL_PLAINTEXT",
        "saslMechanism": "PLAIN",
        "username": "u",
        "password": "pw",
    }
    with pytest.raises(TopologyError) as caught:
        parse_topology(config)
    keys = {p.key for p in caught.value.problems}
    expected = {
        f"{FLOW}.topics[0]",
        f'{FLOW}.settings["tasks.max"]',
        f'{FLOW}.settings["refresh.topics.interval.seconds"]',
        "mm2:flows.x->dr",
        "mm2:clusters.primary.port",
        "mm2:clusters.primary.security.password",
    }
    assert expected <= keys
    text = str(caught.value)
    assert text.startswith(f"{len(caught.value.problems)} problems in the mm2 stack config:")
    for problem in caught.value.problems:
        assert f"  {problem.key}: {problem.message} Fix: {problem.fix}" in text.splitlines()


def test_topology_error_is_a_value_error() -> None:
    assert issubclass(TopologyError, ValueError)
