"""components/topology/parse/mm2_settings.py: free-form settings, patterns and their values."""

from __future__ import annotations

import pytest

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


def test_unknown_setting_key_suggests_the_right_one() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {"sync.group.offset.enabled": "true"}
    problem = problem_at(config, f'{FLOW}.settings["sync.group.offset.enabled"]')
    assert 'Did you mean "sync.group.offsets.enabled"' in problem.fix


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
