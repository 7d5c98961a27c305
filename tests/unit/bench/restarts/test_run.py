"""bench/restarts/run.py: the gap and latency figures from arrival times (no Kafka needed)."""

from __future__ import annotations

from bench.restarts.run import gaps, latency


def test_the_longest_gap_counts_from_the_last_arrival_before_the_window_and_to_its_end() -> None:
    # (arrival, sent, partition, sequence)
    arrivals = [(9.0, 8.9, 0, 0), (10.5, 10.4, 1, 1), (11.0, 10.9, 0, 2), (17.0, 11.0, 1, 3), (17.5, 17.4, 0, 4)]
    any_gap, worst = gaps(arrivals, start=10.0, end=18.0)
    assert any_gap == 6.0  # 11.0 -> 17.0
    assert worst == 6.5  # partition 1: 10.5 -> 17.0; partition 0: 11.0 -> 17.5
    assert gaps([(9.0, 8.9, 0, 0)], start=10.0, end=14.0) == (5.0, 5.0)  # nothing arrived: all of it


def test_latency_counts_the_records_sent_inside_the_window() -> None:
    # The first record was sent at 9.9 s, before the window: not counted.
    arrivals = [(10.0 + i, 10.0 + i - 0.1, 0, i) for i in range(100)] + [(200.0, 150.0, 0, 100)]
    figures = latency(arrivals, start=10.0, end=160.0)
    assert figures["records"] == 100 and figures["p50_ms"] == 100 and figures["max_ms"] == 50000
    assert latency(arrivals, start=500.0, end=600.0) == {"records": 0}
