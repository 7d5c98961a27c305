"""Between the two tiers: where a deferred partition's two sides stop lining up.

A partition the fast path could not call healthy usually differs in a small region: a record lost
at the start, a value changed in the middle. When both sides are contiguous and the target holds
no record after the cut's positions (the source cut [lo, hi) against the whole target snapshot
[t_lo, t_hi), no longer than the cut), one more read of the partition's two sides hashes every
record with its position, counted once from the start of its side and once from the end, and
sums the hashes per block of BLOCK positions (a fingerprint like `spark.fast_path`'s, per block). Blocks
from the start that agree on both sides (count and sums) hold the same records at the same
positions; so do blocks from the end. The exact matching then reads only what lies between (the
region); the `before` records ahead of it and the `after` records behind it are matched position
by position (source offset o sits at target offset o - lo + t_lo before the region, and at
o - hi + t_hi after it).

The region's result stands only when it pairs every target record of the region (no duplicate
and no unpaired record): an unpaired target record could be a copy of a record outside the region,
which only the whole partition tells apart (a duplicate, not an unexpected record), so then the
topic's deferred partitions are matched whole, as without alignment. Missing records need no such
care: their count per fingerprint is the same in the region as in the whole partition, since the
records around it pair one to one. One difference remains, by design: identical records (same key,
value, headers and timestamp) repeated in a partition pair position by position around the region,
where whole-partition matching pairs them by occurrence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spark.catchup import Range
from spark.fast_path import SideAgg, SideRead

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

BLOCK = 8192  # positions per block: the region is at most a few blocks wider than the difference
# Below this many cut records a partition is matched whole: the extra read costs more than it saves.
MIN_RECORDS = 100_000
Sums = tuple[int, int, int]  # (records, high-half sum, low-half sum) of one block


@dataclass(frozen=True)
class Aligned:
    """A partition's region and how many records line up before and after it."""

    source: Range  # the source offsets of the region
    target: Range  # the target offsets of the region
    before: int
    after: int

    def runs(self, cut: Range, snapshot: Range) -> list[tuple[int, int, int]]:
        """(first source offset, end, target offset - source offset) of the records around the region."""
        (lo, hi), (t_lo, t_hi) = cut, snapshot
        out = [(lo, lo + self.before, t_lo - lo), (hi - self.after, hi, t_hi - hi)]
        return [r for r in out if r[1] > r[0]]


def eligible(cut: Range, snapshot: Range, src: SideAgg, tgt: SideAgg, least: int = MIN_RECORDS) -> bool:
    """Can the partition be aligned (see the module docstring)? `src`, `tgt`: its fast-path
    aggregates; `least`: fewer cut records are matched whole."""
    n, t_len = cut[1] - cut[0], snapshot[1] - snapshot[0]
    return n >= least and 0 < t_len <= n and src.records == n and tgt.records == t_len and tgt.after[0] == 0


def agreeing(src: Mapping[int, Sums], tgt: Mapping[int, Sums]) -> int:
    """Records in the leading blocks (0, 1, ...) that agree on both sides."""
    total, b = 0, 0
    while b in src and src.get(b) == tgt.get(b):
        total += src[b][0]
        b += 1
    return total


def region(cut: Range, snapshot: Range, before: int, after: int) -> Aligned | None:
    """The region between `before` leading and `after` trailing aligned records; None when it is
    most of the partition (matching it whole costs about the same)."""
    (lo, hi), (t_lo, t_hi) = cut, snapshot
    shorter = min(hi - lo, t_hi - t_lo)
    before = min(before, shorter)
    after = min(after, shorter - before)
    aligned = Aligned((lo + before, hi - after), (t_lo + before, t_hi - after), before, after)
    if 2 * (before + after) < shorter:
        return None
    return aligned


def locate(
    block_sums: Mapping[tuple[int, int], tuple[dict[int, Sums], dict[int, Sums]]],
    cut: Mapping[int, Range],
    snapshot: Mapping[int, Range],
) -> dict[int, Aligned]:
    """Per partition read by `block_sums` ({(side, partition): (from the start, from the end)},
    side 0 the source, 1 the target): its region, when alignment leaves one worth matching alone."""
    out = {}
    for p in sorted({p for _, p in block_sums}):
        (s_start, s_end), (t_start, t_end) = block_sums.get((0, p), ({}, {})), block_sums.get((1, p), ({}, {}))
        found = region(cut[p], snapshot[p], agreeing(s_start, t_start), agreeing(s_end, t_end))
        if found is not None:
            out[p] = found
    return out


def has_surplus(counts: Mapping[int, Mapping[str, Any]], parts: Iterable[int]) -> bool:
    """Does the region matching of `parts` leave a target record unpaired (see the module docstring)?"""
    return any(counts.get(p, {}).get("duplicate") or counts.get(p, {}).get("extra") for p in parts)


def add_outside(counts: dict[int, dict[str, Any]], aligned: Mapping[int, Aligned]) -> None:
    """Count the records around each region as matched on both sides."""
    for p, a in aligned.items():
        c = counts.setdefault(p, {"part": p, "source_records": 0, "target_records": 0, "matched": 0})
        for key in ("source_records", "target_records", "matched"):
            c[key] = int(c.get(key) or 0) + a.before + a.after


# --- Spark --------------------------------------------------------------------------------------


def read_block_sums(
    spark: SparkSession, source: SideRead, target: SideRead, block: int = BLOCK
) -> dict[tuple[int, int], tuple[dict[int, Sums], dict[int, Sums]]]:
    """One Spark job: per side (0 `source`, 1 `target`) and partition, the sums per `block`
    positions from the start and from the end."""
    from pyspark.sql import functions as F

    from spark import kafka_io
    from spark.checks import int_map, union_all
    from spark.transforms import identity_columns

    frames = []
    for side, r in enumerate((source, target)):
        df = kafka_io.spark_read(spark, r.cluster, r.topic, r.ranges, r.isolation)
        lo = F.element_at(int_map({p: a for p, (a, _) in r.ranges.items()}), F.col("partition"))
        last = F.element_at(int_map({p: b - 1 for p, (_, b) in r.ranges.items()}), F.col("partition"))
        c = F.xxhash64(*identity_columns())
        from_start, from_end = F.col("offset") - lo, last - F.col("offset")
        frames.append(
            df.select(
                F.lit(side).alias("side"),
                F.col("partition").alias("part"),
                (from_start / block).cast("bigint").alias("bs"),
                (from_end / block).cast("bigint").alias("be"),
                F.xxhash64(c, from_start).alias("hs"),
                F.xxhash64(c, from_end).alias("he"),
            )
        )
    halves = [F.sum(F.shiftrightunsigned(F.col(h), 32)).alias(f"{h}_hi") for h in ("hs", "he")] + [
        F.sum(F.col(h).bitwiseAND(F.lit(0xFFFFFFFF))).alias(f"{h}_lo") for h in ("hs", "he")
    ]
    rows = union_all(frames).groupBy("side", "part", "bs", "be").agg(F.count(F.lit(1)).alias("n"), *halves).collect()
    return _rolled_up(rows)


def _rolled_up(rows: list[Any]) -> dict[tuple[int, int], tuple[dict[int, Sums], dict[int, Sums]]]:
    """(side, part, bs, be) rows -> per (side, part): sums per start block and per end block."""
    out: dict[tuple[int, int], tuple[dict[int, Sums], dict[int, Sums]]] = {}
    for row in rows:
        start, end = out.setdefault((int(row["side"]), int(row["part"])), ({}, {}))
        n = int(row["n"])
        for blocks, b, hi, lo in (
            (start, row["bs"], row["hs_hi"], row["hs_lo"]),
            (end, row["be"], row["he_hi"], row["he_lo"]),
        ):
            was = blocks.get(int(b), (0, 0, 0))
            blocks[int(b)] = (was[0] + n, was[1] + int(hi), was[2] + int(lo))
    return out


def outside_pairs(
    spark: SparkSession, aligned: Mapping[int, Aligned], cut: Mapping[int, Range], snapshot: Mapping[int, Range]
) -> DataFrame | None:
    """The records around each region as matched rows (`spark.checks.match_records`' columns), for
    the offset-sync and checkpoint checks; their fingerprint is made up (equal on both sides of a
    pair, unlike any record's). None when there are none."""
    from pyspark.sql import functions as F

    from spark.checks import union_all

    frames = []
    for p, a in sorted(aligned.items()):
        for first, end, delta in a.runs(cut[p], snapshot[p]):
            ids = spark.range(first, end)
            frames.append(
                ids.select(
                    F.lit(p).cast("int").alias("part"),
                    F.lit("matched").alias("kind"),
                    F.col("id").alias("so"),
                    (F.col("id") + F.lit(delta)).alias("to"),
                    F.struct(F.col("id").alias("a"), F.lit(-1).cast("bigint").alias("b")).alias("fp"),
                    *[F.lit(None).cast("bigint").alias(c) for c in ("kh", "vh", "hh", "ts")],
                )
            )
    return union_all(frames) if frames else None
