"""components/ops/switchover_plan.py: the cut, the divergence, where groups resume on the way back, the plan's lines."""

from __future__ import annotations

from typing import Any

from components.mm2_records import Checkpoint
from components.ops.failover_plan import GroupPlan, plan_partition
from components.ops.switchover_plan import (
    Divergent,
    SwitchoverPlan,
    divergence,
    divergence_problem,
    matching_groups,
    origin_positions,
    plan_lines,
    tail_proven,
    unprovable,
)
from components.outputs.contract import PartitionCut, cut_document, cut_from_document
from components.topology.model import Divergence

CUT = (PartitionCut("orders", 0, 100, 90), PartitionCut("orders", 1, 50, 50))
REMOTE = {"orders": "primary.orders"}


def test_the_cut_survives_the_state() -> None:
    assert cut_from_document(cut_document(reversed(CUT))) == CUT
    assert cut_from_document(None) == ()


def test_divergence_is_what_each_partition_took_past_its_cut() -> None:
    found = divergence(CUT, {("orders", 0): 103, ("orders", 1): 50, ("other", 0): 9})
    assert found == (Divergent("orders", 0, 100, 103),)
    assert found[0].count == 3 and found[0].describe() == "orders p0 offsets 100..102 (3 record(s))"
    assert divergence(CUT, {}) == ()


def test_undecided_divergence_is_a_problem_naming_the_key() -> None:
    found = (Divergent("orders", 0, 100, 103),)
    text = divergence_problem("primary<->dr", "primary", found, None)
    assert "3 record(s) were written on primary" in text and "mm2:failover.primary<->dr.divergence" in text
    assert divergence_problem("primary<->dr", "primary", found, Divergence.KEEP) == ""
    assert divergence_problem("primary<->dr", "primary", (), None) == ""


def test_a_group_that_read_to_the_cut_resumes_at_it_or_after_the_divergence() -> None:
    read = {("primary.orders", 0): 90, ("primary.orders", 1): 50}
    ends = {("orders", 0): 103, ("orders", 1): 50}
    keep, notes = origin_positions(CUT, REMOTE, read, ends, Divergence.KEEP)
    assert keep == {("orders", 0): 100, ("orders", 1): 50} and notes == []
    discard, _ = origin_positions(CUT, REMOTE, read, ends, Divergence.DISCARD)
    assert discard == {("orders", 0): 103, ("orders", 1): 50}


def test_a_group_short_of_the_cut_keeps_its_earlier_position() -> None:
    commits, notes = origin_positions(CUT, REMOTE, {("primary.orders", 0): 80}, {}, None)
    assert commits == {}
    assert notes == [
        "primary.orders p0: read up to 80 of 90; the group keeps its earlier position on orders p0 and re-reads "
        "from there"
    ]


def _group(name: str, members: int = 0) -> GroupPlan:
    cp = Checkpoint(name, "primary.orders", 0, 40, 38, "", 0)
    part = plan_partition(name, "primary.orders", 0, cp, None, 45, 100)
    return GroupPlan(name, "STABLE" if members else "EMPTY", members, (part,))


def test_patterns_select_groups_and_name_those_that_select_none() -> None:
    groups = [_group("billing"), _group("billing-eu"), _group("audit")]
    chosen, unmatched = matching_groups(groups, ["billing.*", "ledger"])
    assert [g.group for g in chosen] == ["billing", "billing-eu"] and unmatched == ["ledger"]
    everything, none = matching_groups(groups, [])
    assert len(everything) == 3 and none == []


def test_the_plan_reads_as_ordered_steps() -> None:
    plan = SwitchoverPlan(
        pair="primary<->dr",
        old="primary",
        new="dr",
        principals=("User:app",),
        fence_topics=("orders",),
        lift_topics=("orders",),
        drain_timeout_s=120,
        lag={("orders", 0): 7},
        groups=None,
        moved=(_group("billing"),),
        divergent=(Divergent("orders", 1, 50, 52),),
        policy=Divergence.KEEP,
        problems=("group x is active on dr",),
    )
    lines = plan_lines(plan)
    assert lines[0] == "switchover primary<->dr: dr becomes active (was primary)"
    assert "  1. fence: deny WRITE to User:app on primary topics orders" in lines
    assert "(now 7 record(s) behind)" in lines[2]
    assert lines[3] == "  3. move group billing to dr (primary.orders p0 -> 38); re-read 5..105"
    assert "  6. start flow dr->primary: records written on dr flow back to primary" in lines
    lift, stop = (next(i for i, line in enumerate(lines) if line.startswith(f"  {n}. ")) for n in (4, 5))
    assert lines[lift].startswith("  4. lift the fence on dr") and lines[stop].startswith("  5. stop flow primary->dr")
    assert "  divergence on dr (kept): orders p1 offsets 50..51 (2 record(s))" in lines
    assert lines[-1] == "  REFUSED: group x is active on dr"


def test_the_way_back_shows_where_a_group_resumes_on_its_own_topics() -> None:
    plan = SwitchoverPlan(
        pair="primary<->dr",
        old="dr",
        new="primary",
        principals=("User:app",),
        fence_topics=("orders",),
        lift_topics=("orders",),
        drain_timeout_s=120,
        lag={},
        groups=None,
        moved=(_group("billing"),),
        divergent=(),
        policy=None,
        origin={"billing": {("orders", 1): 254, ("orders", 0): 250}},
    )
    assert (
        "  3. group billing resumes on primary's own topics after what it read of them on dr "
        "(orders p0 -> 250, orders p1 -> 254)" in plan_lines(plan)
    )


# -- the records prove a drain --------------------------------------------------------------


def _records(first: int, last: int, value: bytes = b"v") -> tuple[tuple[Any, ...], ...]:
    return tuple((f"k{i}".encode(), value, 1700000000000 + i, ()) for i in range(first, last))


def test_a_remote_tail_ending_with_the_old_sides_last_records_proves_the_drain() -> None:
    last = _records(36, 100)
    assert tail_proven(last, _records(0, 100))
    # A task restarted copies again from MM2's commit: proven once the copies again end with the window.
    assert tail_proven(last, _records(0, 100) + _records(20, 100))
    assert not tail_proven(last, _records(0, 100) + _records(90, 100)), "left to MM2's commit"
    assert not tail_proven(last, _records(0, 99)), "the last record not there yet"
    assert not tail_proven(last, _records(60, 100)), "fewer records on the new side than compared"
    assert not tail_proven(last, None), "the new side not read to its end"
    stamped = tuple((k, v, ts + 1, h) for k, v, ts, h in _records(0, 100))  # LogAppendTime on the target
    assert not tail_proven(last, stamped)


def test_a_window_of_one_record_identity_proves_nothing() -> None:
    same = ((b"k", b"v", 1, ()),) * 64
    assert not tail_proven(same, same + same)
    assert not tail_proven(_records(0, 1), _records(0, 1))


def test_records_prove_a_drain_only_where_copies_keep_order_and_none_is_skipped() -> None:
    assert unprovable({"producer.override.enable.idempotence": "true"}) == ""
    assert unprovable({"producer.override.max.in.flight.requests.per.connection": "1"}) == ""
    assert "may reorder" in unprovable({"producer.override.max.in.flight.requests.per.connection": "5"})
    assert "skip" in unprovable({"producer.override.enable.idempotence": "true", "errors.tolerance": "all"})
