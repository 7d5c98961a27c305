"""components/topology/parse/mm2_settings.py: free-form settings, patterns and their values."""

from __future__ import annotations

from typing import Any

import pytest

from components.topology import ConnectorRole, parse_topology
from tests.unit.topology.helpers import FLOW, dev_config, problem_at


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("producer.override.compression.type", "brotli", "must be one of none, gzip, snappy, lz4, zstd"),
        ("producer.override.batch.size", "256k", "must be a whole number"),
        ("source.consumer.max.poll.records", "lots", "must be a whole number"),
        ("producer.override.enable.idempotence", "yes", "must be true or false"),
    ],
)
def test_bad_tuning_values_fail_at_parse(key: str, value: str, expected: str) -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {key: value}
    problem = problem_at(config, f'{FLOW}.settings["{key}"]')
    assert expected in problem.message


def test_invalid_regex_names_the_list_index() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["topics"] = ["orders", "payments-(", "ok.*"]
    problem = problem_at(config, f"{FLOW}.topics[1]")
    assert "invalid regex" in problem.message
    assert "payments-(" in problem.message


def test_comma_inside_a_pattern_is_rejected() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["groupsExclude"] = ["a{1,3}"]
    assert "comma" in problem_at(config, f"{FLOW}.groupsExclude[0]").message


def test_keys_outside_the_catalogue_pass_through_to_connect_validation() -> None:
    # Connect's validation judges them at preview (components/connect/plugin_validation.py).
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {"errors.deadletterqueue.topic.name": "mm2-dlq"}
    flow = parse_topology(config).flow("primary->dr")
    assert flow.settings["errors.deadletterqueue.topic.name"] == "mm2-dlq"


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("sync.group.ofsets.enabled", "sync.group.offsets.enabled"),
        ("emit.heartbeat.enabled", "emit.heartbeats.enabled"),
        ("replication.factr", "replication.factor"),
        ("ofset.lag.max", "offset.lag.max"),
    ],
)
def test_a_near_miss_of_a_catalogue_key_is_refused_naming_the_key_meant(typed: str, meant: str) -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {typed: "true"}
    problem = problem_at(config, f'{FLOW}.settings["{typed}"]')
    assert f'Did you mean "{meant}"?' in problem.fix
    assert typed in problem.message


def test_a_near_miss_is_refused_at_every_level() -> None:
    config = dev_config()
    config["defaults"] = {"settings": {"sync.group.ofsets.enabled": "true"}}
    config["flows"]["primary->dr"]["connectorSettings"] = {"checkpoint": {"emit.checkpoint.enabled": "true"}}
    assert "Did you mean" in problem_at(config, 'mm2:defaults.settings["sync.group.ofsets.enabled"]').fix
    key = f'{FLOW}.connectorSettings.checkpoint["emit.checkpoint.enabled"]'
    assert "emit.checkpoints.enabled" in problem_at(config, key).fix


def test_transforms_predicates_and_incremental_alter_configs_are_accepted() -> None:
    config = dev_config()
    settings = {
        "transforms": "dropTest",
        "transforms.dropTest.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.dropTest.predicate": "isTest",
        "predicates": "isTest",
        "predicates.isTest.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
        "predicates.isTest.name": "test",
        "use.incremental.alter.configs": "required",
    }
    config["flows"]["primary->dr"]["settings"] = settings
    flow = parse_topology(config).flow("primary->dr")
    assert {k: flow.settings[k] for k in settings} == settings


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("use.incremental.alter.configs", "always", "must be one of requested, required, never"),
        ("transforms", "a b", "must list aliases separated by commas"),
    ],
)
def test_bad_pass_through_values_fail_at_parse(key: str, value: str, expected: str) -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {key: value}
    assert expected in problem_at(config, f'{FLOW}.settings["{key}"]').message


@pytest.mark.parametrize(
    ("key", "field"),
    [
        ("tasks.max", "`tasksMax`"),
        ("exactly.once.support", "`exactlyOnce: true`"),
        ("producer.override.bootstrap.servers", "`clusters.<target>.client`"),
        ("source.cluster.bootstrap.servers", "`clusters.<source>.security`"),
    ],
)
def test_keys_typed_fields_own_stay_rejected_naming_the_field(key: str, field: str) -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {key: "x"}
    problem = problem_at(config, f'{FLOW}.settings["{key}"]')
    assert "owned by a typed field" in problem.message
    assert field in problem.fix


def test_connector_settings_go_to_one_role() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["connectorSettings"] = {
        "checkpoint": {"transforms": "t", "transforms.t.type": "org.apache.kafka.connect.transforms.InsertHeader"}
    }
    flow = parse_topology(config).flow("primary->dr")
    assert flow.role_settings[ConnectorRole.CHECKPOINT]["transforms"] == "t"
    assert ConnectorRole.SOURCE not in flow.role_settings


@pytest.mark.parametrize(
    ("raw", "key", "expected"),
    [
        ({"sorce": {"a.b": "1"}}, "sorce", 'Did you mean "source"'),
        ({"heartbeat": {"emit.heartbeats.interval.seconds": "1"}}, 'heartbeat["emit.heartbeats.interval.seconds"]',
         "Move it to `settings`"),
        ({"source": {"tasks.max": "3"}}, 'source["tasks.max"]', "`tasksMax`"),
    ],
)  # fmt: skip
def test_bad_connector_settings_name_the_fix(raw: dict[str, Any], key: str, expected: str) -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["connectorSettings"] = raw
    problem = problem_at(config, f"{FLOW}.connectorSettings.{key}")
    assert expected in problem.fix


@pytest.mark.parametrize(
    ("removed", "modern"),
    [
        ("topics.blacklist", "topics.exclude"),
        ("groups.blacklist", "groups.exclude"),
        ("config.properties.blacklist", "config.properties.exclude"),
        ("topics.whitelist", "topics"),
        ("groups.whitelist", "groups"),
    ],
)
def test_removed_keys_name_their_replacement(removed: str, modern: str) -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {removed: "x"}
    problem = problem_at(config, f'{FLOW}.settings["{removed}"]')
    assert "removed in Kafka 4" in problem.message
    assert f'"{modern}"' in problem.fix


def test_setting_values_are_type_checked() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {
        "sync.topic.acls.enabled": "yes",
        "offset.lag.max": "lots",
        "offset-syncs.topic.location": "middle",
    }
    problem_at(config, f'{FLOW}.settings["sync.topic.acls.enabled"]')
    problem_at(config, f'{FLOW}.settings["offset.lag.max"]')
    problem_at(config, f'{FLOW}.settings["offset-syncs.topic.location"]')
