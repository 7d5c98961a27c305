"""Each record-level check on small inline partitions: one fault at a time, nothing else reported."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession

from spark import checks
from tests.unit.spark.helpers import Record, projection, rec

SRC: dict[int, list[Record]] = {0: [rec(i) for i in range(6)], 1: [rec(i) for i in range(10, 14)]}


def findings(
    spark: SparkSession,
    target: dict[int, list[Record]],
    caught_up: dict[int, bool] | None = None,
    source: dict[int, list[Record]] | None = None,
    source_start: dict[int, int] | None = None,
) -> dict[str, list[tuple[Any, ...]]]:
    matched = checks.match_records(projection(spark, source or SRC), projection(spark, target))
    df = (
        checks.explain_unmatched(matched, source_start or {0: 0, 1: 0}, caught_up or {0: True, 1: True})
        .unionByName(checks.order_violations(matched))
        .unionByName(checks.duplicates(matched))
    )
    out: dict[str, list[tuple[Any, ...]]] = {}
    for r in df.collect():
        out.setdefault(r["finding"], []).append((r["part"], r["so"], r["to"], list(r["fields"])))
    return {k: sorted(v) for k, v in out.items()}


def copy() -> dict[int, list[Record]]:
    return {p: list(rs) for p, rs in SRC.items()}


def test_exact_copy_has_no_findings(spark: SparkSession) -> None:
    assert findings(spark, copy()) == {}


def test_counts_per_partition(spark: SparkSession) -> None:
    tgt = copy()
    tgt[0].insert(3, tgt[0][2])
    matched = checks.match_records(projection(spark, SRC), projection(spark, tgt))
    rows = {r["part"]: r.asDict() for r in checks.kind_counts(matched).collect()}
    assert rows[0] == {
        "part": 0,
        "source_records": 6,
        "target_records": 7,
        "matched": 6,
        "missing": 0,
        "duplicate": 1,
        "extra": 0,
    }
    assert rows[1]["matched"] == 4


def test_missing_record(spark: SparkSession) -> None:
    tgt = copy()
    del tgt[0][2]
    assert findings(spark, tgt) == {"missing": [(0, 2, None, [])]}


def test_modified_value(spark: SparkSession) -> None:
    tgt = copy()
    tgt[0][3] = rec(3, value="tampered")
    assert findings(spark, tgt) == {"modified": [(0, 3, 3, ["value"])]}


def test_changed_header(spark: SparkSession) -> None:
    tgt = copy()
    tgt[1][1] = rec(11, headers=[("h", "other")])
    assert findings(spark, tgt) == {"modified": [(1, 1, 1, ["headers"])]}


def test_header_order_and_null_value_matter(spark: SparkSession) -> None:
    src = {0: [rec(0, headers=[("a", "1"), ("b", "2")]), rec(1, headers=[("a", None)])]}
    tgt = {0: [rec(0, headers=[("b", "2"), ("a", "1")]), rec(1, headers=[("a", "")])]}
    assert findings(spark, tgt, source=src, caught_up={0: True}) == {
        "modified": [(0, 0, 0, ["headers"]), (0, 1, 1, ["headers"])]
    }


def test_changed_timestamp_and_key(spark: SparkSession) -> None:
    tgt = copy()
    tgt[0][1] = rec(1, ts=42)
    _k, v, h, ts = tgt[0][4]
    tgt[0][4] = ("other", v, h, ts)
    assert findings(spark, tgt) == {"modified": [(0, 1, 1, ["timestamp"]), (0, 4, 4, ["key"])]}


def test_duplicate(spark: SparkSession) -> None:
    tgt = copy()
    tgt[0].insert(3, tgt[0][2])  # redelivered right after itself
    assert findings(spark, tgt) == {"duplicate": [(0, None, 3, [])]}


def test_a_copy_after_the_cut_is_a_duplicate_and_new_records_are_beyond_it(spark: SparkSession) -> None:
    """What the fast path defers when the records after the cut do not repeat the source's next
    ones: a redelivered copy of a record before the cut, then a record produced after the cut."""
    tgt = copy()
    tgt[0] += [tgt[0][5], rec(6)]  # offsets 6 and 7: after the cut's six positions
    assert findings(spark, tgt) == {"duplicate": [(0, None, 6, [])], "beyond_cut": [(0, None, 7, [])]}


def test_identical_source_records_are_not_duplicates(spark: SparkSession) -> None:
    src = {0: [rec(0), rec(0), rec(1)]}
    assert findings(spark, {0: list(src[0])}, source=src, caught_up={0: True}) == {}
    assert findings(spark, {0: [rec(0), rec(1)]}, source=src, caught_up={0: True}) == {"missing": [(0, 1, None, [])]}


def test_records_repeated_more_than_few_times_pair_by_occurrence(spark: SparkSession) -> None:
    """Past FEW occurrences per side a group is paired from its offset lists, beside the bounded ones."""
    many = checks.FEW + 2
    src = {0: [rec(0)] * many + [rec(1), rec(2), rec(2)], 1: [rec(7)] * many}
    tgt = {0: [rec(0)] * many + [rec(1), rec(0), rec(2), rec(2)], 1: [rec(7)] * (many - 1)}
    assert findings(spark, tgt, source=src, caught_up={0: True, 1: True}) == {
        "duplicate": [(0, None, many + 1, [])],
        "missing": [(1, many - 1, None, [])],
    }
    matched = checks.match_records(projection(spark, src), projection(spark, tgt))
    pairs = sorted((r["part"], r["so"], r["to"]) for r in matched.filter("kind = 'matched'").collect())
    assert pairs == [(0, o, o) for o in range(many + 1)] + [(0, many + 1, many + 2), (0, many + 2, many + 3)] + [
        (1, o, o) for o in range(many - 1)
    ]


def test_swapped_order(spark: SparkSession) -> None:
    tgt = copy()
    tgt[0][2], tgt[0][3] = tgt[0][3], tgt[0][2]
    assert findings(spark, tgt) == {"out_of_order": [(0, 2, 3, ["after source offset 3"])]}


def test_moved_partition(spark: SparkSession) -> None:
    tgt = copy()
    moved = tgt[0].pop(2)
    tgt[1].insert(2, moved)
    assert findings(spark, tgt) == {"moved": [(0, 2, 2, ["partition 1"])]}


def test_tail_not_replicated_is_lag_only_when_not_caught_up(spark: SparkSession) -> None:
    tgt = copy()
    del tgt[0][4:]
    assert findings(spark, tgt, caught_up={0: False, 1: True}) == {
        "not_replicated": [(0, 4, None, []), (0, 5, None, [])]
    }
    assert findings(spark, tgt)["missing"] == [(0, 4, None, []), (0, 5, None, [])]


def test_records_after_the_cut_and_deleted_prefix_are_ignored(spark: SparkSession) -> None:
    tgt = copy()
    tgt[0].append(rec(99))  # replicated after the stage captured the cut
    tgt[1].insert(0, rec(98))  # the source deleted it since (retention)
    assert findings(spark, tgt, source_start={0: 0, 1: 7}) == {
        "beyond_cut": [(0, None, 6, [])],
        "prefix": [(1, None, 0, [])],
    }
    # With nothing deleted on the source, a leading extra is unexpected.
    assert findings(spark, tgt)["unexpected"] == [(1, None, 0, [])]


def test_unexpected_record_in_the_middle(spark: SparkSession) -> None:
    tgt = copy()
    tgt[0].insert(3, rec(77))
    assert findings(spark, tgt) == {"unexpected": [(0, None, 3, [])]}


def test_summaries_are_bounded(spark: SparkSession) -> None:
    tgt = {0: [], 1: list(SRC[1])}
    src = {0: [rec(i) for i in range(20)], 1: SRC[1]}
    matched = checks.match_records(projection(spark, src), projection(spark, tgt))
    summary = checks.summarize_findings(checks.explain_unmatched(matched, {0: 0, 1: 0}, {0: True, 1: True}))
    assert summary[0]["missing"].count == 20
    assert [e["sourceOffset"] for e in summary[0]["missing"].examples] == [0, 1, 2, 3, 4]


def _syncs(spark: SparkSession, rows: list[tuple[int, int, int]]) -> Any:
    return spark.createDataFrame(rows, "partition int, upstream_offset long, downstream_offset long")


def test_offset_syncs(spark: SparkSession) -> None:
    tgt = copy()
    tgt[0].insert(1, rec(1))  # duplicate: later downstream offsets shift by one
    matched = checks.match_records(projection(spark, SRC), projection(spark, tgt))
    syncs = _syncs(spark, [(0, 0, 0), (0, 5, 6), (0, 3, 3), (1, 3, 3), (1, 9, 9), (0, 5, 60)])
    res = checks.offset_sync_results(matched, syncs, {0: (0, 6), 1: (0, 4)}, {0: (0, 7), 1: (0, 4)})
    got = sorted((r["part"], r["u"], r["d"], r["status"]) for r in res.collect())
    assert got == [
        (0, 0, 0, "ok"),
        (0, 3, 3, "mismatch"),  # target offset 3 holds source record 2
        (0, 5, 6, "ok"),
        (0, 5, 60, "skipped_after_snapshot"),
        (1, 3, 3, "ok"),
        (1, 9, 9, "skipped_after_cut"),
    ]


def _checkpoints(spark: SparkSession, rows: list[tuple[str, int, int, int, int]]) -> Any:
    return spark.createDataFrame(
        rows, "group string, partition int, upstream_offset long, downstream_offset long, ckpt_offset long"
    )


@pytest.mark.parametrize(
    ("upstream", "downstream", "status"),
    [
        (3, 3, "ok"),  # exact
        (3, 1, "ok"),  # behind: re-reads, allowed
        (3, 4, "ahead"),  # would skip source record 3 on failover
        (6, 6, "ok"),  # at the cut: the log end bounds it
        (6, 7, "beyond_log_end"),
        (0, 0, "ok"),
    ],
)
def test_checkpoint_never_ahead(spark: SparkSession, upstream: int, downstream: int, status: str) -> None:
    matched = checks.match_records(projection(spark, SRC), projection(spark, copy()))
    ck = _checkpoints(spark, [("g", 0, upstream, downstream, 0)])
    res = checks.checkpoint_results(
        matched, ck, cut={0: (0, 6), 1: (0, 4)}, snapshot_end={0: 6, 1: 4}, log_end={0: 6, 1: 4}
    )
    assert [r["status"] for r in res.collect()] == [status]


def test_checkpoint_exact_uses_first_replicated_record_at_or_after_upstream(spark: SparkSession) -> None:
    tgt = copy()
    del tgt[0][2]  # source record 2 missing: exact(2) is where source record 3 landed (2)
    matched = checks.match_records(projection(spark, SRC), projection(spark, tgt))
    ck = _checkpoints(spark, [("g", 0, 2, 2, 0), ("g2", 0, 2, 3, 0)])
    res = {
        r["group"]: (r["exact"], r["status"])
        for r in checks.checkpoint_results(matched, ck, cut={0: (0, 6)}, snapshot_end={0: 5}, log_end={0: 5}).collect()
    }
    assert res == {"g": (2, "ok"), "g2": (2, "ahead")}


def test_checkpoint_regression(spark: SparkSession) -> None:
    matched = checks.match_records(projection(spark, SRC), projection(spark, copy()))
    ck = _checkpoints(spark, [("g", 0, 4, 4, 0), ("g", 0, 5, 2, 1), ("h", 0, 4, 4, 2), ("h", 0, 1, 1, 3)])
    res = sorted(
        (r["group"], r["ckpt_offset"], r["status"])
        for r in checks.checkpoint_results(matched, ck, cut={0: (0, 6)}, snapshot_end={0: 6}, log_end={0: 6}).collect()
    )
    # g went back without an upstream rewind; h's upstream group rewound, so its checkpoint may too.
    assert res == [("g", 0, "ok"), ("g", 1, "regressed"), ("h", 2, "ok"), ("h", 3, "ok")]


def test_offset_syncs_on_fast_partitions_follow_the_position_shift(spark: SparkSession) -> None:
    # Partition 0 healthy with target = source + 10; no exact pairing needed (matched is None).
    syncs = _syncs(spark, [(0, 0, 10), (0, 3, 13), (0, 4, 15), (0, 9, 19), (0, 2, 5)])
    res = checks.offset_sync_results(None, syncs, {0: (0, 6)}, {0: (10, 16)}, shift={0: 10})
    got = sorted((r["u"], r["d"], r["status"]) for r in res.collect())
    assert got == [
        (0, 10, "ok"),
        (2, 5, "skipped_target_deleted"),
        (3, 13, "ok"),
        (4, 15, "mismatch"),
        (9, 19, "skipped_after_cut"),
    ]


@pytest.mark.parametrize(
    ("upstream", "downstream", "status"),
    [(3, 13, "ok"), (3, 11, "ok"), (3, 14, "ahead"), (0, 10, "ok"), (6, 16, "ok"), (6, 17, "beyond_log_end")],
)
def test_checkpoint_on_fast_partitions(spark: SparkSession, upstream: int, downstream: int, status: str) -> None:
    ck = _checkpoints(spark, [("g", 0, upstream, downstream, 0)])
    res = checks.checkpoint_results(None, ck, cut={0: (0, 6)}, snapshot_end={0: 16}, log_end={0: 16}, shift={0: 10})
    assert [r["status"] for r in res.collect()] == [status]


def test_checkpoints_mix_fast_and_exact_partitions(spark: SparkSession) -> None:
    tgt = copy()
    del tgt[1][1]  # partition 1 goes exact: exact(1) is where source record 2 landed (1)
    matched = checks.match_records(projection(spark, {1: SRC[1]}), projection(spark, {1: tgt[1]}))
    ck = _checkpoints(spark, [("g", 0, 3, 3, 0), ("g", 1, 1, 1, 1), ("g", 1, 1, 2, 2)])
    res = checks.checkpoint_results(
        matched, ck, cut={0: (0, 6), 1: (0, 4)}, snapshot_end={0: 6, 1: 3}, log_end={0: 6, 1: 3}, shift={0: 0}
    )
    got = sorted((r["part"], r["D"], r["exact"], r["status"]) for r in res.collect())
    assert got == [(0, 3, 3, "ok"), (1, 1, 1, "ok"), (1, 2, 1, "ahead")]
