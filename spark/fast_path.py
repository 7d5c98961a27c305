"""Tier 1 of the comparison: decide healthy partitions from per-partition aggregates alone.

For every partition of the validated range, each side contributes one row: the record count, the
first and last offset read, and an order-sensitive fingerprint, the sum over records of
xxhash64(key, value, headers, timestamp, position), where position is the record's distance from
the start of the range (offset - first offset of the range). The sum is kept as two 64-bit sums
of the hash's 32-bit halves, so it cannot overflow below 2^31 records per partition. Everything
is Spark SQL (no Python UDF); only these rows reach the driver.

The source side reads the cut [lo, hi); the target side reads the same number of positions from
the first offset it holds, [t_lo, t_lo + (hi - lo)). A partition is decided **healthy** when the
source is contiguous (hi - lo records), the target holds a record at every one of those positions,
and the fingerprints agree: then record i of the source sits at position i of the target, with the
same key, value, headers and timestamp, so nothing is missing, modified, reordered, duplicated or
unexpected in the validated range. Every other partition goes to the exact matching
(`spark.checks`), restricted to those partitions, with the reason recorded:
- the source range is not contiguous (transaction markers, compaction): undecidable;
- the target holds fewer positions than the source (lag, loss, markers, a prefix): disagree;
- the fingerprints differ: disagree.
Target records after those positions (replicated after the cut) are counted as `beyondCut`.
Up to `AFTER_CUT_READ` of them are read too, with as many source records after the cut, and
fingerprinted apart: records replicated after the cut repeat the source's next records position
by position; when they do not (a redelivered copy of a record before the cut, say), the partition
goes to the exact matching, which names such copies as duplicates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from spark.catchup import Range

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from spark.outputs import ClusterAccess

FAST, EXACT = "fast", "exact"
AFTER_CUT_READ = 100_000  # target records after the cut's positions compared per partition, at most


@dataclass(frozen=True)
class SideAgg:
    """What one side's read of one partition reduced to."""

    records: int
    first: int | None
    last: int | None
    fp_hi: int
    fp_lo: int
    # (records, fingerprint halves) of the positions after the cut's (spark.fast_path docstring)
    after: tuple[int, int, int] = (0, 0, 0)


@dataclass(frozen=True)
class FastPathDecision:
    path: str  # FAST or EXACT
    reason: str


def target_window(cut: Mapping[int, Range], snapshot: Mapping[int, Range]) -> dict[int, Range]:
    """The target positions the fast path reads: as many as the source's cut, from the target's
    start, then up to `AFTER_CUT_READ` more (records replicated after the cut)."""
    out = {}
    for p, (lo, hi) in cut.items():
        if p in snapshot:
            t_lo, t_hi = snapshot[p]
            out[p] = (t_lo, min(t_hi, t_lo + (hi - lo) + AFTER_CUT_READ))
    return out


def source_window(
    cut: Mapping[int, Range], target: Mapping[int, Range], source_end: Mapping[int, int]
) -> dict[int, Range]:
    """The source positions the fast path reads: the cut, then as many records after it as the
    target window holds after the cut's positions (as far as the source has them)."""
    out = {}
    for p, (lo, hi) in cut.items():
        after = max(0, (target[p][1] - target[p][0]) - (hi - lo)) if p in target else 0
        out[p] = (lo, max(hi, min(source_end.get(p, hi), hi + after)))
    return out


def decide(
    cut: Mapping[int, Range],
    snapshot: Mapping[int, Range] | None,
    src: Mapping[int, SideAgg],
    tgt: Mapping[int, SideAgg],
) -> dict[int, FastPathDecision]:
    """Per partition of the cut: fast (healthy) or exact (and why)."""
    out = {}
    for p, (lo, hi) in sorted(cut.items()):
        n = hi - lo
        s = src.get(p, SideAgg(0, None, None, 0, 0))
        t = tgt.get(p, SideAgg(0, None, None, 0, 0))
        if snapshot is None or p not in snapshot:
            out[p] = FastPathDecision(EXACT, "no such partition on the target")
        elif s.records != n:
            out[p] = FastPathDecision(EXACT, f"source offsets not contiguous ({s.records} records in {n} offsets)")
        elif t.records != n:
            out[p] = FastPathDecision(EXACT, f"target holds {t.records} of the {n} positions of the cut")
        elif (s.fp_hi, s.fp_lo) != (t.fp_hi, t.fp_lo):
            out[p] = FastPathDecision(EXACT, "fingerprints differ")
        elif s.after != t.after:
            out[p] = FastPathDecision(
                EXACT, f"{t.after[0]} record(s) after the cut do not repeat the source's next records (duplicates?)"
            )
        else:
            out[p] = FastPathDecision(FAST, "counts and fingerprints agree")
    return out


def fast_row(p: int, cut: Range, target: Range, lag: int) -> dict[str, Any]:
    """The report row of a partition the fast path decided healthy (same keys as the exact rows)."""
    n = cut[1] - cut[0]
    return {
        "partition": p,
        "path": FAST,
        "sourceRange": list(cut),
        "targetRange": list(target),
        "sourceCount": n,
        "targetCount": n,
        "sourceRecords": n,
        "targetRecords": n,
        "matched": n,
        "missing": 0,
        "moved": 0,
        "modified": 0,
        "duplicates": 0,
        "outOfOrder": 0,
        "unexpected": 0,
        "notReplicated": 0,
        "beyondCut": max(0, (target[1] - target[0]) - n),  # offsets after the cut's positions
        "prefix": 0,
        "lag": lag,
        "examples": {},
    }


def position_map(cut: Mapping[int, Range], snapshot: Mapping[int, Range], parts: set[int]) -> dict[int, int]:
    """Per healthy partition: target offset minus source offset (the same for every record)."""
    return {p: snapshot[p][0] - cut[p][0] for p in parts}


# --- Spark --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SideRead:
    """One side of one topic to reduce: where to read and which offsets; `sizes`: per partition,
    how many positions belong to the cut (the rest of the range is after it)."""

    cluster: ClusterAccess
    topic: str
    ranges: Mapping[int, Range]
    isolation: str
    sizes: Mapping[int, int] | None = None


def record_hash(start: Column) -> Column:
    """xxhash64 of a Kafka-source row's identity (`spark.transforms.identity_columns`) and its
    position (offset - `start`)."""
    from pyspark.sql import functions as F

    from spark.transforms import identity_columns

    return F.xxhash64(*identity_columns(), F.col("offset") - start)


def side_frame(
    records: DataFrame, starts: Mapping[int, int], side: int, sizes: Mapping[int, int] | None = None
) -> DataFrame:
    """Kafka-source rows of one topic -> (side, part, seg, off, h_hi, h_lo): the record hash split
    into 32-bit halves; `seg` 1 for positions at or after the cut's size in `sizes` (none: every record 0)."""
    return sides_frame(records, [Side(side, None, starts, sizes)])


@dataclass(frozen=True)
class Side:
    """One read within a Kafka relation: its side number, topic (None: every row), starts, cut sizes."""

    side: int
    topic: str | None
    starts: Mapping[int, int]
    sizes: Mapping[int, int] | None = None


def sides_frame(records: DataFrame, sides: list[Side]) -> DataFrame:
    """`side_frame` of a relation holding several topics, each its own side (looked up by topic)."""
    from pyspark.sql import functions as F

    from spark.checks import int_map

    def by_topic(values: list[tuple[str | None, Column]]) -> Column:
        if len(values) == 1 and values[0][0] is None:
            return values[0][1]
        return F.element_at(F.create_map(*[x for t, c in values for x in (F.lit(t), c)]), F.col("topic"))

    def per_partition(maps: list[tuple[str | None, Mapping[int, int]]]) -> Column:
        return F.element_at(by_topic([(t, int_map(m).cast("map<int,bigint>")) for t, m in maps]), F.col("partition"))

    start = per_partition([(s.topic, s.starts) for s in sides])
    h = record_hash(start)
    seg = F.lit(0)
    if any(s.sizes for s in sides):
        size = per_partition([(s.topic, s.sizes or {}) for s in sides])
        seg = F.when(F.col("offset") - start >= size, F.lit(1)).otherwise(F.lit(0))
    return records.select(
        by_topic([(s.topic, F.lit(s.side)) for s in sides]).alias("side"),
        F.col("partition").alias("part"),
        seg.alias("seg"),
        F.col("offset").alias("off"),
        F.shiftrightunsigned(h, 32).alias("h_hi"),
        h.bitwiseAND(F.lit(0xFFFFFFFF)).alias("h_lo"),
    )


def reduce_sides(frames: list[DataFrame], sides: int) -> list[dict[int, SideAgg]]:
    """One Spark job: per (side, partition, segment) count, offset bounds and the fingerprint sums."""
    from pyspark.sql import functions as F

    from spark.checks import union_all

    out: list[dict[int, SideAgg]] = [{} for _ in range(sides)]
    if not frames:
        return out
    rows = (
        union_all(frames)
        .groupBy("side", "part", "seg")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.min("off").alias("first"),
            F.max("off").alias("last"),
            F.sum("h_hi").alias("hi"),
            F.sum("h_lo").alias("lo"),
        )
        .collect()
    )
    after: dict[tuple[int, int], tuple[int, int, int]] = {}
    for row in rows:
        side, part = int(row["side"]), int(row["part"])
        if int(row["seg"]) == 1:
            after[(side, part)] = (int(row["n"]), int(row["hi"] or 0), int(row["lo"] or 0))
            continue
        out[side][part] = SideAgg(int(row["n"]), row["first"], row["last"], int(row["hi"] or 0), int(row["lo"] or 0))
    for (side, part), agg in after.items():
        base = out[side].get(part, SideAgg(0, None, None, 0, 0))
        out[side][part] = replace(base, after=agg)
    return out


def aggregate(spark: SparkSession, reads: list[SideRead]) -> list[dict[int, SideAgg]]:
    """Reduce every read to per-partition aggregates in one Spark job; one dict per read, in order.

    Identical reads (a source topic of several flows, e.g. fan-out, with the same cut) are read once,
    and the topics of one cluster and isolation level share one Kafka source relation.
    """
    from spark import kafka_io

    unique: dict[tuple[Any, ...], int] = {}
    for r in reads:
        unique.setdefault(read_key(r), len(unique))
    firsts = {i: next(r for r in reads if unique[read_key(r)] == i) for i in unique.values()}
    frames: list[DataFrame] = []
    for relation in relations(firsts):
        first = relation[0][1]
        df = kafka_io.spark_read_topics(spark, first.cluster, {r.topic: rg for _, r, rg in relation}, first.isolation)
        # A relation of one topic needs no per-record lookup by topic (topic None: every row).
        one = len(relation) == 1
        sides = [
            Side(
                i,
                None if one else r.topic,
                {p: lo for p, (lo, _) in rg.items()},
                {p: n for p, n in (r.sizes or {}).items() if p in rg},
            )
            for i, r, rg in relation
        ]
        frames.append(sides_frame(df, sides))
    reduced = reduce_sides(frames, len(unique))
    return [reduced[unique[read_key(r)]] for r in reads]


def relations(reads: Mapping[int, SideRead]) -> list[list[tuple[int, SideRead, dict[int, Range]]]]:
    """Reads grouped into Kafka source relations: one per cluster and isolation level, a topic at
    most once in each (two flows may cut one topic at different offsets); empty ranges not read."""
    out: dict[tuple[str, str, str], list[list[tuple[int, SideRead, dict[int, Range]]]]] = {}
    for i, r in reads.items():
        ranges = {p: rg for p, rg in r.ranges.items() if rg[1] > rg[0]}
        if not ranges:
            continue  # nothing to read: no Spark work for empty partitions or topics
        layers = out.setdefault((r.cluster.alias, r.cluster.bootstrap, r.isolation), [])
        layer = next((x for x in layers if all(o.topic != r.topic for _, o, _ in x)), None)
        if layer is None:
            layer = []
            layers.append(layer)
        layer.append((i, r, ranges))
    return [layer for layers in out.values() for layer in layers]


def read_key(r: SideRead) -> tuple[Any, ...]:
    """What makes two reads the same read: cluster, topic, offsets, isolation and the cut's sizes."""
    return (
        r.cluster.alias,
        r.cluster.bootstrap,
        r.topic,
        tuple(sorted(r.ranges.items())),
        r.isolation,
        tuple(sorted((r.sizes or {}).items())),
    )
