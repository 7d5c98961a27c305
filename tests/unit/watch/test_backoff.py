"""The auto-restart back-off planner: when to restart, when to give up, when to forget."""

from __future__ import annotations

import pytest

from components.watch.backoff import Backoff, RestartAction, RestartTrack, plan

B = Backoff()  # first 5 s, unit 30 s, cap 30 min, stable 10 min


def test_delays_grow_as_n_squared_plus_n_units_and_are_capped() -> None:
    assert [B.delay(n) for n in range(9)] == [5, 60, 180, 360, 600, 900, 1260, 1680, 1800]
    assert B.delay(50) == 1800


def run(
    events: list[tuple[float, bool]], max_restarts: int | None = None, backoff: Backoff = B
) -> list[tuple[float, RestartAction]]:
    """(time, action) of every non-trivial decision over a series of status reads."""
    track, out = RestartTrack(), []
    for now, failed in events:
        decision = plan(track, failed=failed, now=now, max_restarts=max_restarts, backoff=backoff)
        track = decision.track
        if decision.action not in (RestartAction.NOTHING, RestartAction.WAIT):
            out.append((now, decision.action))
    return out


def test_first_restart_comes_within_the_first_step_then_the_steps_grow() -> None:
    reads = [(t, True) for t in range(0, 400, 1)]
    # Failure seen at 0: restart at 5; seen again at 6: next at 6+60; seen at 67: next at 67+180.
    assert run(reads) == [(5, RestartAction.RESTART), (66, RestartAction.RESTART), (247, RestartAction.RESTART)]


def test_waits_report_when_the_next_restart_is_due() -> None:
    decision = plan(RestartTrack(), failed=True, now=100.0, max_restarts=None, backoff=B)
    assert decision.action is RestartAction.WAIT and decision.due == 105.0


def test_gives_up_after_max_restarts_once_and_stays_quiet() -> None:
    fast = Backoff(first_s=1, unit_s=1)
    reads = [(t, True) for t in range(0, 60)]
    assert run(reads, max_restarts=2, backoff=fast) == [
        (1, RestartAction.RESTART),
        (4, RestartAction.RESTART),
        (5, RestartAction.GIVE_UP),
    ]


def test_count_resets_only_after_a_stable_period() -> None:
    fast = Backoff(first_s=1, unit_s=1, stable_s=10)
    reads = [(0, True), (1, True)] + [(t, False) for t in range(2, 11)] + [(11, True), (12, True)]
    # Healthy 2..10 is 8 s < 10: the second failure is the second restart (after 2 units).
    track = RestartTrack()
    for now, failed in reads:
        track = plan(track, failed=failed, now=now, max_restarts=None, backoff=fast).track
    assert track.restarts == 1 and track.failed_since == 11
    reads = [(0, True), (1, True)] + [(t, False) for t in range(2, 14)] + [(14, True), (15, True)]
    assert run(reads, backoff=fast) == [
        (1, RestartAction.RESTART),
        (12, RestartAction.RESET),
        (15, RestartAction.RESTART),
    ]


def test_a_gave_up_connector_that_recovers_by_hand_is_watched_again_after_the_stable_period() -> None:
    fast = Backoff(first_s=1, unit_s=1, stable_s=5)
    reads = [(t, True) for t in range(0, 3)] + [(t, False) for t in range(3, 9)] + [(9, True), (10, True)]
    assert run(reads, max_restarts=1, backoff=fast) == [
        (1, RestartAction.RESTART),
        (2, RestartAction.GIVE_UP),
        (8, RestartAction.RESET),
        (10, RestartAction.RESTART),
    ]


@pytest.mark.parametrize("limit", [1, 3, 5])
def test_never_more_restarts_than_the_limit(limit: int) -> None:
    fast = Backoff(first_s=0, unit_s=0.01, cap_s=0.5)
    reads = [(t / 10, True) for t in range(0, 2000)]
    assert sum(1 for _, a in run(reads, max_restarts=limit, backoff=fast) if a is RestartAction.RESTART) == limit
