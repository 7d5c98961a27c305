"""`bin/status` on a cluster pair (mm2:failover): its active side, its fence read live, its last
switchover; the lost side of an unplanned failover never asked."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from components.ops import status as st
from components.ops import switchover
from components.outputs.contract import PairExport
from tests.unit.connect.fakes import FakeConnect
from tests.unit.ops.helpers import outputs
from tests.unit.ops.status_fakes import clusters, use_clusters


def use_pair(monkeypatch: pytest.MonkeyPatch, pair: PairExport, missing: list[str]) -> list[PairExport]:
    """The stack has `pair`; its passive side's fence lacks `missing`. Returns the pairs asked."""
    asked: list[PairExport] = []

    def gaps(_outputs: Any, p: PairExport) -> list[str]:
        asked.append(p)
        return missing

    monkeypatch.setattr(st, "load_exports", lambda stack, path: replace(outputs(), pairs={pair.name: pair}))
    monkeypatch.setattr(switchover, "fence_gaps", gaps)
    return asked


PAIR = PairExport(
    "primary<->dr",
    "primary",
    principals=("User:app",),
    patterns={"dr->primary": (("orders",), ())},
    last={"from": "dr", "to": "primary", "fencedSeconds": 8.6, "rpoRecords": 0, "groups": ["billing"]},
)


def test_a_pair_shows_its_active_side_its_fence_and_its_last_switchover(
    connect: FakeConnect, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_clusters(monkeypatch, clusters())
    asked = use_pair(monkeypatch, PAIR, [])
    assert st.main(["--stack", "dev"]) == 0
    out = capsys.readouterr().out
    assert "pair primary<->dr  active primary, passive dr  healthy" in out
    assert "  fence on dr: WRITE denied to User:app on dr->primary's topics" in out
    assert "  last switchover: dr -> primary, writes fenced 8.6s, RPO 0 record(s), groups moved: billing" in out
    assert asked == [PAIR]


def test_a_fence_lacking_a_binding_makes_the_pair_unhealthy_with_the_fix(
    connect: FakeConnect, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_clusters(monkeypatch, clusters())
    use_pair(monkeypatch, PAIR, ["User:app on orders"])
    assert st.main(["--stack", "dev", "--json"]) == 3
    data = json.loads(capsys.readouterr().out)
    assert data["healthy"] is False and data["flows"]["primary->dr"]["healthy"] is True
    (problem,) = data["failover"]["primary<->dr"]["problems"]
    assert problem.startswith("the fence on dr lacks User:app on orders") and "`bin/pulumi up`" in problem


def test_after_an_unplanned_failover_the_lost_side_is_not_asked(
    connect: FakeConnect, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_clusters(monkeypatch, clusters())
    lost = replace(PAIR, unplanned=True, last={"from": "dr", "to": "primary", "rpoRecords": None, "unplanned": True})
    asked = use_pair(monkeypatch, lost, ["never read"])
    assert st.main(["--stack", "dev"]) == 0
    out = capsys.readouterr().out
    assert "  fence on dr: not read (dr was lost in an unplanned failover: it is not asked)" in out
    assert "  last unplanned failover: dr -> primary, RPO unknown, groups moved: none" in out
    assert asked == []


def test_a_pair_of_flows_not_asked_for_is_left_out(
    connect: FakeConnect, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_clusters(monkeypatch, clusters())
    asked = use_pair(monkeypatch, replace(PAIR, name="a<->b", active="a"), [])
    assert st.main(["--stack", "dev", "--flow", "primary->dr"]) == 0
    assert "pair " not in capsys.readouterr().out and asked == []
