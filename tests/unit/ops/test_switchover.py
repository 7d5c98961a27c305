"""The switchover's refusals over a fake Connect (components/ops/switchover.py); its drain:
test_drain.py. (The whole switchover runs against real clusters in
tests/integration/test_switchover.py.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from components.ops import switchover
from tests.unit.connect.fakes import FakeConnect, running
from tests.unit.ops.helpers import REQUEST, outputs, route_connect

# -- a flow that copies nothing never drains: refused before the fence ------------------------


def _failed_source_status() -> dict[str, Any]:
    status = running("mm2-primary-to-dr-source", tasks=2)
    status["tasks"][1] |= {
        "state": "FAILED",
        "trace": "org.apache.kafka.common.errors.SaslAuthenticationException: bad\n\tat x",
    }
    return status


def test_a_failed_source_task_refuses_the_switchover_naming_it_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    source = "mm2-primary-to-dr-source"
    fake = FakeConnect(connectors={source: {"connector.class": "x"}}, statuses={source: [_failed_source_status()]})
    route_connect(monkeypatch, switchover, fake)
    problem = switchover.failed_source(outputs(), REQUEST)
    assert problem.startswith(
        "switchover primary<->dr: flow primary->dr copies nothing, its source connector mm2-primary-to-dr-source "
        "is FAILED (task 1 on w0:8083: org.apache.kafka.common.errors.SaslAuthenticationException: bad)"
    ), problem
    assert "mm2:flows.<flow>.autoRestart" in problem and "`pulumi up` again" in problem
    # Preview refuses it (the diff's Refused) and run stops before the fence: nothing is denied.
    monkeypatch.setattr(switchover, "lag_ends", lambda *a: {})
    fenced: list[Any] = []
    monkeypatch.setattr(switchover, "fence_side", lambda *a, **k: fenced.append(a))
    with pytest.raises(switchover.SwitchoverStopped, match="did not start: switchover primary<->dr: flow"):
        switchover.run(outputs(), REQUEST, lambda line: None)
    assert fenced == []


def test_a_running_or_unread_source_is_no_problem() -> None:
    from components.ops.switchover_plan import source_problem

    assert source_problem("p", "a->b", "src", running("src", tasks=3)) == ""
    assert source_problem("p", "a->b", "src", None) == ""
    failed = running("src", state="FAILED")
    failed["connector"]["trace"] = "java.lang.ClassNotFoundException: x.Policy"
    assert "(the connector: java.lang.ClassNotFoundException: x.Policy; task 0 on w0:8083: no trace)" in (
        source_problem("p", "a->b", "src", failed)
    )


# -- the order: the application writes again before the old flow stops ----------------------


@dataclass(frozen=True)
class _Plan:
    """What `run` reads of a failover plan: its groups and problems."""

    groups: tuple[Any, ...] = ()
    problems: tuple[str, ...] = ()


def _steps(monkeypatch: pytest.MonkeyPatch, stop_fails: bool = False) -> list[str]:
    """Every step of `run` faked, each noting its name when it runs."""
    done: list[str] = []
    plan = _Plan()
    monkeypatch.setattr(switchover, "lag_ends", lambda *a: {})
    monkeypatch.setattr(switchover, "failed_source", lambda *a: "")
    monkeypatch.setattr(switchover, "fence_side", lambda o, r, alias, on: done.append(f"fence {alias} {on}") or [])
    monkeypatch.setattr(switchover, "drain", lambda *a: done.append("drain") or ())
    monkeypatch.setattr(switchover, "plan_groups", lambda *a: done.append("groups read") or (plan, [], []))
    monkeypatch.setattr(switchover, "execute", lambda *a: done.append("groups moved"))
    monkeypatch.setattr(switchover, "_origin_commits", lambda *a: [])

    def stop(outputs: Any, name: str) -> None:
        done.append(f"stop {name}")
        if stop_fails:
            raise RuntimeError("Connect answered 500")

    monkeypatch.setattr(switchover, "stop_flow", stop)
    monkeypatch.setattr(switchover, "lag", lambda *a: done.append("rpo read") or {("orders", 0): (0, 9)})
    return done


def test_the_new_side_takes_writes_before_the_old_flow_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    done = _steps(monkeypatch)
    said: list[str] = []
    report = switchover.run(outputs(), REQUEST, said.append)
    assert done == [
        "fence primary True",
        "drain",
        "groups read",
        "groups moved",
        "fence dr False",
        "stop primary->dr",
        "rpo read",
    ]
    assert report.rpo_records == 0 and set(report.seconds) == {"drain", "groups"}
    assert any(line.startswith("switchover primary<->dr: step 4, dr takes writes: they were fenced") for line in said)


def test_an_old_flow_that_does_not_stop_warns_and_leaves_the_rpo_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    done = _steps(monkeypatch, stop_fails=True)
    said: list[str] = []
    report = switchover.run(outputs(), REQUEST, said.append)
    assert done[-2:] == ["fence dr False", "stop primary->dr"] and report.rpo_records is None
    assert "warning: stopping primary->dr failed (Connect answered 500)" in said[-2]
    assert said[-1].endswith("RPO unknown record(s); dr->primary starts next")


# -- unplanned: nothing waits on the lost cluster -------------------------------------------


def test_a_lost_flow_is_waited_for_until_its_tasks_are_gone_not_until_it_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = ("mm2-primary-to-dr-source", "mm2-primary-to-dr-checkpoint", "mm2-primary-to-dr-heartbeat")
    source = names[0]
    stopping = running(source, tasks=1)  # the connector's own stop still waits on the lost cluster
    gone = {**running(source), "tasks": []}
    fake = FakeConnect(connectors={n: {"connector.class": "x"} for n in names}, statuses={source: [stopping, gone]})
    route_connect(monkeypatch, switchover, fake)
    monkeypatch.setattr(switchover.time, "sleep", lambda s: None)
    assert switchover.stop_lost_source(outputs(), "primary->dr") == ""
    assert fake.seen("PUT") == [f"PUT /connectors/{source}/stop"], "the source first, alone"
    switchover.stop_lost_rest(outputs(), "primary->dr")
    # The others together (in no promised order): none waits behind another's stopping tasks.
    assert sorted(fake.seen("PUT")[1:]) == sorted(f"PUT /connectors/{n}/stop" for n in names[1:])

    fake = FakeConnect(connectors={n: {"connector.class": "x"} for n in names}, statuses={source: [stopping]})
    route_connect(monkeypatch, switchover, fake)
    monkeypatch.setattr(switchover, "_TASKS_GONE_S", 0.05)  # a task that hangs on the lost cluster
    assert switchover.stop_lost_source(outputs(), "primary->dr") == f"1 task(s) of {source} still stopping"


def test_an_unplanned_failover_reads_the_cut_after_the_tasks_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    done: list[str] = []
    monkeypatch.setattr(switchover, "probe_source", lambda o, alias, s: done.append(f"probe {s}") or "refused")
    monkeypatch.setattr(switchover, "_FOUND_LOST", {})
    monkeypatch.setattr(switchover, "stop_lost_source", lambda o, name: done.append(f"stop {name}") or "")
    monkeypatch.setattr(switchover, "stop_lost_rest", lambda o, name: done.append(f"stop the rest of {name}"))
    monkeypatch.setattr(switchover, "committed_cut", lambda *a: done.append("cut") or ())
    monkeypatch.setattr(switchover, "fence_side", lambda o, r, alias, on: done.append(f"fence {alias} {on}") or [])
    said: list[str] = []
    unplanned = switchover.Request(**{**REQUEST.__dict__, "unplanned": True})
    switchover.run_unplanned(outputs(), unplanned, said.append)
    # The cut is read while Connect takes the other stops (either may end first); the fence lifts after both.
    assert done[:2] == ["probe 5.0", "stop primary->dr"] and done[-1] == "fence dr False"
    assert sorted(done[2:-1]) == ["cut", "stop the rest of primary->dr"]
    # `up`: the diff's preview found it lost a moment ago; the update does not wait 5 s again.
    done.clear()
    assert switchover.preview_unplanned(outputs(), unplanned)[0].endswith("(primary is lost: refused)")
    switchover.run_unplanned(outputs(), unplanned, said.append)
    assert done[0] == "stop primary->dr" and "probe 5.0" not in done
    assert "(primary found lost " in said[-1] and "primary->dr's source asked to stop, its tasks gone " in said[-1]
