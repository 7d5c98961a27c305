"""components/platform/local/rolling.py and process.restart_turn: one process of a group restarts at
a time, and keeps its turn until it is back."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from components.platform.local import process as proc
from components.platform.local import rolling
from components.platform.local.provider import ProcessProvider


def test_restart_turns_of_one_group_exclude_each_other_across_threads(tmp_path: Path) -> None:
    inside: list[int] = []
    overlaps: list[int] = []

    def restart(index: int) -> None:
        with proc.restart_turn(str(tmp_path), f"worker {index}", timeout_s=30, poll_s=0.01):
            inside.append(index)
            if len(inside) > 1:
                overlaps.append(index)
            time.sleep(0.1)
            inside.remove(index)

    threads = [threading.Thread(target=restart, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert overlaps == []
    assert list(tmp_path.iterdir()) == []  # no lock file left for destroy to trip on


def test_a_turn_not_given_in_time_fails_naming_the_component(tmp_path: Path) -> None:
    with (
        proc.restart_turn(str(tmp_path), "worker 0", timeout_s=5),
        pytest.raises(proc.ProcessError, match="worker 1: another process of its group"),
        proc.restart_turn(str(tmp_path), "worker 1", timeout_s=0.2, poll_s=0.05),
    ):
        pass


def _news(tmp_path: Path, url: str) -> dict[str, Any]:
    return {
        "component": f"worker at {url}",
        "ready": {"kind": "connect", "url": url, "auth": None},
        "rolling": {"lock": str(tmp_path), "processes": 2},
        "timeout_seconds": 10,
    }


def test_the_next_worker_stops_only_after_the_previous_one_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    back: dict[str, bool] = {}

    def status(ready: dict[str, Any]) -> dict[str, Any] | None:
        worker = ready["url"].split("://")[1]
        if not back.get(worker):
            # Just restarted: its tasks are still unassigned for a few polls.
            back[worker] = len([e for e in events if e == f"checked {worker}"]) >= 2
            events.append(f"checked {worker}")
        state = "RUNNING" if back.get(worker, True) else "UNASSIGNED"
        return {"src": {"connector": {"state": "RUNNING", "worker_id": worker}, "tasks": [
            {"id": 0, "state": state, "worker_id": worker}]}}  # fmt: skip

    monkeypatch.setattr(rolling, "_connect_status", status)
    monkeypatch.setattr(rolling, "POLL_S", 0.01)

    def update(worker: str) -> None:
        def restart() -> dict[str, Any]:
            events.append(f"stop {worker}")
            back[worker] = False
            events.append(f"started {worker}")
            return {"pid": 1}

        rolling.rolling_update(_news(tmp_path, f"http://{worker}"), restart)
        events.append(f"back {worker}")

    threads = [threading.Thread(target=update, args=(w,)) for w in ("w0", "w1")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    order = [e for e in events if not e.startswith("checked")]
    first = order[0].split()[1]
    second = "w1" if first == "w0" else "w0"
    assert order == [f"stop {first}", f"started {first}", f"back {first}", f"stop {second}", f"started {second}",
                     f"back {second}"]  # fmt: skip


def test_a_worker_that_does_not_come_back_fails_the_update_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rolling, "_connect_status", lambda ready: None)
    monkeypatch.setattr(rolling, "SETTLE_TIMEOUT_S", 0.2)
    monkeypatch.setattr(rolling, "POLL_S", 0.01)
    with pytest.raises(proc.ProcessError, match=r"(?s)not back after 0s .*does not list its group's connectors.*LOG"):
        rolling.rolling_update(_news(tmp_path, "http://w0"), lambda: {"pid": 1}, lambda: "LOG")


def test_how_a_process_restarts_is_not_itself_a_reason_to_restart_it() -> None:
    base = {"marker": "m", "run_dir": "/r", "properties": {"a": "1"}, "rolling": None}
    assert ProcessProvider().diff("m", base, {**base, "rolling": {"lock": "/r", "processes": 2}}).changes is False


def _dead_pid() -> int:
    import subprocess

    child = subprocess.Popen(["true"])
    child.wait(10)
    return child.pid


def test_a_roll_stops_at_the_first_process_that_does_not_come_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whichever worker takes the first turn fails to start; the other is never stopped, and its
    update fails saying it was left running because the roll stopped at the first."""
    monkeypatch.setattr(rolling, "_connect_status", lambda ready: {})
    restarted: list[str] = []
    errors: dict[str, str] = {}

    def update(worker: str) -> None:
        def restart() -> dict[str, Any]:
            restarted.append(worker)
            raise proc.ProcessError(f"worker at http://{worker}: the process exited during start-up.\nERROR bad value")

        try:
            rolling.rolling_update(_news(tmp_path, f"http://{worker}"), restart)
        except proc.ProcessError as exc:
            errors[worker] = str(exc)

    threads = [threading.Thread(target=update, args=(w,)) for w in ("w0", "w1")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(restarted) == 1, f"only the first process may restart, restarted: {restarted}"
    first = restarted[0]
    second = "w1" if first == "w0" else "w0"
    assert errors[first].startswith(f"worker at http://{first}: the process exited during start-up.\nERROR bad value")
    assert "The rolling restart of its group stopped here" in errors[first]
    assert errors[second].startswith(f"worker at http://{second}: not restarted, left running")
    assert (
        f"stopped at worker at http://{first}, which did not come back (worker at http://{first}: the process"
        in (errors[second])
    )


def test_a_stop_in_one_group_does_not_hold_up_another(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rolling, "_connect_status", lambda ready: {})
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()

    def fail() -> dict[str, Any]:
        raise proc.ProcessError("boom")

    with pytest.raises(proc.ProcessError, match="boom"):
        rolling.rolling_update(_news(tmp_path / "a", "http://a0"), fail)
    assert rolling.rolling_update(_news(tmp_path / "b", "http://b0"), lambda: {"pid": 1}) == {"pid": 1}
    with pytest.raises(proc.ProcessError, match="not restarted, left running"):
        rolling.rolling_update(_news(tmp_path / "a", "http://a1"), lambda: {"pid": 1})


def test_a_process_that_dies_after_it_was_ready_fails_at_once_with_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rolling, "_connect_status", lambda ready: None)  # would wait the whole bound
    started = time.monotonic()
    with pytest.raises(proc.ProcessError, match=r"(?s)then exited before it was back.*LOG TAIL.*stopped here"):
        rolling.rolling_update(_news(tmp_path, "http://w0"), lambda: {"pid": _dead_pid()}, lambda: "LOG TAIL")
    assert time.monotonic() - started < rolling.SETTLE_TIMEOUT_S / 2


def test_a_task_the_turn_failed_is_restarted_once_said_and_then_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The race of the exactly-once rollout: while a worker restarts, a task that ran before
    fails (its fencing request went to the leader as the leader stopped). The turn restarts
    it, once, says so, and ends when it runs again."""
    states = iter(["RUNNING", "FAILED", "FAILED", "RUNNING"])
    restarts_asked: list[str] = []
    state = {"task": "RUNNING"}

    def status(ready: dict[str, Any]) -> dict[str, Any]:
        state["task"] = next(states, state["task"])
        task = {"id": 0, "state": state["task"], "worker_id": "w0", "trace": "ConnectException: fence failed"}
        return {"src": {"connector": {"state": "RUNNING", "worker_id": "w0"}, "tasks": [task]}}

    def restart_failed(ready: dict[str, Any], connector: str) -> None:
        restarts_asked.append(connector)

    monkeypatch.setattr(rolling, "_connect_status", status)
    monkeypatch.setattr(rolling, "_restart_failed", restart_failed)
    monkeypatch.setattr(rolling, "POLL_S", 0.01)
    with caplog.at_level("WARNING", logger="dynamic_provider"):
        assert rolling.rolling_update(_news(tmp_path, "http://w0"), lambda: {"pid": 0}) == {"pid": 0}
    assert restarts_asked == ["src"]  # once, though it was seen FAILED twice
    assert [r.getMessage() for r in caplog.records] == [
        "worker at http://w0: src: task 0 (ConnectException: fence failed) failed during this restart turn; "
        "restarted it once"
    ]


def test_a_task_that_fails_again_after_its_restart_stops_the_roll_saying_it_was_restarted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = iter([True])

    def status(ready: dict[str, Any]) -> dict[str, Any]:
        state = "RUNNING" if next(first, False) else "FAILED"
        return {"src": {"connector": {"state": "RUNNING", "worker_id": "w0"}, "tasks": [
            {"id": 0, "state": state, "worker_id": "w0"}]}}  # fmt: skip

    asked: list[str] = []
    monkeypatch.setattr(rolling, "_connect_status", status)
    monkeypatch.setattr(rolling, "_restart_failed", lambda ready, connector: asked.append(connector))
    monkeypatch.setattr(rolling, "SETTLE_TIMEOUT_S", 0.3)
    monkeypatch.setattr(rolling, "POLL_S", 0.01)
    with pytest.raises(proc.ProcessError, match=r"task 0 is FAILED, was RUNNING; restarted once during this turn"):
        rolling.rolling_update(_news(tmp_path, "http://w0"), lambda: {"pid": 0})
    assert asked == ["src"]
