"""The connector diff's blast radius: what the provider reports beside the property paths."""

from __future__ import annotations

from typing import Any

from pulumi.output import Unknown

from components.connect.diff import connector_diff

from .test_provider import outputs, props


def test_no_change_has_no_impact() -> None:
    assert connector_diff(outputs(props()), props()).impacts == []


def test_a_changed_key_reports_the_restart_of_the_tasks_recorded_in_state() -> None:
    old = outputs(props())
    old["tasks"] = [{"id": 0}, {"id": 1}, {"id": 2}]
    result = connector_diff(old, props(**{"tasks.max": "4"}))
    assert result.impacts == [
        (
            "info",
            "connector mm2-primary-to-dr-source: config keys tasks.max change; Connect restarts the "
            "connector and its tasks (3 at the last up)",
        )
    ]


def test_a_separator_change_warns_with_the_new_remote_names() -> None:
    old = outputs(props(**{"source.cluster.alias": "primary", "replication.policy.separator": "."}))
    new = props(**{"source.cluster.alias": "primary", "replication.policy.separator": "_"})
    renamed = [sev for sev, text in connector_diff(old, new).impacts if "primary.orders -> primary_orders" in text]
    assert renamed == ["warning"]


def test_pausing_a_connector_warns() -> None:
    new: dict[str, Any] = {**props(), "desired_state": "PAUSED"}
    assert connector_diff(outputs(props()), new).impacts == [
        (
            "warning",
            "connector mm2-primary-to-dr-source: paused (RUNNING -> PAUSED): it stops replicating until resumed",
        )
    ]


def test_an_unknown_config_during_preview_names_no_key() -> None:
    result = connector_diff(outputs(props()), {**props(), "config": Unknown()})
    assert result.detailed_diff == {"config": "update"}
    assert result.impacts == []  # no key is known to change: nothing to name
