"""Connector lifecycle through ConnectClient on an in-memory Connect (httpx.MockTransport)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from components.ops import connectors as ops
from components.ops.connectors import Operation
from components.ops.errors import OpsError
from tests.unit.connect.fakes import FakeConnect, running
from tests.unit.ops.helpers import outputs, route_connect

NAMES = ["mm2-primary-to-dr-source", "mm2-primary-to-dr-checkpoint", "mm2-primary-to-dr-heartbeat"]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeConnect:
    connect = FakeConnect(connectors={n: {"connector.class": "x"} for n in NAMES})
    route_connect(monkeypatch, ops, connect)
    monkeypatch.setattr(ops, "POLL_S", 0.0)
    return connect


def failed(name: str) -> dict[str, Any]:
    status = running(name, tasks=2)
    status["tasks"][1] |= {"state": "FAILED", "trace": "org.apache.kafka.connect.errors.ConnectException: boom\n\tat x"}
    return status


def test_status_lists_every_connector_of_the_flow(fake: FakeConnect) -> None:
    states = ops.run(outputs(), Operation.STATUS, log=lambda _m: None)
    assert [(s.role, s.name, s.state) for s in states] == [
        ("source", NAMES[0], "RUNNING"),
        ("checkpoint", NAMES[1], "RUNNING"),
        ("heartbeat", NAMES[2], "RUNNING"),
    ]
    assert all(s.healthy for s in states)
    assert fake.seen("GET") == [f"GET /connectors/{n}/status" for n in NAMES]


def test_status_failed_only_and_rendering(fake: FakeConnect) -> None:
    fake.statuses[NAMES[0]] = [failed(NAMES[0])]
    states = ops.run(outputs(), Operation.STATUS, failed_only=True, log=lambda _m: None)
    assert [s.name for s in states] == [NAMES[0]]
    text = ops.render_states(states)
    assert "task 1 FAILED@w0:8083" in text and "ConnectException: boom" in text


def test_restart_failed_only_restarts_just_the_failed_connector(fake: FakeConnect) -> None:
    fake.statuses[NAMES[0]] = [failed(NAMES[0]), running(NAMES[0])]
    ops.run(outputs(), Operation.RESTART, failed_only=True, wait_s=5, log=lambda _m: None)
    assert fake.seen("POST") == [f"POST /connectors/{NAMES[0]}/restart?includeTasks=true&onlyFailed=true"]


def test_pause_one_role_waits_for_paused(fake: FakeConnect) -> None:
    half = running(NAMES[1]) | {"connector": {"state": "PAUSED", "worker_id": "w0:8083"}}
    paused = half | {"tasks": [{"id": 0, "state": "PAUSED", "worker_id": "w0:8083"}]}
    fake.statuses[NAMES[1]] = [running(NAMES[1]), half, paused]
    states = ops.run(outputs(), Operation.PAUSE, roles=["checkpoint"], wait_s=5, log=lambda _m: None)
    assert fake.seen("PUT") == [f"PUT /connectors/{NAMES[1]}/pause"]
    assert [s.state for s in states] == ["PAUSED"]


@pytest.mark.parametrize("shape", ["nested", "flat"])
def test_rest_calls_use_basic_auth_from_the_outputs(fake: FakeConnect, shape: str) -> None:
    ops.run(outputs(auth=shape), Operation.STOP, roles=["heartbeat"], wait_s=0, log=lambda _m: None)
    assert {r.headers.get("authorization") for r in fake.requests} == {
        "Basic " + base64.b64encode(b"ops:s3cret").decode()
    }


def test_no_auth_in_the_outputs_sends_none(fake: FakeConnect) -> None:
    ops.run(outputs(), Operation.STATUS, log=lambda _m: None)
    assert all("authorization" not in r.headers for r in fake.requests)


def test_missing_connector_and_bad_options_fail_with_next_step(fake: FakeConnect) -> None:
    del fake.connectors[NAMES[2]]
    with pytest.raises(OpsError, match=r"does not exist on worker group mm2.*bin/pulumi up"):
        ops.run(outputs(), Operation.RESUME, roles=["heartbeat"], log=lambda _m: None)
    with pytest.raises(OpsError, match="--failed-only applies to status and restart"):
        ops.run(outputs(), Operation.PAUSE, failed_only=True, log=lambda _m: None)
    with pytest.raises(OpsError, match="flow 'a->b' is not in the stack outputs"):
        ops.run(outputs(), Operation.STATUS, flows=["a->b"], log=lambda _m: None)


def unassigned(name: str) -> dict[str, Any]:
    status = running(name, tasks=2)
    status["tasks"][0] |= {"state": "UNASSIGNED"}
    return status


def test_wait_healthy_rides_out_a_task_still_unassigned_after_a_deploy(fake: FakeConnect) -> None:
    fake.statuses[NAMES[0]] = [unassigned(NAMES[0]), unassigned(NAMES[0]), running(NAMES[0], tasks=2)]
    said: list[str] = []
    states = ops.wait_healthy(outputs(), ["primary->dr"], 30, log=said.append)
    assert all(s.healthy for s in states)
    assert said == [f"waiting up to 30s for {NAMES[0]} RUNNING (task 0 UNASSIGNED) to be RUNNING ..."]
    assert fake.seen("GET").count(f"GET /connectors/{NAMES[0]}/status") == 3


def test_wait_healthy_stops_at_a_failed_task_and_at_the_deadline(fake: FakeConnect) -> None:
    fake.statuses[NAMES[0]] = [failed(NAMES[0])]
    states = ops.wait_healthy(outputs(), ["primary->dr"], 30, log=lambda _m: None)
    assert ops.describe([s for s in states if not s.healthy]) == f"{NAMES[0]} RUNNING (task 1 FAILED)"
    assert fake.seen("GET").count(f"GET /connectors/{NAMES[0]}/status") == 1
    fake.statuses[NAMES[0]] = [unassigned(NAMES[0])]
    states = ops.wait_healthy(outputs(), ["primary->dr"], 0, log=lambda _m: None)
    assert [s.name for s in states if not s.healthy] == [NAMES[0]]
