"""Where the stage reads MM2's progress: each worker group's offsets topic, from the stack outputs."""

from __future__ import annotations

from typing import Any

import pytest

from components.outputs.contract import StackExports
from components.topology.jaas_quoting import jaas_quote
from spark import outputs
from spark.outputs import OffsetStore, validation_view

CLUSTERS = {"primary": {"bootstrap": "h:1"}, "dr": {"bootstrap": "h:2"}}


def test_each_worker_group_keeps_its_offsets_on_its_own_cluster() -> None:
    scope = scope_of(
        {
            "clusters": CLUSTERS,
            "connect": {"mm2": {"url": "http://h:8083", "cluster": "dr"}, "west": {"url": "http://h:8084"}},
            "flows": {},
        }
    )
    # The stack's default topic name; a group whose cluster is not exported has no readable store.
    assert scope.offset_stores == {"mm2": OffsetStore("dr", "mm2-mm2-offsets")}


def test_the_exported_offsets_topic_wins_over_the_default_name() -> None:
    # `workerGroups.<name>.offsetTopic` set by the user: the stage must read that topic, or its
    # catch-up wait never sees MM2's progress.
    scope = scope_of(
        {
            "clusters": CLUSTERS,
            "connect": {"mm2": {"url": "http://h:8083", "cluster": "dr", "offsetTopic": "connect-offsets"}},
            "flows": {},
        }
    )
    assert scope.offset_stores == {"mm2": OffsetStore("dr", "connect-offsets")}


def test_each_worker_group_with_a_lag_exporter_is_asked_at_its_own_url() -> None:
    scope = scope_of(
        {
            "clusters": CLUSTERS,
            "connect": {
                "mm2": {"url": "http://h:8083", "cluster": "dr", "lagUrl": "http://127.0.0.1:40111"},
                "west": {"url": "http://h:8084", "cluster": "dr"},  # external, or outputs before the exporter
            },
            "flows": {},
        }
    )
    assert scope.lag_urls == {"mm2": "http://127.0.0.1:40111"}


def scope_of(data: dict[str, Any]) -> Any:
    """The stage's view of outputs already parsed from JSON."""
    return validation_view(StackExports.from_json(data))


@pytest.mark.parametrize("value", ['p"w', "p\\w", 'a\\"b\\\\', '"', "plain", ""])
def test_the_stage_quotes_jaas_values_as_the_stack_does(value: str) -> None:
    """spark/outputs.py keeps a twin of the pure core's jaas_quote (the stage may not import
    components.topology); a password the stack writes must reach Spark's source the same way."""
    assert outputs.jaas_quote(value) == jaas_quote(value)
