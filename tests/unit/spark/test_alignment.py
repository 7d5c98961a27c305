"""Alignment narrows the exact matching to the region where the sides differ, with the same verdicts."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark import alignment, flow_run, flow_validation, kafka_io
from spark.alignment import Aligned
from spark.checks import union_all
from spark.fast_path import SideAgg
from spark.flow_run import InternalTopics
from spark.outputs import ClusterAccess, ValidationScope
from spark.report import Status
from tests.unit.spark.helpers import Record, kafka_rows, rec
from tests.unit.spark.test_flow_checks import FLOW

# --- pure -----------------------------------------------------------------------------------------


def test_leading_blocks_agree_until_the_first_that_differs() -> None:
    src = {0: (4, 1, 2), 1: (4, 3, 4), 2: (4, 5, 6), 3: (2, 7, 8)}
    assert alignment.agreeing(src, dict(src)) == 14
    assert alignment.agreeing(src, {**src, 1: (4, 3, 5)}) == 4
    assert alignment.agreeing(src, {**src, 0: (3, 1, 2)}) == 0
    assert alignment.agreeing(src, {0: src[0]}) == 4


def test_the_region_lies_between_the_aligned_records_and_is_kept_only_when_small() -> None:
    # One record lost at the start of the target: nothing agrees from the start, all but it from the end.
    assert alignment.region((0, 100), (1, 100), 0, 99) == Aligned((0, 1), (1, 1), 0, 99)
    # Both counts over the shorter side: the trailing count gives way.
    assert alignment.region((0, 100), (0, 100), 60, 60) == Aligned((60, 60), (60, 60), 60, 40)
    # A difference in the middle.
    assert alignment.region((10, 110), (0, 100), 48, 48) == Aligned((58, 62), (48, 52), 48, 48)
    # Less than half of the shorter side aligned: matching it whole costs about the same.
    assert alignment.region((0, 100), (0, 100), 20, 20) is None


def test_records_around_the_region_pair_at_the_start_and_at_the_end() -> None:
    a = Aligned((58, 62), (48, 52), 48, 48)
    assert a.runs((10, 110), (0, 100)) == [(10, 58, -10), (62, 110, -10)]
    assert Aligned((0, 1), (1, 1), 0, 99).runs((0, 100), (1, 100)) == [(1, 100, 0)]


def test_only_big_contiguous_partitions_with_a_target_no_longer_than_the_cut_are_aligned() -> None:
    n = alignment.MIN_RECORDS
    ok_src, ok_tgt = SideAgg(n, 0, n - 1, 1, 2), SideAgg(n - 1, 1, n - 1, 3, 4)
    assert alignment.eligible((0, n), (1, n), ok_src, ok_tgt)
    assert not alignment.eligible((0, n), (1, n), SideAgg(n - 5, 0, n - 1, 1, 2), ok_tgt)  # markers on the source
    assert not alignment.eligible((0, n), (0, n + 1), ok_src, SideAgg(n, 0, n - 1, 3, 4, (1, 5, 6)))  # longer
    assert not alignment.eligible((0, n), (0, n - 1), ok_src, SideAgg(n - 3, 0, n - 2, 3, 4))  # target gaps
    assert not alignment.eligible((0, 10), (1, 10), SideAgg(10, 0, 9, 1, 2), SideAgg(9, 1, 9, 3, 4))  # small


def test_counts_take_the_aligned_records_as_matched() -> None:
    counts: dict[int, dict[str, Any]] = {3: {"part": 3, "source_records": 1, "target_records": 0, "matched": 0}}
    alignment.add_outside(counts, {3: Aligned((0, 1), (1, 1), 0, 99), 4: Aligned((5, 5), (5, 5), 5, 0)})
    assert (counts[3]["source_records"], counts[3]["target_records"], counts[3]["matched"]) == (100, 99, 99)
    assert counts[4]["matched"] == 5
    assert not alignment.has_surplus(counts, [3, 4])
    assert alignment.has_surplus({3: {"duplicate": 0, "extra": 1}}, [3])


# --- through the exact tier, against whole-partition matching ----------------------------------

N = 64  # records per partition; blocks of 4 below


class FakeKafka:
    """Inline partitions served through kafka_io's readers: {(alias, topic): {partition: (first offset, records)}}."""

    def __init__(self, spark: SparkSession, data: dict[tuple[str, str], dict[int, tuple[int, list[Record]]]]) -> None:
        self.spark, self.data = spark, data
        self.reads: list[tuple[str, str, dict[int, tuple[int, int]]]] = []

    def read(self, alias: str, topic: str, ranges: Any) -> DataFrame:
        self.reads.append((alias, topic, dict(ranges)))
        frames = []
        for p, (lo, hi) in ranges.items():
            first, records = self.data[(alias, topic)][p]
            frames.append(kafka_rows(self.spark, {p: records[lo - first : hi - first]}, topic, start=lo))
        return union_all(frames)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def spark_read(_s: Any, cluster: ClusterAccess, topic: str, ranges: Any, *_a: Any, **_k: Any) -> DataFrame:
            return self.read(cluster.alias, topic, ranges)

        def spark_read_topics(_s: Any, cluster: ClusterAccess, ranges: Any, *_a: Any, **_k: Any) -> DataFrame:
            return union_all([self.read(cluster.alias, t, r) for t, r in ranges.items()])

        def watermarks(cluster: ClusterAccess, topic: str, partitions: int, *_a: Any) -> dict[int, tuple[int, int]]:
            parts = self.data[(cluster.alias, topic)]
            return {p: (first, first + len(records)) for p, (first, records) in parts.items()}

        monkeypatch.setattr(kafka_io, "spark_read", spark_read)
        monkeypatch.setattr(kafka_io, "spark_read_topics", spark_read_topics)
        monkeypatch.setattr(kafka_io, "watermarks", watermarks)
        monkeypatch.setattr(kafka_io, "list_topics", lambda cluster: {"primary.orders": 2})


def _validate(spark: SparkSession, syncs: Any = None, behind: int = 0) -> Any:
    """The topic report of the flow the fake Kafka holds; `behind`: partition 0's lag."""
    run = flow_run.FlowRun(
        FLOW,
        ValidationScope({a: ClusterAccess(a, "127.0.0.1:1") for a in ("primary", "dr")}, (FLOW,)),
        {"primary": {"orders": 2}},
    )
    run.snapshot = flow_validation.target_ranges(run)
    flow_validation.run_fast_path(spark, [run])
    lag = {p: behind if p == 0 else 0 for p in run.cut["orders"]}
    return flow_validation.validate_topic(spark, run, "orders", lag, InternalTopics(syncs=syncs), set())


def _both_ways(
    spark: SparkSession,
    monkeypatch: pytest.MonkeyPatch,
    target: tuple[int, list[Record]],
    syncs: Any = None,
    behind: int = 0,
) -> tuple[Any, Any, FakeKafka]:
    """Partition 0: N source records from offset 0 against `target` (first offset, records); partition
    1 healthy. The topic report matched whole, then aligned (blocks of 4)."""
    source = [rec(i) for i in range(N)]
    healthy = [rec(1000 + i) for i in range(8)]
    fake = FakeKafka(
        spark,
        {
            ("primary", "orders"): {0: (0, source), 1: (0, healthy)},
            ("dr", "primary.orders"): {0: target, 1: (0, healthy)},
        },
    )
    fake.install(monkeypatch)
    whole = _validate(spark, syncs, behind)
    spark.conf.set("spark.mm2.validate.alignBlock", "4")
    spark.conf.set("spark.mm2.validate.alignMinRecords", "16")
    fake.reads.clear()
    try:
        aligned = _validate(spark, syncs, behind)
    finally:
        spark.conf.unset("spark.mm2.validate.alignBlock")
        spark.conf.unset("spark.mm2.validate.alignMinRecords")
    return whole, aligned, fake


def _verdicts(rep: Any) -> Any:
    rows = [{k: v for k, v in r.items() if k != "alignedOutsideRegion"} for r in rep.partitions]
    return rows, [(c.name, c.status, c.detail) for c in rep.checks], rep.offset_syncs


def _record_reads(fake: FakeKafka) -> list[dict[int, tuple[int, int]]]:
    """The ranges read by the exact matching (the last two reads: source, then target)."""
    return [r for _, _, r in fake.reads[-2:]]


@pytest.mark.parametrize(
    ("case", "target", "region"),
    [
        # 63 target records: 15 whole blocks of 4 agree from the end, the 16th (3 against 4) does not.
        ("first record lost", (1, [rec(i) for i in range(1, N)]), ((0, 4), (1, 4))),
        ("a value changed", (0, [rec(i, "X" if i == 30 else None) for i in range(N)]), None),
        # Both in block 7 from the start and block 8 from the end: paired in the region, out of order.
        ("a pair swapped", (0, [rec({30: 31, 31: 30}.get(i, i)) for i in range(N)]), ((28, 32), (28, 32))),
        # 10 blocks agree from the start; from the end, 5 (record 40 sits in the 6th on the source).
        ("a record lost inside", (0, [rec(i) for i in range(N) if i != 40]), ((40, 44), (40, 43))),
    ],
)
def test_a_narrowed_partition_gets_the_verdicts_of_whole_matching(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch, case: str, target: Any, region: Any
) -> None:
    whole, aligned, fake = _both_ways(spark, monkeypatch, target)
    assert _verdicts(aligned) == _verdicts(whole), case
    assert Status.FAIL in {c.status for c in aligned.checks}, case
    row = aligned.partitions[0]
    if region is None:
        # An unpaired target record in the region: its result is dropped for whole matching.
        assert "alignedOutsideRegion" not in row, case
        return
    assert row["alignedOutsideRegion"] == 60, case
    assert _record_reads(fake) == [{0: region[0]}, {0: region[1]}], case


def test_a_copy_of_a_record_before_the_region_is_still_a_duplicate(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The region cannot see that a target record repeats one before it: whole matching decides."""
    target = [rec(i) for i in range(N)]
    target = [*target[:40], rec(2), *target[40:-1]]  # a redelivered copy of record 2; the last one lost
    whole, aligned, _ = _both_ways(spark, monkeypatch, (0, target))
    assert _verdicts(aligned) == _verdicts(whole)
    assert aligned.partitions[0]["duplicates"] == 1 and "alignedOutsideRegion" not in aligned.partitions[0]


def test_offset_syncs_around_and_inside_the_region_get_the_same_status(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = (0, [rec(i) for i in range(N) if i != 40])
    syncs = spark.createDataFrame(
        [("orders", 0, u, d) for u, d in ((8, 8), (8, 9), (39, 39), (40, 40), (50, 49), (50, 50), (63, 62))],
        "topic string, partition int, upstream_offset bigint, downstream_offset bigint",
    )
    whole, aligned, _ = _both_ways(spark, monkeypatch, target, syncs)
    assert aligned.partitions[0]["alignedOutsideRegion"] == 60
    assert _verdicts(aligned) == _verdicts(whole)
    assert aligned.offset_syncs["ok"]["count"] == 4 and aligned.offset_syncs["mismatch"]["count"] == 3


def test_a_record_lost_at_the_region_s_end_is_missing_not_lag(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not caught up, a missing record after the last matched one is lag; here the records aligned
    after the region are matched after it, so it is missing, as whole matching says."""
    whole, aligned, fake = _both_ways(spark, monkeypatch, (0, [rec(i) for i in range(N) if i != 43]), behind=1)
    assert _record_reads(fake) == [{0: (40, 44)}, {0: (40, 43)}]
    assert _verdicts(aligned) == _verdicts(whole)
    assert (aligned.partitions[0]["missing"], aligned.partitions[0]["notReplicated"]) == (1, 0)
