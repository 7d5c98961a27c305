"""Drill figures: loss, re-read and its bound, from the keys each side saw."""

from __future__ import annotations

import pytest

from components.ops.drill_figures import DrillReport, DrillSettings, compute_figures, max_in_window, render_report


def k(i: int) -> bytes:
    return f"drill-x-{i:09d}".encode()


@pytest.mark.parametrize(
    ("times", "window", "expected"),
    [([], 5, 0), ([0.0], 5, 1), ([0, 1, 2, 10, 11], 5, 3), ([3, 0, 5, 5.5], 5, 3), ([0, 5], 5, 2)],
)
def test_max_in_window(times: list[float], window: float, expected: int) -> None:
    assert max_in_window(times, window) == expected


def figures(**overrides: object) -> object:
    acked = {k(i): i / 100 for i in range(1000)}  # 100 records/s over 10 s
    args: dict[str, object] = {
        "acked": acked,
        "sent": 1010,
        "consumed_on_source": [k(i) for i in range(400)],
        "remote": [k(i) for i in range(950)] + [k(5)],
        "consumed_on_dr": [k(i) for i in range(380, 950)],
        "checkpoint_interval_s": 5.0,
        "offset_lag_max": 100,
        "partitions": 3,
        "time_to_first_record_s": 7.5,
        "failover_s": 5.2,
    }
    args.update(overrides)
    return compute_figures(**args)  # type: ignore[arg-type]


def test_figures_of_a_clean_failover() -> None:
    f = figures()
    assert (f.produced, f.unacknowledged, f.replicated, f.not_replicated) == (1000, 10, 950, 50)
    assert (f.consumed_on_source, f.consumed_on_dr, f.lost, f.reread) == (400, 570, 0, 20)
    assert f.duplicates_in_remote_topic == 1
    assert f.produced_per_checkpoint_interval == 501 and f.reread_bound == 801
    assert f.ok


def test_a_skipped_record_is_lost_and_named() -> None:
    f = figures(consumed_on_dr=[k(i) for i in range(402, 950)])
    assert (f.lost, f.lost_sample) == (2, ("drill-x-000000400", "drill-x-000000401"))
    assert not f.ok


def test_re_read_beyond_the_bound_fails_the_drill() -> None:
    f = figures(consumed_on_dr=[k(i) for i in range(950)])
    assert f.reread == 400 and f.reread_bound == 801 and f.ok
    tight = figures(consumed_on_dr=[k(i) for i in range(950)], checkpoint_interval_s=1.0)
    assert tight.reread_bound == 101 + 300 and tight.reread == 400 and tight.ok
    tighter = figures(consumed_on_dr=[k(i) for i in range(950)], checkpoint_interval_s=0.5, offset_lag_max=10)
    assert tighter.reread_bound == 51 + 30 and not tighter.ok


def test_report_prints_every_figure() -> None:
    r = DrillReport("s", "primary->dr", "primary", "dr", "orders", "primary.orders", "drill-x", "KILL", figures())
    text = render_report(r)
    for needle in (
        "produced (acknowledged by primary)",
        "LOST (replicated, never consumed)",
        "bound 801 = 501 produced in one checkpoint interval (5s) + 3 x offset.lag.max 100",
        "time from primary stopping to the first record consumed on dr: 7.5s (failover command 5.2s)",
        "result: OK",
    ):
        assert needle in text
    assert r.to_dict()["ok"] is True


def test_settings_are_validated_together() -> None:
    assert DrillSettings().problems() == []
    problems = DrillSettings(records=10, consume_fraction=0.9, fail_at=0.5, signal="HUP").problems()
    assert len(problems) == 3
