"""components/topology/parse/values.py: unknown fields and keys owned by typed fields."""

from __future__ import annotations

import pytest

from tests.unit.topology.helpers import FLOW, dev_config, problem_at


def test_unknown_structural_field_suggests_the_right_one() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["workergroup"] = "mm2"
    assert 'Did you mean "workerGroup"' in problem_at(config, f"{FLOW}.workergroup").fix


@pytest.mark.parametrize(
    ("section", "key", "path"),
    [
        ("flow-settings", "tasks.max", f'{FLOW}.settings["tasks.max"]'),
        ("flow-settings", "bootstrap.servers", f'{FLOW}.settings["bootstrap.servers"]'),
        ("flow-settings", "connector.class", f'{FLOW}.settings["connector.class"]'),
        ("flow-settings", "name", f'{FLOW}.settings["name"]'),
        ("flow-settings", "source.cluster.alias", f'{FLOW}.settings["source.cluster.alias"]'),
        ("flow-settings", "key.converter", f'{FLOW}.settings["key.converter"]'),
        ("flow-settings", "topics", f'{FLOW}.settings["topics"]'),
        ("client", "producer.bootstrap.servers", 'mm2:clusters.primary.client["producer.bootstrap.servers"]'),
        ("client", "consumer.security.protocol", 'mm2:clusters.primary.client["consumer.security.protocol"]'),
        ("worker", "group.id", 'mm2:workerGroups.mm2.workerConfig["group.id"]'),
        ("worker", "config.storage.topic", 'mm2:workerGroups.mm2.workerConfig["config.storage.topic"]'),
        ("worker", "sasl.mechanism", 'mm2:workerGroups.mm2.workerConfig["sasl.mechanism"]'),
        ("broker", "node.id", 'mm2:clusters.primary.brokerConfig["node.id"]'),
        ("broker", "listeners", 'mm2:clusters.primary.brokerConfig["listeners"]'),
        ("broker", "log.dirs", 'mm2:clusters.primary.brokerConfig["log.dirs"]'),
    ],
)
def test_typed_fields_own_their_kafka_keys(section: str, key: str, path: str) -> None:
    config = dev_config()
    if section == "flow-settings":
        config["flows"]["primary->dr"]["settings"] = {key: "x"}
    elif section == "client":
        config["clusters"]["primary"]["client"] = {key: "x"}
    elif section == "worker":
        config["workerGroups"]["mm2"]["workerConfig"] = {key: "x"}
    else:
        config["clusters"]["primary"]["brokerConfig"] = {key: "x"}
    problem = problem_at(config, path)
    assert "owned by a typed field" in problem.message
    assert problem.fix.startswith("Remove it; set ")
