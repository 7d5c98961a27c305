"""components/topology/restarts.py: which groups roll, and when a restarted process is back."""

from __future__ import annotations

from typing import Any

import pytest

from components.topology import parse_topology
from components.topology.model import RestartMode
from components.topology.restarts import (
    RollStop,
    assignments_of,
    cluster_restarts,
    failed_during_roll,
    group_settled,
    missing_from_isr,
    quorum_pause,
    refused_after_stop,
    restart_during_roll_text,
    restart_mode,
    restart_summary,
    worker_group_restarts,
)
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


def test_what_ran_before_and_failed_during_the_turn_is_listed_with_its_cause() -> None:
    before = {
        "src": _status("RUNNING", "RUNNING", "RUNNING", "FAILED"),
        "ckpt": _status("RUNNING", "RUNNING"),
        "hb": _status("RUNNING", "RUNNING"),
    }
    now = {
        "src": _status("RUNNING", "FAILED", "RUNNING", "FAILED"),  # task 2 had failed before: not ours
        "ckpt": _status("FAILED", "FAILED"),
        "hb": _status("RUNNING", "RUNNING"),
        "new": _status("FAILED", "FAILED"),  # not there before the turn: not ours either
    }
    now["src"]["tasks"][0]["trace"] = (
        "org.apache.kafka.connect.errors.ConnectException: Failed to fence out zombies\n\tat org.apache..."
    )
    assert failed_during_roll(before, now) == {
        "ckpt": ["connector", "task 0"],
        "src": ["task 0 (org.apache.kafka.connect.errors.ConnectException: Failed to fence out zombies)"],
    }
    assert failed_during_roll(before, before) == {}


def test_the_restart_during_a_roll_is_said_and_a_refused_one_gives_the_next_step() -> None:
    said = restart_during_roll_text("worker 1", "src", ["task 0 (fence failed)"], None)
    assert said == "worker 1: src: task 0 (fence failed) failed during this restart turn; restarted it once"
    refused = restart_during_roll_text("worker 1", "src", ["task 0"], "answered 409: rebalance")
    assert "asking Connect to restart it failed (answered 409: rebalance)" in refused
    assert "pulumi up` again" in refused


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


def test_only_a_two_broker_cluster_loses_its_quorum_majority_while_one_restarts() -> None:
    assert quorum_pause(1) is None
    assert quorum_pause(3) is None
    assert quorum_pause(5) is None
    pause = quorum_pause(2)
    assert pause is not None and "2 KRaft controllers" in pause and "3 brokers" in pause


def test_no_stop_no_refusal() -> None:
    assert refused_after_stop("worker 1", None) is None


def test_a_stopped_roll_refuses_the_rest_naming_where_it_stopped_and_the_next_step() -> None:
    stop = RollStop("ConnectWorkerGroup 'mm2', worker 0", "the process exited during start-up.")
    refusal = refused_after_stop("ConnectWorkerGroup 'mm2', worker 1", stop)
    assert refusal is not None
    assert refusal.startswith("ConnectWorkerGroup 'mm2', worker 1: not restarted, left running")
    assert "stopped at ConnectWorkerGroup 'mm2', worker 0" in refusal
    assert "(the process exited during start-up.)" in refusal
    assert "`pulumi up` again" in refusal
