"""The record-level checks of one replicated topic, as Spark transformations.

Inputs are projections (`spark.transforms.project`): one row per record with its partition,
offset, fingerprint and component hashes. Everything is keyed by Kafka partition, so work splits
across executors by partition and fingerprint; the driver only ever collects per-partition
summaries (counts plus at most `EXAMPLES` example offsets per finding), so its memory does not
grow with the number of records.

Matching. Source and target records of one partition are grouped by fingerprint; the i-th source
occurrence of a fingerprint pairs with the i-th target occurrence (both by offset). That handles
records that are legitimately identical in the source. A group of at most two occurrences a side
(nearly every group) is paired from its first and last offsets, which a hash aggregation finds
without listing them; only larger groups have their offsets listed. Per group:
- paired occurrences are **matched** (source offset `so`, target offset `to`);
- surplus source occurrences are **missing** from the target partition;
- surplus target occurrences are **duplicates** if the source has the fingerprint, else **extra**.

Missing and extra records are then explained, most specific first: a missing record found as an
extra in another partition was **moved**; a missing record and an extra sitting between the same
matched neighbours (the same "gap") are one **modified** record (fields named); leftover missing
records after the last matched one are **not yet replicated** when the partition had not caught
up; leftover extras after the last matched one are **beyond the cut** (replicated after the stage
started) and before the first one **prefix** (source records since deleted), both ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

EXAMPLES = 5

# At most this many occurrences of one fingerprint per side are paired from plain aggregates
# (first and last offset); larger groups, which only identical records repeated in the source or
# redelivered more than once make, are paired from their offset lists (`_listed_groups`).
FEW = 2
SOURCE_SIDE, TARGET_SIDE = 0, 1  # the `side` column of match_records' union of both sides


def match_records(source: DataFrame, target: DataFrame) -> DataFrame:
    """Pair source and target records of the same partition by fingerprint and occurrence.

    Returns one row per source record and per surplus target record:
    (part, kind, so, to, fp, kh, vh, hh, ts), kind in matched | missing | duplicate | extra.
    The result is persisted and materialised (the caller unpersists it): the groups are counted
    and offset-bounded with Spark's hash aggregation, which keeps no list per group; only when
    some fingerprint occurs more than FEW times on a side are both sides read again for the
    offset lists of those fingerprints.
    """
    from pyspark import StorageLevel

    cols = ["part", "fp", "off", "kh", "vh", "hh", "ts"]
    both = source.select(*cols, F.lit(SOURCE_SIDE).alias("side")).unionByName(
        target.select(*cols, F.lit(TARGET_SIDE).alias("side"))
    )
    src, tgt = _on(SOURCE_SIDE), _on(TARGET_SIDE)
    grouped = (
        both.groupBy("part", "fp")
        .agg(
            F.count(F.when(src, 1)).alias("ns"),
            F.count(F.when(tgt, 1)).alias("nt"),
            F.min(F.when(src, F.col("off"))).alias("s1"),
            F.max(F.when(src, F.col("off"))).alias("s2"),
            F.min(F.when(tgt, F.col("off"))).alias("t1"),
            F.max(F.when(tgt, F.col("off"))).alias("t2"),
            *_firsts(),
        )
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    try:
        many = (F.col("ns") > FEW) | (F.col("nt") > FEW)
        if grouped.filter(many).isEmpty():
            out = _paired(_bounded_groups(grouped))
        else:
            keys = grouped.filter(many).select("part", "fp")
            listed = _listed_groups(both.join(keys, ["part", "fp"], "left_semi"))
            out = _paired(_bounded_groups(grouped.filter(~many))).unionByName(_paired(listed))
        out = out.persist(StorageLevel.MEMORY_AND_DISK)
        out.count()
        return out
    finally:
        grouped.unpersist()


def _on(side: int) -> Column:
    """Rows of one side of `match_records`' union."""
    return F.col("side") == side


def _firsts() -> list[Column]:
    """A group's component hashes and timestamp: those of any occurrence (they share the fingerprint)."""
    return [F.first(c).alias(c) for c in ("kh", "vh", "hh", "ts")]


def _bounded_groups(grouped: DataFrame) -> DataFrame:
    """Groups of at most FEW occurrences per side: their sorted offsets are the first and the last."""
    return grouped.select(
        "part",
        "fp",
        "kh",
        "vh",
        "hh",
        "ts",
        F.expr("slice(array(s1, s2), 1, cast(ns as int))").alias("sos"),
        F.expr("slice(array(t1, t2), 1, cast(nt as int))").alias("tos"),
    )


def _listed_groups(both: DataFrame) -> DataFrame:
    """(part, fp, kh, vh, hh, ts, sos, tos): every occurrence's offset, sorted, per side."""
    return both.groupBy("part", "fp").agg(
        F.sort_array(F.collect_list(F.when(_on(SOURCE_SIDE), F.col("off")))).alias("sos"),
        F.sort_array(F.collect_list(F.when(_on(TARGET_SIDE), F.col("off")))).alias("tos"),
        *_firsts(),
    )


def _paired(groups: DataFrame) -> DataFrame:
    """The i-th source occurrence with the i-th target occurrence; the surplus of either side apart."""
    rows = F.expr(
        """
        concat(
          zip_with(slice(sos, 1, least(size(sos), size(tos))), slice(tos, 1, least(size(sos), size(tos))),
                   (a, b) -> named_struct('kind', 'matched', 'so', a, 'to', b)),
          transform(slice(sos, least(size(sos), size(tos)) + 1, greatest(size(sos) - size(tos), 0)),
                    a -> named_struct('kind', 'missing', 'so', a, 'to', CAST(NULL AS BIGINT))),
          transform(slice(tos, least(size(sos), size(tos)) + 1, greatest(size(tos) - size(sos), 0)),
                    b -> named_struct('kind', IF(size(sos) > 0, 'duplicate', 'extra'),
                                      'so', CAST(NULL AS BIGINT), 'to', b))
        )
        """
    )
    return groups.select("part", "fp", "kh", "vh", "hh", "ts", F.explode(rows).alias("r")).select(
        "part", "r.kind", "r.so", "r.to", "fp", "kh", "vh", "hh", "ts"
    )


def kind_counts(matched: DataFrame) -> DataFrame:
    """Per partition: records per kind, plus the matched range on both sides."""

    def count(kind: str) -> Column:
        return F.sum(F.when(F.col("kind") == kind, 1).otherwise(0)).alias(kind)

    return matched.groupBy("part").agg(
        F.count(F.col("so")).alias("source_records"),
        F.count(F.col("to")).alias("target_records"),
        count("matched"),
        count("missing"),
        count("duplicate"),
        count("extra"),
    )


def union_all(frames: list[DataFrame]) -> DataFrame:
    """The frames' rows in one frame (by column name); `frames` must not be empty."""
    union = frames[0]
    for df in frames[1:]:
        union = union.unionByName(df)
    return union


def int_map(values: Mapping[int, Any]) -> Column:
    if not values:
        return F.create_map().cast("map<int,bigint>")
    return F.create_map(*[x for k, v in sorted(values.items()) for x in (F.lit(int(k)), F.lit(int(v)))])


def _gaps(rows: DataFrame, off: str, outside: Mapping[int, tuple[int, int]]) -> DataFrame:
    """Add `gap` (matched rows before this one, by `off`) and `total` (matched rows) per partition;
    `outside`: matched records before and after the rows read, per partition (none: 0, 0)."""
    running = Window.partitionBy("part").orderBy(off).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    whole = Window.partitionBy("part")
    is_matched = F.when(F.col("kind") == "matched", 1).otherwise(0)
    before = F.coalesce(F.element_at(int_map({p: b for p, (b, _) in outside.items()}), F.col("part")), F.lit(0))
    after = F.coalesce(F.element_at(int_map({p: a for p, (_, a) in outside.items()}), F.col("part")), F.lit(0))
    return rows.withColumn("gap", before + F.sum(is_matched).over(running)).withColumn(
        "total", before + F.sum(is_matched).over(whole) + after
    )


def explain_unmatched(
    matched: DataFrame,
    source_start: Mapping[int, int],
    caught_up: Mapping[int, bool],
    outside: Mapping[int, tuple[int, int]] | None = None,
) -> DataFrame:
    """Findings (part, finding, so, to, fields) for every missing and extra record.

    `source_start`: first offset still on the source per partition (prefix extras are only
    legitimate when the source has deleted records). `caught_up`: whether the target covered
    the cut for the partition (tail missing records are lag otherwise). `outside`: per partition
    matched only in part (`spark.alignment`), the records matched before and after what was read.
    """
    # The gap windows sort every record of the partition (one task per Kafka partition); what
    # survives them is only the unmatched records, which the rest reads several times. Materialise
    # that once (local checkpoint: executor storage, no reliable storage needed), or each read
    # would sort the whole partition again.
    src = (
        _gaps(matched.filter(F.col("kind").isin("matched", "missing")), "so", outside or {})
        .filter(F.col("kind") == "missing")
        .localCheckpoint(eager=True)
    )
    tgt = (
        _gaps(matched.filter(F.col("kind").isin("matched", "duplicate", "extra")), "to", outside or {})
        .filter(F.col("kind") == "extra")
        .localCheckpoint(eager=True)
    )

    moved_pairs = _moved_pairs(src, tgt)
    moved = moved_pairs.select(
        "part",
        F.lit("moved").alias("finding"),
        "so",
        "to",
        F.array(F.concat(F.lit("partition "), F.col("to_part").cast("string"))).alias("fields"),
    )
    src_left = src.join(moved_pairs.select("part", "so"), ["part", "so"], "left_anti")
    tgt_left = tgt.join(moved_pairs.select(F.col("to_part").alias("part"), "to"), ["part", "to"], "left_anti")

    # Modified: a missing record and an extra between the same matched neighbours, in order.
    src_rn = src_left.withColumn("rn", F.row_number().over(Window.partitionBy("part", "gap").orderBy("so")))
    tgt_rn = tgt_left.withColumn("rn", F.row_number().over(Window.partitionBy("part", "gap").orderBy("to")))
    s, t = src_rn.alias("s"), tgt_rn.alias("t")
    pairs = s.join(t, ["part", "gap", "rn"])
    modified = pairs.select(
        "part", F.lit("modified").alias("finding"), F.col("s.so"), F.col("t.to"), _changed_fields().alias("fields")
    )

    src_rest = src_rn.join(pairs.select("part", "gap", "rn"), ["part", "gap", "rn"], "left_anti")
    tgt_rest = tgt_rn.join(pairs.select("part", "gap", "rn"), ["part", "gap", "rn"], "left_anti")
    caught = F.coalesce(F.element_at(int_map({p: int(v) for p, v in caught_up.items()}), F.col("part")), F.lit(1))
    starts = F.coalesce(F.element_at(int_map(source_start), F.col("part")), F.lit(0))
    no_fields = F.array().cast("array<string>")
    missing = src_rest.select(
        "part",
        F.when((F.col("gap") == F.col("total")) & (caught == 0), F.lit("not_replicated"))
        .otherwise(F.lit("missing"))
        .alias("finding"),
        "so",
        F.lit(None).cast("bigint").alias("to"),
        no_fields.alias("fields"),
    )
    extra = tgt_rest.select(
        "part",
        F.when(F.col("gap") == F.col("total"), F.lit("beyond_cut"))
        .when((F.col("gap") == 0) & (starts > 0), F.lit("prefix"))
        .otherwise(F.lit("unexpected"))
        .alias("finding"),
        F.lit(None).cast("bigint").alias("so"),
        "to",
        no_fields.alias("fields"),
    )
    return moved.unionByName(modified).unionByName(missing).unionByName(extra)


def _moved_pairs(src: DataFrame, tgt: DataFrame) -> DataFrame:
    """Moved: the same record (fingerprint) turns up as an extra in another partition.

    (part, so, to_part, to), each missing record and each extra used at most once.
    """
    m, e = src.alias("m"), tgt.alias("e")
    return (
        m.join(e, (F.col("m.fp") == F.col("e.fp")) & (F.col("m.part") != F.col("e.part")))
        .select(
            F.col("m.part").alias("part"),
            F.col("m.so").alias("so"),
            F.col("e.part").alias("to_part"),
            F.col("e.to").alias("to"),
        )
        .withColumn("r1", F.row_number().over(Window.partitionBy("part", "so").orderBy("to_part", "to")))
        .filter("r1 = 1")
        .withColumn("r2", F.row_number().over(Window.partitionBy("to_part", "to").orderBy("part", "so")))
        .filter("r2 = 1")
        .drop("r1", "r2")
    )


def _changed_fields() -> Column:
    """The fields in which a paired source record `s` and target record `t` differ."""
    return F.filter(
        F.array(
            F.when(F.col("s.kh") != F.col("t.kh"), F.lit("key")),
            F.when(F.col("s.vh") != F.col("t.vh"), F.lit("value")),
            F.when(F.col("s.hh") != F.col("t.hh"), F.lit("headers")),
            F.when(F.col("s.ts") != F.col("t.ts"), F.lit("timestamp")),
        ),
        lambda x: x.isNotNull(),
    )


def order_violations(matched: DataFrame) -> DataFrame:
    """Matched records whose source predecessor (in target order) comes later in the source.

    Duplicates are not in the matched set, so a redelivered copy never counts as disorder; two
    records swapped in a partition give one violation.
    """
    w = Window.partitionBy("part").orderBy("to")
    return (
        matched.filter(F.col("kind") == "matched")
        .select("part", "so", "to")
        .withColumn("prev_so", F.lag("so").over(w))
        .filter(F.col("prev_so") > F.col("so"))
        .select(
            "part",
            F.lit("out_of_order").alias("finding"),
            "so",
            "to",
            F.array(F.concat(F.lit("after source offset "), F.col("prev_so").cast("string"))).alias("fields"),
        )
    )


def duplicates(matched: DataFrame) -> DataFrame:
    return matched.filter(F.col("kind") == "duplicate").select(
        "part", F.lit("duplicate").alias("finding"), F.col("so"), "to", F.array().cast("array<string>").alias("fields")
    )


def offset_sync_results(
    matched: DataFrame | None,
    syncs: DataFrame,
    source_range: Mapping[int, tuple[int, int]],
    target_range: Mapping[int, tuple[int, int]],
    shift: Mapping[int, int] | None = None,
) -> DataFrame:
    """Each decoded sync (partition, upstream_offset, downstream_offset) of this topic, with a status.

    ok: the source record at the upstream offset equals the target record at the downstream
    offset. mismatch: they differ. target_absent: no target record at the downstream offset.
    skipped_*: the sync points outside what this run read (deleted, or after the cut).
    Partitions in `shift` were decided healthy by the fast path (`spark.fast_path`): the record at
    source offset u sits at target offset u + shift, so a sync is ok exactly when d = u + shift.
    The others are judged by `matched` (the exact pairing of those partitions; None: there are none).
    """
    s_lo = F.element_at(int_map({p: r[0] for p, r in source_range.items()}), F.col("part"))
    s_hi = F.element_at(int_map({p: r[1] for p, r in source_range.items()}), F.col("part"))
    t_lo = F.element_at(int_map({p: r[0] for p, r in target_range.items()}), F.col("part"))
    t_hi = F.element_at(int_map({p: r[1] for p, r in target_range.items()}), F.col("part"))
    sh = F.element_at(int_map(shift or {}), F.col("part"))
    skipped = (
        F.when(s_lo.isNull() | (F.col("u") < s_lo), "skipped_source_deleted")
        .when(F.col("u") >= s_hi, "skipped_after_cut")
        .when(F.col("d") < t_lo, "skipped_target_deleted")
        .when(F.col("d") >= t_hi, "skipped_after_snapshot")
    )
    base = syncs.select(
        F.col("partition").alias("part"), F.col("upstream_offset").alias("u"), F.col("downstream_offset").alias("d")
    )
    fast = base.filter(sh.isNotNull()).select(
        "part", "u", "d", skipped.when(F.col("d") == F.col("u") + sh, "ok").otherwise("mismatch").alias("status")
    )
    if matched is None:
        return fast
    src_pos = matched.filter(F.col("so").isNotNull()).select(
        F.col("part"), F.col("so").alias("u"), F.col("fp").alias("sfp")
    )
    tgt_pos = matched.filter(F.col("to").isNotNull()).select(
        F.col("part"), F.col("to").alias("d"), F.col("fp").alias("tfp")
    )
    joined = base.filter(sh.isNull()).join(src_pos, ["part", "u"], "left").join(tgt_pos, ["part", "d"], "left")
    status = (
        skipped.when(F.col("sfp").isNull(), "skipped_source_gap")
        .when(F.col("tfp").isNull(), "target_absent")
        .when(F.col("sfp") == F.col("tfp"), "ok")
        .otherwise("mismatch")
    )
    return fast.unionByName(joined.select("part", "u", "d", status.alias("status")))


def checkpoint_results(
    matched: DataFrame | None,
    checkpoints: DataFrame,
    cut: Mapping[int, tuple[int, int]],
    snapshot_end: Mapping[int, int],
    log_end: Mapping[int, int],
    shift: Mapping[int, int] | None = None,
) -> DataFrame:
    """Each checkpoint (group, partition, upstream U, downstream D, ckpt_offset) with a status.

    exact(U) is the target offset of the first replicated record whose source offset is >= U.
    On partitions the fast path decided healthy (`shift`: target offset - source offset) that is
    max(U, first source offset) + shift; elsewhere a suffix minimum over the matched pairs of
    `matched`, computed with one window per partition (no range join). MM2 guarantees
    D <= exact(U) (never ahead: failover skips nothing) and D <= the target log end. Checkpoints
    with U at or after the cut can only be held to the log end. Per (group, partition), D must not
    decrease unless U went back (monotonicity).
    """
    sh = F.element_at(int_map(shift or {}), F.col("part"))
    ck = checkpoints.select(
        F.col("partition").alias("part"),
        F.col("upstream_offset").alias("k"),
        F.lit(None).cast("bigint").alias("v"),
        F.lit(1).alias("is_ckpt"),
        "group",
        F.col("downstream_offset").alias("D"),
        "ckpt_offset",
    )
    s_lo = F.element_at(int_map({p: lo for p, (lo, _) in cut.items()}), F.col("part"))
    with_exact = ck.filter(sh.isNotNull()).withColumn("exact", F.greatest(F.col("k"), s_lo) + sh)
    if matched is not None:
        recs = matched.filter(F.col("kind") == "matched").select(
            "part",
            F.col("so").alias("k"),
            F.col("to").alias("v"),
            F.lit(0).alias("is_ckpt"),
            F.lit(None).cast("string").alias("group"),
            F.lit(None).cast("bigint").alias("D"),
            F.lit(None).cast("bigint").alias("ckpt_offset"),
        )
        # Descending by offset with records before checkpoints at equal offsets: the running
        # minimum at a checkpoint row covers exactly the records with so >= U.
        w = (
            Window.partitionBy("part")
            .orderBy(F.col("k").desc(), F.col("is_ckpt").asc())
            .rowsBetween(Window.unboundedPreceding, Window.currentRow)
        )
        exact_rows = recs.unionByName(ck.filter(sh.isNull())).withColumn("exact", F.min("v").over(w))
        with_exact = with_exact.unionByName(exact_rows.filter(F.col("is_ckpt") == 1))
    cut_c = F.element_at(int_map({p: hi for p, (_, hi) in cut.items()}), F.col("part"))
    snap_c = F.element_at(int_map(snapshot_end), F.col("part"))
    end_c = F.element_at(int_map(log_end), F.col("part"))
    bound = F.when(cut_c.isNull() | (F.col("k") >= cut_c), end_c).otherwise(F.coalesce(F.col("exact"), snap_c))
    mono = Window.partitionBy("group", "part").orderBy("ckpt_offset")
    prev_d, prev_u = F.lag("D").over(mono), F.lag("k").over(mono)
    status = (
        F.when(end_c.isNull(), "no_target_partition")
        .when(F.col("D") > end_c, "beyond_log_end")
        .when(F.col("D") > bound, "ahead")
        .when(prev_d.isNotNull() & (F.col("D") < prev_d) & (F.col("k") >= prev_u), "regressed")
        .otherwise("ok")
    )
    return with_exact.select(
        "group",
        "part",
        F.col("k").alias("U"),
        "D",
        F.col("exact"),
        bound.alias("bound"),
        "ckpt_offset",
        status.alias("status"),
    )


# --- summaries: the only things collected to the driver ----------------------------------------


@dataclass
class FindingSummary:
    count: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)


def summarize_findings(findings: DataFrame) -> dict[int, dict[str, FindingSummary]]:
    """{partition: {finding: FindingSummary}} with counts and up to EXAMPLES examples each."""
    w = Window.partitionBy("part", "finding").orderBy(F.coalesce("so", "to"), "to")
    rows = (
        findings.withColumn("rn", F.row_number().over(w))
        .groupBy("part", "finding")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.sort_array(
                F.collect_list(
                    F.when(F.col("rn") <= EXAMPLES, F.struct(F.coalesce("so", "to").alias("o"), "so", "to", "fields"))
                )
            ).alias("ex"),
        )
        .collect()
    )
    out: dict[int, dict[str, FindingSummary]] = {}
    for r in rows:
        examples = [
            {
                k: v
                for k, v in (("sourceOffset", e["so"]), ("targetOffset", e["to"]), ("detail", list(e["fields"])))
                if v not in (None, [])
            }
            for e in r["ex"]
        ]
        out.setdefault(int(r["part"]), {})[str(r["finding"])] = FindingSummary(int(r["n"]), examples)
    return out


def summarize_status(results: DataFrame, example_cols: tuple[str, ...]) -> dict[str, FindingSummary]:
    """{status: FindingSummary} for sync/checkpoint result rows (examples: `example_cols`)."""
    return summarize_status_by(results.withColumn("key", F.lit("")), example_cols).get("", {})


def summarize_status_by(results: DataFrame, example_cols: tuple[str, ...]) -> dict[str, dict[str, FindingSummary]]:
    """{key: {status: FindingSummary}}: `summarize_status` of each `key` (a topic, say), in one job."""
    w = Window.partitionBy("key", "status").orderBy(*example_cols)
    rows = (
        results.withColumn("rn", F.row_number().over(w))
        .groupBy("key", "status")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.collect_list(F.when(F.col("rn") <= EXAMPLES, F.struct(*example_cols))).alias("ex"),
        )
        .collect()
    )
    out: dict[str, dict[str, FindingSummary]] = {}
    for r in rows:
        out.setdefault(str(r["key"]), {})[str(r["status"])] = FindingSummary(int(r["n"]), [e.asDict() for e in r["ex"]])
    return out
