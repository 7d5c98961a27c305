"""The auto-restart watcher's loop against an in-memory Connect (MockTransport), with fake clocks."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from components.connect.client import ConnectClient
from components.ops.watcher import Watcher, read_plan
from components.watch.backoff import Backoff
from components.watch.plan import WatchPlan, plan_document
from tests.unit.clock import Clock
from tests.unit.connect.fakes import URL, FakeConnect, FakeSleep, running

NAME = "mm2-primary-to-dr-source"
TRACE = "org.apache.kafka.connect.errors.ConnectException: Unrecoverable exception from producer send callback\n\tat x"


def failed() -> dict[str, Any]:
    return {
        "name": NAME,
        "connector": {"state": "RUNNING", "worker_id": "w0"},
        "tasks": [{"id": 0, "state": "FAILED", "worker_id": "w1:8084", "trace": TRACE}],
    }


def watcher(
    fake: FakeConnect, tmp: Path, limit: int | None = 2, transport: Any = None
) -> tuple[Watcher, Clock, list[str]]:
    plan = WatchPlan(
        group="mm2",
        url=URL,
        connectors={NAME: limit},
        status_file=str(tmp / "watcher-mm2" / "status.json"),
        backoff=Backoff(first_s=5, unit_s=30),
    )
    clock, lines = Clock(1000.0), []

    def client() -> ConnectClient:
        return ConnectClient(URL, transport=transport or fake.transport(), retry_budget_s=0, sleep=FakeSleep())

    return Watcher(plan, client, clock=clock, wall=clock, log=lines.append), clock, lines


def restarts(fake: FakeConnect) -> list[dict[str, str]]:
    return [dict(r.url.params) for r in fake.requests if r.url.path.endswith("/restart")]


def test_restarts_only_failed_instances_after_the_first_step_and_records_it(tmp_path: Path) -> None:
    fake = FakeConnect(connectors={NAME: {}}, statuses={NAME: [failed()]})
    w, clock, lines = watcher(fake, tmp_path)
    w.tick()
    assert restarts(fake) == []  # seen once: the first step has not passed
    clock.now += 5
    w.tick()
    assert restarts(fake) == [{"includeTasks": "true", "onlyFailed": "true"}]
    assert any(
        "restarted mm2-primary-to-dr-source (restart 1 of 2): task 0 FAILED on worker w1:8084" in line for line in lines
    )
    status = json.loads((tmp_path / "watcher-mm2" / "status.json").read_text())
    assert status["connectors"][NAME]["restarts"] == 1 and status["connectors"][NAME]["state"] == "FAILED"
    assert [(e["connector"], e["action"], e["restart"]) for e in status["events"]] == [(NAME, "restart", 1)]
    assert "ConnectException" in status["events"][0]["cause"]


def test_gives_up_after_max_restarts_and_never_touches_config_or_state(tmp_path: Path) -> None:
    fake = FakeConnect(connectors={NAME: {}}, statuses={NAME: [failed()]})
    w, clock, lines = watcher(fake, tmp_path, limit=2)
    for _ in range(400):
        w.tick()
        clock.now += 1
    assert len(restarts(fake)) == 2
    assert sum("gave up on" in line for line in lines) == 1
    assert {r.method for r in fake.requests} == {"GET", "POST"}  # no PUT: config and state are pulumi's
    status = json.loads((tmp_path / "watcher-mm2" / "status.json").read_text())
    assert status["connectors"][NAME]["gaveUp"] is True


def test_healthy_connectors_are_left_alone(tmp_path: Path) -> None:
    fake = FakeConnect(connectors={NAME: {}}, statuses={NAME: [running(NAME), {**running(NAME, state="PAUSED")}]})
    w, clock, _ = watcher(fake, tmp_path)
    for _ in range(20):
        w.tick()
        clock.now += 10
    assert restarts(fake) == []
    status = json.loads((tmp_path / "watcher-mm2" / "status.json").read_text())
    assert status["connectors"][NAME]["state"] == "PAUSED"


def test_an_unreachable_group_is_logged_once_and_retried(tmp_path: Path) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    w, clock, lines = watcher(FakeConnect(), tmp_path, transport=httpx.MockTransport(refuse))
    for _ in range(3):
        w.tick()
        clock.now += 2
    assert sum("cannot reach Kafka Connect" in line for line in lines) == 1
    status = json.loads((tmp_path / "watcher-mm2" / "status.json").read_text())
    assert status["reachable"] is False


def test_plan_file_round_trips_and_reads_credentials_from_the_auth_file(tmp_path: Path) -> None:
    auth = tmp_path / "rest-secrets.properties"
    auth.write_text("username=mm2-admin\npassword=s3cret=x\n")
    plan = WatchPlan(group="mm2", url=URL, connectors={NAME: 3, "other": None}, status_file="/s.json")
    doc = plan_document(plan, str(auth))
    assert "s3cret" not in json.dumps(doc)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    back = read_plan(str(path))
    assert back.connectors == {NAME: 3, "other": None}
    assert back.auth == ("mm2-admin", "s3cret=x")
    assert back.backoff == plan.backoff and back.status_file == "/s.json"


def test_a_dead_worker_process_is_started_again_on_the_back_off_and_reported(tmp_path: Path, monkeypatch: Any) -> None:
    from components.platform.local import process as proc
    from components.watch.plan import WorkerProcess

    fake = FakeConnect(connectors={NAME: {"connector.class": "x"}})
    fake.statuses[NAME] = [running(NAME)]
    w, clock, lines = watcher(fake, tmp_path)
    worker = WorkerProcess("worker 1", str(tmp_path / "worker-1"), "dev/connect-mm2/worker-1")
    w = Watcher(replace(w.plan, workers=(worker,)), w.client_factory, clock=clock, wall=clock, log=lines.append)
    alive: list[int] = []
    started: list[str] = []

    def restart_dead(run_dir: str) -> int:
        started.append(run_dir)
        alive.append(4242)
        return 4242

    monkeypatch.setattr(proc, "find_pids", lambda marker: list(alive))
    monkeypatch.setattr(proc, "restart_dead", restart_dead)
    w.tick()  # dead: seen, the first restart is due 5 s later
    assert started == [] and any("worker 1 is dead" in line for line in lines)
    clock.now += 5
    w.tick()
    assert started == [worker.run_dir]
    assert any("restarted worker 1 (pid 4242, restart 1): its process was gone" in line for line in lines)
    doc = json.loads(Path(w.plan.status_file or "").read_text())
    assert doc["workers"]["worker 1"] == {"alive": True, "restarts": 1, "nextRestartAt": None}
    assert doc["events"][-1]["action"] == "worker-restart" and doc["events"][-1]["worker"] == "worker 1"
    alive.clear()  # dies again at once: the second restart waits the back-off's 60 s
    clock.now += 1
    w.tick()
    clock.now += 59
    w.tick()
    assert started == [worker.run_dir]
    clock.now += 1
    w.tick()
    assert started == [worker.run_dir, worker.run_dir]


def test_restart_dead_starts_only_what_died_on_its_own(tmp_path: Path) -> None:
    import sys

    from components.platform.local import process as proc

    # Unique per run: tmp_path's name repeats across concurrent pytest runs on one machine, and
    # another run's process with the same marker would count as this one alive.
    marker = f"unit-test/{uuid.uuid4().hex}/worker-0"
    cmd = [sys.executable, "-c", "import time; time.sleep(60)", f"{proc.MARKER_FLAG}{marker}"]
    (tmp_path / proc.COMMAND_FILE).write_text(
        json.dumps({"cmd": cmd, "log": str(tmp_path / "out.log"), "marker": marker, "component": "t"})
    )
    try:
        pid = proc.restart_dead(str(tmp_path))
        assert pid is not None
        assert proc.restart_dead(str(tmp_path)) is None  # alive: nothing to do
        proc.stop_for_good(str(tmp_path), marker, pid, grace_s=5)  # the stack stops it: not restarted
        assert not (tmp_path / proc.COMMAND_FILE).exists()
        assert proc.restart_dead(str(tmp_path)) is None
        assert proc.find_pids(marker) == []
    finally:
        proc.stop(marker, grace_s=1)
