"""Tier 1: per-partition fingerprints decide healthy partitions; everything else goes exact."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from spark import fast_path
from spark.fast_path import EXACT, FAST, SideAgg
from spark.topic_checks import partition_rows
from tests.unit.spark.helpers import Record, kafka_rows, rec


def aggs(spark: SparkSession, parts: dict[int, list[Record]], start: int = 0) -> dict[int, SideAgg]:
    frame = fast_path.side_frame(kafka_rows(spark, parts, start=start), dict.fromkeys(parts, start), 0)
    return fast_path.reduce_sides([frame], 1)[0]


def test_identical_partitions_agree_wherever_the_target_starts(spark: SparkSession) -> None:
    records = {0: [rec(i) for i in range(6)], 1: [rec(10 + i) for i in range(3)]}
    src, tgt = aggs(spark, records), aggs(spark, records, start=100)
    assert src[0].records == 6 and (src[0].first, src[0].last) == (0, 5)
    assert (tgt[0].first, tgt[0].last) == (100, 105)
    decided = fast_path.decide({0: (0, 6), 1: (0, 3)}, {0: (100, 106), 1: (100, 103)}, src, tgt)
    assert {p: d.path for p, d in decided.items()} == {0: FAST, 1: FAST}


def test_every_record_fault_changes_the_fingerprint(spark: SparkSession) -> None:
    good = [rec(i) for i in range(4)]
    base = aggs(spark, {0: good})[0]
    variants = {
        "swapped": [good[1], good[0], *good[2:]],
        "value": [rec(0, value="other"), *good[1:]],
        "header": [rec(0, headers=[("h", "y")]), *good[1:]],
        "header value null": [rec(0, headers=[("h", None)]), *good[1:]],
        "timestamp": [rec(0, ts=1), *good[1:]],
        "duplicate": [good[0], good[0], *good[1:3]],
        "null key": [(None, *good[0][1:]), *good[1:]],
    }
    for name, records in variants.items():
        got = aggs(spark, {0: records})[0]
        assert (got.fp_hi, got.fp_lo) != (base.fp_hi, base.fp_lo), name


def test_null_and_empty_and_header_boundaries_are_told_apart(spark: SparkSession) -> None:
    def fp(records: list[Record]) -> tuple[int, int]:
        a = aggs(spark, {0: records})[0]
        return a.fp_hi, a.fp_lo

    assert fp([(None, "v", [], 1)]) != fp([("", "v", [], 1)])
    assert fp([("a", None, [], 1)]) != fp([(None, "a", [], 1)])
    assert fp([("k", "v", [("a", None), ("b", "c")], 1)]) != fp([("k", "v", [("a", "b"), ("c", None)], 1)])


def test_decide_names_why_a_partition_goes_exact() -> None:
    ok = SideAgg(4, 0, 3, 7, 9)
    cut = {0: (0, 4), 1: (0, 5), 2: (0, 4), 3: (0, 4), 4: (0, 4), 5: (0, 0)}
    snapshot = {0: (0, 4), 1: (0, 5), 2: (0, 3), 3: (0, 4), 5: (0, 0)}
    src = {0: ok, 1: SideAgg(4, 0, 4, 7, 9), 2: ok, 3: ok, 4: ok}
    tgt = {0: ok, 1: ok, 2: SideAgg(3, 0, 2, 1, 1), 3: SideAgg(4, 0, 3, 7, 8)}
    decided = fast_path.decide(cut, snapshot, src, tgt)
    assert decided[0].path == FAST and decided[5].path == FAST  # an empty partition is trivially healthy
    assert decided[1] == fast_path.FastPathDecision(EXACT, "source offsets not contiguous (4 records in 5 offsets)")
    assert decided[2] == fast_path.FastPathDecision(EXACT, "target holds 3 of the 4 positions of the cut")
    assert decided[3] == fast_path.FastPathDecision(EXACT, "fingerprints differ")
    assert decided[4] == fast_path.FastPathDecision(EXACT, "no such partition on the target")
    assert fast_path.decide({0: (0, 4)}, None, src, tgt)[0].path == EXACT


def test_target_window_reads_the_cut_s_positions_and_what_came_after() -> None:
    assert fast_path.target_window({0: (5, 9), 1: (0, 4), 2: (0, 1)}, {0: (0, 20), 1: (10, 12)}) == {
        0: (0, 20),
        1: (10, 12),
    }
    far = fast_path.target_window({0: (0, 4)}, {0: (0, 4 + 2 * fast_path.AFTER_CUT_READ)})
    assert far == {0: (0, 4 + fast_path.AFTER_CUT_READ)}  # bounded


def test_source_window_follows_the_target_past_the_cut_as_far_as_the_source_goes() -> None:
    cut = {0: (5, 9), 1: (0, 4), 2: (0, 3)}
    target = {0: (0, 6), 1: (10, 14), 2: (0, 3)}  # p0: 2 after the cut; p1: none; p2: none
    assert fast_path.source_window(cut, target, {0: 20, 1: 4, 2: 3}) == {0: (5, 11), 1: (0, 4), 2: (0, 3)}
    assert fast_path.source_window(cut, target, {0: 10, 1: 4, 2: 3})[0] == (5, 10)  # the source has only 1 more


def after_aggs(spark: SparkSession, records: list[Record], start: int, cut_size: int) -> SideAgg:
    frame = fast_path.side_frame(kafka_rows(spark, {0: records}, start=start), {0: start}, 0, {0: cut_size})
    return fast_path.reduce_sides([frame], 1)[0][0]


def test_records_after_the_cut_must_repeat_the_source_s_next_records(spark: SparkSession) -> None:
    """A redelivered copy of a record before the cut, after the cut's positions, goes exact."""
    source = [rec(i) for i in range(6)]  # the cut is the first 4; 4 and 5 came after it
    src = after_aggs(spark, source, 0, 4)
    assert src.records == 4 and src.after[0] == 2
    replicated = after_aggs(spark, source, 100, 4)
    redelivered = after_aggs(spark, [*source[:4], source[3], source[4]], 100, 4)  # at-least-once copy of 3
    assert (replicated.fp_hi, replicated.fp_lo) == (redelivered.fp_hi, redelivered.fp_lo)  # the cut agrees
    cut, snapshot = {0: (0, 4)}, {0: (100, 106)}
    assert fast_path.decide(cut, snapshot, {0: src}, {0: replicated})[0].path == FAST
    decided = fast_path.decide(cut, snapshot, {0: src}, {0: redelivered})[0]
    assert decided.path == EXACT and "after the cut" in decided.reason, decided
    assert fast_path.fast_row(0, cut[0], snapshot[0], 0)["beyondCut"] == 2


def test_fast_rows_carry_every_column_of_exact_rows() -> None:
    exact = partition_rows({0: (0, 4)}, {0: (0, 4)}, {}, {}, {})[0]
    fast = fast_path.fast_row(0, (2, 6), (10, 16), 0)
    assert set(exact) <= set(fast)
    assert (fast["matched"], fast["beyondCut"], fast["path"], fast["sourceCount"]) == (4, 2, "fast", 4)
    assert fast_path.position_map({0: (2, 6)}, {0: (10, 16)}, {0}) == {0: 8}


def test_identical_reads_of_several_flows_are_read_once(spark: SparkSession, monkeypatch: Any) -> None:
    """Fan-out: one source topic, three flows with the same cut: one Kafka read, three results."""
    from spark import kafka_io
    from spark.outputs import ClusterAccess

    calls: list[tuple[str, str]] = []

    def fake_read(_spark: Any, cluster: ClusterAccess, ranges: Any, isolation: str) -> Any:
        (topic,) = ranges
        calls.append((cluster.alias, topic))
        return kafka_rows(spark, {0: [rec(i) for i in range(3)]}, topic=topic)

    monkeypatch.setattr(kafka_io, "spark_read_topics", fake_read)
    k, a = ClusterAccess("k", "h:1"), ClusterAccess("a", "h:2")
    source = fast_path.SideRead(k, "events", {0: (0, 3)}, "read_uncommitted", {0: 3})
    target = fast_path.SideRead(a, "k.events", {0: (0, 3)}, "read_uncommitted", {0: 3})
    got = fast_path.aggregate(spark, [source, target, source, target, source])
    assert sorted(calls) == [("a", "k.events"), ("k", "events")]
    assert all(g == got[0] for g in got) and got[0][0].records == 3


def test_topics_of_one_cluster_share_one_relation_and_keep_their_own_results(
    spark: SparkSession, monkeypatch: Any
) -> None:
    """One Kafka source relation per cluster and isolation level; each topic still its own side."""
    from spark import kafka_io
    from spark.outputs import ClusterAccess

    calls: list[tuple[str, list[str], str]] = []

    def fake_read(_spark: Any, cluster: ClusterAccess, ranges: Any, isolation: str) -> Any:
        calls.append((cluster.alias, sorted(ranges), isolation))
        frames = [
            kafka_rows(spark, {p: [rec(i, f"{t}{i}") for i in range(lo, hi)] for p, (lo, hi) in r.items()}, t, start=5)
            for t, r in ranges.items()
        ]
        return frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])

    monkeypatch.setattr(kafka_io, "spark_read_topics", fake_read)
    k, a = ClusterAccess("k", "h:1"), ClusterAccess("a", "h:2")
    reads = [
        fast_path.SideRead(k, "clicks", {0: (5, 8)}, "read_uncommitted", {0: 3}),
        fast_path.SideRead(k, "views", {0: (5, 7), 1: (5, 5)}, "read_uncommitted", {0: 2, 1: 0}),
        fast_path.SideRead(k, "clicks", {0: (5, 9)}, "read_uncommitted", {0: 3}),  # another flow's later cut
        fast_path.SideRead(a, "k.clicks", {0: (5, 8)}, "read_committed", {0: 3}),
    ]
    got = fast_path.aggregate(spark, reads)
    assert sorted(calls) == [
        ("a", ["k.clicks"], "read_committed"),
        ("k", ["clicks"], "read_uncommitted"),
        ("k", ["clicks", "views"], "read_uncommitted"),
    ]
    alone = [fast_path.aggregate(spark, [r])[0] for r in reads]
    assert got == alone
    assert (got[0][0].records, got[1][0].records, got[2][0].after[0]) == (3, 2, 1)
    assert got[0][0].fp_lo != got[1][0].fp_lo and 1 not in got[1]


def test_the_record_hash_runs_in_whole_stage_codegen(spark: SparkSession) -> None:
    # One expression Spark cannot generate code for (a lambda's `transform` did) keeps the whole
    # per-record projection out of whole-stage codegen: the fast path cost 1.37x a bare scan at 10M
    # records on pyspark 4.2.0 (bench/results/validation-20261126.md). Rows from a range, so the
    # optimizer cannot fold the projection into local rows at planning time.
    from pyspark.sql import functions as F

    n = F.col("id")
    records = spark.range(3).select(
        n.cast("string").cast("binary").alias("key"),
        n.cast("string").cast("binary").alias("value"),
        F.lit("t").alias("topic"),
        F.lit(0).alias("partition"),
        n.alias("offset"),
        F.timestamp_millis(n).alias("timestamp"),
        F.lit(0).alias("timestampType"),
        F.array(F.struct(n.cast("string").alias("key"), F.lit(None).cast("binary").alias("value"))).alias("headers"),
    )
    frame = fast_path.side_frame(records, {0: 0}, 0, {0: 2})
    plan = frame._jdf.queryExecution().executedPlan().toString()
    assert plan.startswith("*(1) Project"), plan  # `*`: in a whole-stage codegen stage
