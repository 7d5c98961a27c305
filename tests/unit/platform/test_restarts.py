"""components/platform/restarts.py: which groups roll, and when a restarted process is back."""

from __future__ import annotations

from typing import Any

import pytest

from components.platform.restarts import (
    assignments_of,
    cluster_restarts,
    group_settled,
    missing_from_isr,
    restart_mode,
    restart_summary,
    worker_group_restarts,
)
from components.topology import parse_topology
from components.topology.model import RestartMode
from tests.unit.topology.helpers import dev_config


@pytest.mark.parametrize(
    ("processes", "requested", "expected"),
    [
        (1, None, RestartMode.ALL_AT_ONCE),
        (1, RestartMode.ROLLING, RestartMode.ALL_AT_ONCE),
        (2, None, RestartMode.ROLLING),
        (3, RestartMode.ALL_AT_ONCE, RestartMode.ALL_AT_ONCE),
        (3, RestartMode.ROLLING, RestartMode.ROLLING),
    ],
)
def test_more_than_one_process_rolls_unless_all_at_once_is_asked_for(
    processes: int, requested: RestartMode | None, expected: RestartMode
) -> None:
    assert restart_mode(processes, requested) is expected


def test_the_dev_topology_rolls_its_two_workers_and_restarts_its_single_brokers_as_before() -> None:
    config = dev_config()
    topology = parse_topology(config)
    assert worker_group_restarts(topology.worker_groups["mm2"]) is RestartMode.ROLLING
    assert cluster_restarts(topology.clusters["dr"]) is RestartMode.ALL_AT_ONCE
    config["workerGroups"]["mm2"]["restarts"] = "all-at-once"
    config["clusters"]["dr"]["brokers"] = 3
    topology = parse_topology(config)
    assert worker_group_restarts(topology.worker_groups["mm2"]) is RestartMode.ALL_AT_ONCE
    assert cluster_restarts(topology.clusters["dr"]) is RestartMode.ROLLING


def test_summary_says_how_the_group_restarts() -> None:
    assert "one at a time" in restart_summary("worker group 'mm2'", 2, RestartMode.ROLLING)
    assert "all 2 processes restart at once" in restart_summary("worker group 'mm2'", 2, RestartMode.ALL_AT_ONCE)
    assert "only process" in restart_summary("cluster 'dr'", 1, RestartMode.ALL_AT_ONCE)


def _status(state: str, *tasks: str, worker: str = "127.0.0.1:1") -> dict[str, Any]:
    return {
        "connector": {"state": state, "worker_id": worker},
        "tasks": [{"id": i, "state": s, "worker_id": worker} for i, s in enumerate(tasks)],
    }


def test_back_when_everything_that_ran_runs_again() -> None:
    before = {"src": _status("RUNNING", "RUNNING", "RUNNING"), "hb": _status("RUNNING", "RUNNING")}
    assert group_settled(before, before) is None


@pytest.mark.parametrize(
    ("now", "reason"),
    [
        ({"hb": _status("RUNNING", "RUNNING")}, "connector src not listed yet"),
        ({"src": _status("UNASSIGNED", "RUNNING", "RUNNING")}, "connector src is UNASSIGNED"),
        ({"src": _status("RUNNING", "RUNNING", "UNASSIGNED")}, "connector src task 1 is UNASSIGNED"),
        ({"src": _status("RUNNING", "RUNNING")}, "connector src task 1 is missing, was RUNNING"),
        ({"src": _status("FAILED", "RUNNING", "RUNNING")}, "connector src is FAILED, was RUNNING"),
    ],
)
def test_not_back_names_the_first_connector_or_task_still_away(now: dict[str, Any], reason: str) -> None:
    before = {"src": _status("RUNNING", "RUNNING", "RUNNING")}
    now = {"hb": _status("RUNNING", "RUNNING"), **now}
    assert group_settled({**before, "hb": _status("RUNNING", "RUNNING")}, now) == reason


def test_a_task_failed_before_the_restart_or_a_paused_connector_is_not_waited_for() -> None:
    before = {"src": _status("RUNNING", "RUNNING", "FAILED"), "ckpt": _status("PAUSED", "PAUSED")}
    now = {"src": _status("RUNNING", "RUNNING", "FAILED"), "ckpt": _status("PAUSED", "PAUSED")}
    assert group_settled(before, now) is None


def test_assignments_count_connectors_and_tasks_per_worker() -> None:
    statuses = {"a": _status("RUNNING", "RUNNING", "RUNNING", worker="w0"), "b": _status("RUNNING", worker="w1")}
    assert assignments_of("w0", statuses) == 3
    assert assignments_of("w1", statuses) == 1
    assert assignments_of(None, statuses) == 4


def test_isr_check_names_the_partitions_a_broker_hosts_but_is_not_in_sync_for() -> None:
    partitions = [
        ("orders", 0, [0, 1, 2], [0, 1, 2]),
        ("orders", 1, [1, 2, 0], [1, 2]),
        ("payments", 0, [1, 2], [1]),  # broker 0 hosts nothing here
    ]
    assert missing_from_isr(0, partitions) == ["orders-1"]
    assert missing_from_isr(2, partitions) == ["payments-0"]
    assert missing_from_isr(1, partitions) == []
