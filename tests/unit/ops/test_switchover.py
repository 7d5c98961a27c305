"""The switchover's drain over a fake Kafka (components/ops/switchover.py): one set of clients for
every poll, closed however the drain ends. (The whole switchover runs against real clusters in
tests/integration/test_switchover.py.)"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from components.ops import switchover
from components.outputs.contract import FlowExport, PartitionCut
from components.watch.lag import Reading
from components.watch.lag_plan import LagFlow
from tests.unit.connect.fakes import FakeConnect, running
from tests.unit.ops.helpers import outputs, route_connect

FLOW = LagFlow("primary->dr", "primary", "dr", "mm2-source", ("orders",), (), 0)
REQUEST = switchover.Request(
    old="primary",
    new="dr",
    pair="primary<->dr",
    principals=("User:app",),
    groups=(),
    drain_timeout_s=30,
    policy=None,
    patterns={"primary->dr": (("orders",), ())},
    cuts={},
)


class FakeKafka:
    """MM2's committed position moves STEP records per reading until it reaches the end (100)."""

    STEP = 40
    built: ClassVar[list[FakeKafka]] = []

    def __init__(self, plan: Any, secrets: Any) -> None:
        self.reads, self.closed = 0, False
        FakeKafka.built.append(self)

    def read_committed(self) -> None:
        self.reads += 1

    def read_flow(self, flow: LagFlow) -> list[Reading]:
        committed = min(99, self.reads * self.STEP - 1)
        return [Reading("orders", 0, 0, 100, committed), Reading("heartbeats", 0, 0, 9, None)]

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> type[FakeKafka]:
    FakeKafka.built = []
    monkeypatch.setattr(switchover, "_lag_plan", lambda outputs, request, name: (None, FLOW))
    monkeypatch.setattr(switchover, "Kafka", FakeKafka)
    monkeypatch.setattr(switchover, "_DRAIN_POLL_S", 0.0)
    monkeypatch.setattr(switchover, "flow", lambda outputs, name: FlowExport(name, "primary", "dr", {}, "", "", ""))
    monkeypatch.setattr(switchover, "end_offsets", lambda *a: ({}, {("primary.orders", 0): 100}))
    return FakeKafka


def test_drain_polls_one_reader_until_everything_is_copied_and_closes_it(fake: type[FakeKafka]) -> None:
    said: list[str] = []
    cut = switchover.drain(None, REQUEST, said.append)  # type: ignore[arg-type]
    assert cut == (PartitionCut("orders", 0, 100, 100),)
    assert len(fake.built) == 1 and fake.built[0].reads == 3 and fake.built[0].closed
    assert [s.split(" left")[0] for s in said] == [
        "switchover primary<->dr: primary->dr has 60 record(s)",
        "switchover primary<->dr: primary->dr has 20 record(s)",
    ]


def test_a_drain_past_its_bound_names_the_step_what_is_left_and_still_closes_the_reader(
    fake: type[FakeKafka], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(FakeKafka, "STEP", 0)  # MM2 copies nothing
    hurried = switchover.Request(**{**REQUEST.__dict__, "drain_timeout_s": 0})
    with pytest.raises(switchover.SwitchoverStopped) as stopped:
        switchover.drain(None, hurried, lambda line: None)  # type: ignore[arg-type]
    message = str(stopped.value)
    assert "stopped at step 2 (drain)" in message and "100 record(s) left: orders p0: 100" in message
    assert "Next step: `bin/connectors status --flow primary->dr`" in message
    assert len(fake.built) == 1 and fake.built[0].closed


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
