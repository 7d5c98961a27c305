"""The switchover's drain over a fake Kafka and Connect (components/ops/drain.py): proven by
MM2's commit or by the records, one set of clients for every poll, closed however it ends."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pytest

from components.ops import drain
from components.ops.switchover_plan import Identity, Request
from components.outputs.contract import PartitionCut
from components.topology.connectors import TUNED_SOURCE_CLIENT
from components.watch.lag import Reading
from components.watch.lag_plan import LagFlow
from tests.unit.connect.fakes import FakeConnect
from tests.unit.ops.helpers import REQUEST, outputs, route_connect

SOURCE = "mm2-primary-to-dr-source"
FLOW = LagFlow("primary->dr", "primary", "dr", SOURCE, ("orders",), (), 0)


def records(first: int, last: int) -> tuple[Identity, ...]:
    return tuple((f"k{i}".encode(), b"v", 1700000000000 + i, ()) for i in range(first, last))


class FakeKafka:
    """MM2's committed position moves STEP records per reading until it reaches the end (100)."""

    STEP = 40
    built: ClassVar[list[FakeKafka]] = []

    def __init__(self, plan: Any, secrets: Any) -> None:
        self.reads, self.closed = 0, False
        FakeKafka.built.append(self)

    def read_committed(self) -> None:
        self.reads += 1

    def read_flow(self, flow: LagFlow, oldest: bool = True) -> list[Reading]:
        assert not oldest, "the drain needs no oldest record"
        committed = min(99, self.reads * self.STEP - 1)
        return [Reading("orders", 0, 0, 100, committed), Reading("heartbeats", 0, 0, 9, None)]

    def close(self) -> None:
        self.closed = True


class FakeTails:
    """Each cluster's partitions' records; the new side gains COPIED records per look at its ends."""

    COPIED = 0
    on: ClassVar[dict[str, dict[tuple[str, int], tuple[Identity, ...]]]] = {}
    built: ClassVar[list[FakeTails]] = []

    def __init__(self, outputs: Any, alias: str, isolation: str) -> None:
        self.alias, self.isolation, self.reads, self.closed = alias, isolation, 0, False
        FakeTails.built.append(self)

    def partition_counts(self, timeout_s: float) -> dict[str, int]:
        return {topic: 1 for topic, _p in self.on[self.alias]} | {"heartbeats": 1}

    def watermarks(self, partitions: Sequence[tuple[str, int]], timeout_s: float) -> dict[tuple[str, int], Any]:
        return {tp: (0, len(self.on[self.alias].get(tp, ()))) for tp in partitions}

    def ends(self, partitions: Sequence[tuple[str, int]], timeout_s: float) -> dict[tuple[str, int], int]:
        if self.alias == "dr":  # MM2 copied more since the last look
            copied = self.on["dr"].setdefault(("primary.orders", 0), ())
            self.on["dr"][("primary.orders", 0)] = copied + records(len(copied), len(copied) + self.COPIED)
        return {tp: len(self.on[self.alias].get(tp, ())) for tp in partitions}

    def read(self, ends: Mapping[tuple[str, int], int], timeout_s: float) -> dict[tuple[str, int], Any]:
        self.reads += 1
        return {tp: self.on[self.alias].get(tp, ())[max(0, end - drain.TAIL) : end] for tp, end in ends.items()}

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> type[FakeKafka]:
    FakeKafka.built, FakeTails.built = [], []
    FakeTails.COPIED = 0
    FakeTails.on = {"primary": {("orders", 0): records(0, 100)}, "dr": {}}
    monkeypatch.setattr(drain, "_lag_plan", lambda outputs, request, name: (None, FLOW))
    monkeypatch.setattr(drain, "Kafka", FakeKafka)
    monkeypatch.setattr(drain, "Tails", FakeTails)
    monkeypatch.setattr(drain, "_POLL_S", 0.0)
    monkeypatch.setattr(drain, "_LAG_EVERY_S", 0.0)
    monkeypatch.setattr(drain, "_SAY_EVERY_S", 0.0)
    monkeypatch.setattr(drain, "end_offsets", lambda *a: ({}, {("primary.orders", 0): 100}))
    connector(monkeypatch, dict(TUNED_SOURCE_CLIENT))
    return FakeKafka


def connector(monkeypatch: pytest.MonkeyPatch, config: dict[str, str]) -> None:
    route_connect(monkeypatch, drain, FakeConnect(connectors={SOURCE: {"connector.class": "x", **config}}))


def test_the_records_prove_the_drain_before_mm2_commits(fake: type[FakeKafka], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(FakeKafka, "STEP", 0)  # MM2 never commits within the drain
    FakeTails.COPIED = 50  # the new side gets the copies 50 at a time
    said: list[str] = []
    cut = drain.drain(outputs(), REQUEST, said.append)
    assert cut == (PartitionCut("orders", 0, 100, 100),)
    old, new = FakeTails.built
    assert (old.alias, old.isolation, old.reads) == ("primary", "read_uncommitted", 1), "fenced: read once"
    assert (new.alias, new.isolation, new.reads) == ("dr", "read_committed", 2)
    assert old.closed and new.closed and fake.built[0].closed
    assert said[0] == "switchover primary<->dr: primary->dr has 100 record(s) left to copy (0s of 30s)"
    assert said[1].startswith("switchover primary<->dr: primary->dr drained in ")
    assert said[1].endswith(": 1 partition(s) proven by the records, 0 by MM2's commit")


def test_a_tail_that_differs_proves_nothing_and_the_commit_ends_the_drain(fake: type[FakeKafka]) -> None:
    FakeTails.on["dr"] = {("primary.orders", 0): records(1, 101)}  # one record off: not the same tail
    cut = drain.drain(outputs(), REQUEST, lambda line: None)
    assert cut == (PartitionCut("orders", 0, 100, 100),)
    assert fake.built[0].reads == 3, "MM2's commit reached the end at the third reading"


@pytest.mark.parametrize(
    ("config", "why"),
    [
        ({}, "neither idempotent nor limited to one request in flight"),
        ({**TUNED_SOURCE_CLIENT, "errors.tolerance": "all"}, "errors.tolerance=all may skip a record"),
    ],
)
def test_a_connector_whose_copies_may_reorder_or_skip_waits_for_the_commit(
    fake: type[FakeKafka], monkeypatch: pytest.MonkeyPatch, config: dict[str, str], why: str
) -> None:
    connector(monkeypatch, config)
    FakeTails.COPIED = 100
    said: list[str] = []
    drain.drain(outputs(), REQUEST, said.append)
    assert said[0].startswith(f"switchover primary<->dr: the drain waits for MM2's commit of primary->dr: {SOURCE}: ")
    assert why in said[0]
    assert FakeTails.built == [] and fake.built[0].reads == 3
    assert [s.split(" left")[0] for s in said[1:-1]] == [
        "switchover primary<->dr: primary->dr has 60 record(s)",
        "switchover primary<->dr: primary->dr has 20 record(s)",
    ]
    assert said[-1].endswith(": 0 partition(s) proven by the records, 1 by MM2's commit")


def test_a_drain_past_its_bound_names_what_is_left_and_still_closes_every_client(
    fake: type[FakeKafka], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(FakeKafka, "STEP", 0)  # MM2 copies nothing
    hurried = Request(**{**REQUEST.__dict__, "drain_timeout_s": 0})
    with pytest.raises(drain.DrainTimedOut) as stopped:
        drain.drain(outputs(), hurried, lambda line: None)
    assert stopped.value.left == {("orders", 0): 100} and str(stopped.value) == "orders p0: 100"
    assert fake.built[0].closed and all(t.closed for t in FakeTails.built)


def test_records_that_prove_it_within_a_second_never_open_the_offsets_topic(
    fake: type[FakeKafka], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(drain, "_LAG_EVERY_S", 3600.0)
    monkeypatch.setattr(FakeKafka, "STEP", 0)
    FakeTails.COPIED = 25  # proven at the fourth look at the new side
    drain.drain(outputs(), REQUEST, lambda line: None)
    assert fake.built == [] and FakeTails.built[1].reads == 4, "MM2's commit is read once a second at most"
