"""components/topology/near_miss.py: which keys are typos of catalogue keys."""

from __future__ import annotations

import itertools

import pytest

from components.topology.near_miss import near_miss, slips
from components.topology.settings import KNOWN_SETTINGS


def test_slips_counts_a_swap_as_one_edit() -> None:
    assert slips("offset", "ofsfet") == 1
    assert slips("offset", "ofset") == 1
    assert slips("abc", "abc") == 0
    assert slips("", "abc") == 3


def test_no_two_catalogue_keys_are_near_misses_of_each_other() -> None:
    """Otherwise a suggestion could name the wrong key, or refuse a real one."""
    for a, b in itertools.combinations(sorted(KNOWN_SETTINGS), 2):
        assert slips(a, b) > 4, (a, b)


@pytest.mark.parametrize(
    "key",
    [
        "header.converter",
        "errors.deadletterqueue.topic.name",
        "producer.override.max.request.size",
        "topic.creation.default.partitions",
        "config.properties.blacklist",  # removed in Kafka 4: parse says so, with the modern name
        "transforms.route.type",
        "exactly.once.support",
    ],
)
def test_keys_of_connect_and_plugins_are_not_near_misses(key: str) -> None:
    assert near_miss(key, KNOWN_SETTINGS) is None


def test_a_known_key_is_not_a_near_miss_of_itself() -> None:
    assert all(near_miss(k, KNOWN_SETTINGS) is None for k in KNOWN_SETTINGS)
