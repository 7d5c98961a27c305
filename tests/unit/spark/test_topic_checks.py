"""The verdicts of one topic, built from summarised findings (pure: no Spark session)."""

from __future__ import annotations

from spark.checks import FindingSummary
from spark.report import Status
from spark.topic_checks import checkpoint_check, offset_sync_check, partition_rows, record_checks


def test_rows_cover_source_and_target_partitions_and_lag_counts_unreplicated_records() -> None:
    summary = {0: {"not_replicated": FindingSummary(3, [{"sourceOffset": 7}])}}
    rows = partition_rows({0: (0, 10)}, {0: (0, 7), 1: (0, 0)}, {0: {"source_records": 10}}, summary, {0: 1})
    assert [r["partition"] for r in rows] == [0, 1]
    assert rows[0]["lag"] == 3 and rows[0]["sourceRecords"] == 10 and rows[0]["notReplicated"] == 3
    assert rows[1]["sourceRange"] is None and rows[1]["targetRange"] == [0, 0]


def test_missing_partition_fails_completeness_and_duplicates_only_warn_at_least_once() -> None:
    rows = partition_rows({0: (0, 2)}, {0: (0, 3)}, {}, {0: {"duplicate": FindingSummary(1, [])}}, {})
    checks = {c.name: c for c in record_checks(rows, [1], exactly_once=False)}
    assert checks["completeness"].status is Status.FAIL
    assert checks["completeness"].detail.startswith("target lacks partition(s) [1]; no source record(s) missing")
    assert checks["duplicates"].status is Status.WARN
    assert checks["duplicates"].detail == "1 duplicate(s) (at-least-once: allowed)"
    assert checks["catch_up"].status is Status.PASS


def test_offset_sync_and_checkpoint_verdicts() -> None:
    assert offset_sync_check({}, n_src=0).detail == "empty topic, nothing to verify"
    assert offset_sync_check({}, n_src=5).status is Status.WARN
    bad = {"mismatch": FindingSummary(1, [{"part": 0, "u": 4, "d": 9}]), "ok": FindingSummary(2, [])}
    assert offset_sync_check(bad, n_src=5).detail == (
        "1 of 3 offset sync(s) point at a different record (e.g. p0 src@4->tgt@9 mismatch)"
    )
    assert checkpoint_check({}).status is Status.SKIP
    assert checkpoint_check({"ok": FindingSummary(4, [])}).status is Status.PASS
