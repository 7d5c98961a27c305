"""The verdicts of one replicated topic: per-partition rows and checks from Spark's findings.

Pure: turns what `spark.checks` summarised (kind counts, findings, offset-sync and checkpoint
statuses) into the report's partition rows and `Check`s. No Spark session, no Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from spark.catchup import Range
from spark.report import Check, Status

if TYPE_CHECKING:  # spark.checks imports pyspark; only its result type is needed here
    from spark.checks import FindingSummary

_COUNTS = ("missing", "moved", "modified", "duplicates", "outOfOrder", "unexpected", "lag")
# Checkpoint statuses that mean a consumer failing over could skip or re-read wrongly.
_UNSAFE_CHECKPOINTS = ("ahead", "beyond_log_end", "regressed", "no_target_partition")


def partition_rows(
    cut: Mapping[int, Range],
    snapshot: Mapping[int, Range],
    counts: Mapping[int, Mapping[str, Any]],
    summary: Mapping[int, Mapping[str, FindingSummary]],
    lag: Mapping[int, int],
) -> list[dict[str, Any]]:
    """One report row per partition of the source cut or the target snapshot."""

    def n(p: int, finding: str) -> int:
        s = summary.get(p, {}).get(finding)
        return s.count if s else 0

    rows = []
    for p in sorted(set(cut) | set(snapshot)):
        c = counts.get(p, {})
        rows.append(
            {
                "partition": p,
                "sourceRange": list(cut[p]) if p in cut else None,
                "targetRange": list(snapshot[p]) if p in snapshot else None,
                "sourceRecords": c.get("source_records", 0),
                "targetRecords": c.get("target_records", 0),
                "matched": c.get("matched", 0),
                "missing": n(p, "missing"),
                "moved": n(p, "moved"),
                "modified": n(p, "modified"),
                "duplicates": n(p, "duplicate"),
                "outOfOrder": n(p, "out_of_order"),
                "unexpected": n(p, "unexpected"),
                "notReplicated": n(p, "not_replicated"),
                "beyondCut": n(p, "beyond_cut"),
                "prefix": n(p, "prefix"),
                "lag": max(lag.get(p, 0), n(p, "not_replicated")),
                "examples": {k: v.examples for k, v in summary.get(p, {}).items()},
            }
        )
    return rows


def record_checks(partitions: list[dict[str, Any]], missing_parts: list[int], exactly_once: bool) -> list[Check]:
    """completeness, partitioning, integrity, order, duplicates, unexpected_records, catch_up."""
    total = {k: sum(int(p[k]) for p in partitions) for k in _COUNTS}
    comp = _count_check(
        "completeness",
        total.get("missing", 0),
        "source record(s) missing on the target",
        _example_refs(partitions, "missing"),
    )
    if missing_parts:
        comp = Check("completeness", Status.FAIL, f"target lacks partition(s) {missing_parts}; " + comp.detail)
    return [
        comp,
        _count_check(
            "partitioning",
            total.get("moved", 0),
            "record(s) in another partition than on the source",
            _example_refs(partitions, "moved"),
        ),
        _count_check(
            "integrity",
            total.get("modified", 0),
            "record(s) with different key/value/headers/timestamp",
            _example_refs(partitions, "modified"),
        ),
        _count_check(
            "order",
            total.get("outOfOrder", 0),
            "record(s) out of source order",
            _example_refs(partitions, "out_of_order"),
        ),
        _count_check(
            "duplicates",
            total.get("duplicates", 0),
            "duplicate(s)" + (" (exactly-once: none allowed)" if exactly_once else " (at-least-once: allowed)"),
            _example_refs(partitions, "duplicate"),
            fail=exactly_once,
        ),
        _count_check(
            "unexpected_records",
            total.get("unexpected", 0),
            "target record(s) that match no source record",
            _example_refs(partitions, "unexpected"),
        ),
        _count_check(
            "catch_up",
            total.get("lag", 0),
            "record(s) before the cut not yet on the target",
            _example_refs(partitions, "not_replicated"),
        ),
    ]


def offset_sync_check(st: Mapping[str, FindingSummary], n_src: int) -> Check:
    """Every offset sync inside the validated range must pair a source record with itself."""
    bad = sum(st[k].count for k in ("mismatch", "target_absent") if k in st)
    ok = st["ok"].count if "ok" in st else 0
    if bad:
        ex = [
            f"p{e['part']} src@{e['u']}->tgt@{e['d']} {k}"
            for k in ("mismatch", "target_absent")
            if k in st
            for e in st[k].examples
        ]
        return Check(
            "offset_syncs",
            Status.FAIL,
            f"{bad} of {bad + ok} offset sync(s) point at a different record (e.g. {', '.join(ex[:3])})",
        )
    if ok:
        return Check("offset_syncs", Status.PASS, f"{ok} offset sync(s): source record == target record")
    if n_src:
        return Check("offset_syncs", Status.WARN, "no offset sync inside the validated range to verify")
    return Check("offset_syncs", Status.PASS, "empty topic, nothing to verify")


def checkpoint_check(st: Mapping[str, FindingSummary]) -> Check:
    """Checkpoints must never be ahead, stay within the log end and never regress."""
    bad = sum(st[k].count for k in _UNSAFE_CHECKPOINTS if k in st)
    ok = st["ok"].count if "ok" in st else 0
    if bad:
        ex = [
            f"{k}: group {e['group']} p{e['part']} upstream {e['U']} -> downstream {e['D']} (bound {e['bound']})"
            for k in _UNSAFE_CHECKPOINTS
            if k in st
            for e in st[k].examples
        ]
        return Check("checkpoints", Status.FAIL, f"{bad} of {bad + ok} checkpoint(s) unsafe: {'; '.join(ex[:3])}")
    if ok:
        return Check("checkpoints", Status.PASS, f"{ok} checkpoint(s) never ahead, within the log end, monotonic")
    return Check(
        "checkpoints",
        Status.SKIP,
        "no checkpoints for this topic (no consumer group offsets on the source)",
    )


def _count_check(name: str, n: int, what: str, examples: list[str], fail: bool = True) -> Check:
    if n == 0:
        return Check(name, Status.PASS, f"no {what}")
    ex = f" (e.g. {', '.join(examples[:3])})" if examples else ""
    return Check(name, Status.FAIL if fail else Status.WARN, f"{n} {what}{ex}")


def _example_refs(partitions: list[dict[str, Any]], finding: str) -> list[str]:
    refs = []
    for p in partitions:
        for e in p.get("examples", {}).get(finding, []):
            where = f"p{p['partition']}"
            if "sourceOffset" in e:
                where += f" src@{e['sourceOffset']}"
            if "targetOffset" in e:
                where += f" tgt@{e['targetOffset']}"
            if e.get("detail"):
                where += f" [{', '.join(e['detail'])}]"
            refs.append(where)
    return refs
