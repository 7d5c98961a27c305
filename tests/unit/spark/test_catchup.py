"""The catch-up wait's decision (pure): caught up, settled (records lost), quiet, or keep waiting."""

from __future__ import annotations

import pytest

from spark.catchup import Ending, QuietClock, partition_ending, poll_once, weakest

CUT = (0, 10)  # the last record before the cut is at offset 9


@pytest.mark.parametrize(
    ("lag", "consumed", "quiet_for", "observable", "ending"),
    [
        (0, None, 0.0, True, Ending.CAUGHT_UP),  # provably there: no need to wait for quiet
        (1, 9, 5.0, True, Ending.SETTLED),  # MM2 processed offset 9 and the target stopped: lost
        (1, 12, 6.0, True, Ending.SETTLED),  # consumed past the cut
        (1, 9, 4.9, True, None),  # the target may still be moving
        (1, 8, 60.0, True, None),  # MM2 has not consumed the last record before the cut: late, not lost
        (1, None, 60.0, True, None),  # no committed offset for the partition yet
        (1, None, 5.0, False, Ending.QUIET),  # progress unreadable: the quiet target is all there is
        (1, None, 1.0, False, None),
    ],
)
def test_partition_ending(
    lag: int, consumed: int | None, quiet_for: float, observable: bool, ending: Ending | None
) -> None:
    assert partition_ending(CUT, lag, consumed, quiet_for, 5.0, observable) is ending


def test_the_wait_ends_on_its_weakest_partition() -> None:
    assert weakest([Ending.CAUGHT_UP, Ending.SETTLED]) is Ending.SETTLED
    assert weakest([Ending.SETTLED, Ending.QUIET, Ending.CAUGHT_UP]) is Ending.QUIET
    assert weakest([]) is Ending.CAUGHT_UP


def test_quiet_clock_restarts_when_an_end_offset_moves() -> None:
    clock = QuietClock()
    assert clock.observe(100.0, {("t", 0): 5, ("t", 1): None}) == {("t", 0): 0.0, ("t", 1): 0.0}
    assert clock.observe(103.0, {("t", 0): 5, ("t", 1): None}) == {("t", 0): 3.0, ("t", 1): 3.0}
    assert clock.observe(104.0, {("t", 0): 6, ("t", 1): 1}) == {("t", 0): 0.0, ("t", 1): 0.0}
    assert clock.observe(110.0, {("t", 0): 6, ("t", 1): 1}) == {("t", 0): 6.0, ("t", 1): 6.0}


def test_one_lost_record_settles_instead_of_waiting_for_the_timeout() -> None:
    """8 partitions, the first record of p3 deleted on the target (the benchmark's fault)."""
    cuts = {"orders": {p: (0, 100) for p in range(8)}}
    targets = {"orders": {p: ((1, 100) if p == 3 else (0, 100)) for p in range(8)}}
    quiet = {("orders", p): 6.0 for p in range(8)}
    consumed = {("orders", p): 99 for p in range(8)}
    lag, endings = poll_once(cuts, targets, {}, consumed, quiet, 5.0)
    assert endings["orders"][3] is Ending.SETTLED and len(endings["orders"]) == 8
    assert lag["orders"][3] == 0  # consumed by MM2: the record is missing, not late
    # Without MM2's progress the same partition ends quiet, and its count stays as lag (unknown).
    lag, endings = poll_once(cuts, targets, {}, None, quiet, 5.0)
    assert endings["orders"][3] is Ending.QUIET and lag["orders"][3] == 1
    # MM2 still behind on p3: it keeps waiting (no ending), the others are caught up.
    lag, endings = poll_once(cuts, targets, {}, {**consumed, ("orders", 3): 50}, quiet, 5.0)
    assert 3 not in endings["orders"] and lag["orders"][3] == 1 and len(endings["orders"]) == 7


def test_an_offset_sync_at_the_cut_needs_no_quiet_window() -> None:
    cuts = {"orders": {0: (0, 100)}}
    targets = {"orders": {0: (0, 99)}}
    _, endings = poll_once(cuts, targets, {("orders", 0): (99, 98)}, {}, {("orders", 0): 0.0}, 5.0)
    assert endings == {"orders": {0: Ending.CAUGHT_UP}}
    _, endings = poll_once(cuts, {"orders": None}, {}, {("orders", 0): 99}, {("orders", 0): 9.0}, 5.0)
    assert endings == {"orders": {0: Ending.SETTLED}}  # MM2 consumed it all, yet no remote topic: lost
