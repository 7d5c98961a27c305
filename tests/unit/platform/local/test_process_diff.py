"""The local process diff: property paths, replaces, and the blast radius it reports."""

from __future__ import annotations

from typing import Any

from components.platform.local.process_diff import group_size, process_diff
from components.platform.local.provider import REPLACE_KEYS, RESTART_KEYS


def props(**properties: str) -> dict[str, Any]:
    return {
        "component": "ConnectWorkerGroup 'mm2', worker 0",
        "marker": "m",
        "run_dir": "/run/connect-mm2/worker-0",
        "properties": {"group.id": "mm2", **properties},
        "secret_files": {"w.properties": "password=old"},
        "heap": "768m",
    }


def diff(olds: dict[str, Any], news: dict[str, Any], peers: int = 1) -> Any:
    return process_diff(olds, news, restart_keys=RESTART_KEYS, replace_keys=REPLACE_KEYS, peers=peers)


def test_unchanged_is_no_change_and_no_impact() -> None:
    result = diff(props(), props())
    assert (result.changes, result.detailed_diff, result.impacts) == (False, {}, [])


def test_a_changed_property_is_one_path_and_restarts_the_process() -> None:
    result = diff(props(**{"offset.flush.interval.ms": "5000"}), props(**{"offset.flush.interval.ms": "7000"}))
    assert result.changes is True and result.replaces == []
    assert result.detailed_diff == {'properties["offset.flush.interval.ms"]': "update"}
    ((severity, text),) = result.impacts
    assert severity == "warning" and "worker 0: restarts" in text and "all at once" in text


def test_a_changed_secret_file_is_named_by_its_key_only() -> None:
    news = {**props(), "secret_files": {"w.properties": "password=new"}}
    result = diff(props(), news)
    assert result.detailed_diff == {"secret_files": "update"}


def test_the_rolling_input_decides_the_restart_mode_the_preview_reports() -> None:
    olds, news = props(), props(**{"offset.flush.interval.ms": "7000"})
    rolling = diff(olds, {**news, "rolling": {"lock": "/run/connect-mm2", "processes": 2}})
    assert "rolling: one of 2 at a time" in rolling.impacts[0][1]
    # `restarts: all-at-once` on a group of two: no rolling input, both restart together.
    together = diff(olds, {**news, "rolling": None}, peers=2)
    assert "all at once: all 2 together (restarts: all-at-once)" in together.impacts[0][1]
    assert "rolling" not in together.detailed_diff  # how it restarts is not a change of what runs


def test_a_changed_run_dir_replaces() -> None:
    result = diff(props(), {**props(), "run_dir": "/elsewhere"})
    assert result.replaces == ["run_dir"] and result.detailed_diff == {"run_dir": "update"}
    assert "replaced" in result.impacts[0][1]


def test_a_process_found_dead_changes() -> None:
    result = diff({**props(), "running": False}, props())
    assert result.detailed_diff == {"running": "update"} and "starts it again" in result.impacts[0][1]


def test_group_size_counts_a_brokers_quorum_voters_and_knows_no_worker_count() -> None:
    broker = {"properties": {"controller.quorum.voters": "0@127.0.0.1:1,1@127.0.0.1:3,2@127.0.0.1:5"}}
    assert group_size(broker) == 3
    assert group_size(props()) is None
