"""Records a cluster pair's passive side took behind the fence: the divergence, read with Spark.

A pair (`mm2:failover.<a><->b>`, exported as `failover.<pair>`) keeps, per flow a switchover
stopped, where that flow stopped: the cut. The passive side's outbound flow is stopped and its
topics refuse the applications' writes; a record past the cut was written by a principal the fence
does not hold (a super user, an operator's tool) and never reached the other side. The way back
(`active` changed back) must keep or discard those records (`divergence`), and its preview counts
them by offset; this check reads them, so the report names each record (partition, offset, key)
before anyone decides:

- FAIL: records past the cut on the passive side, each named (up to `SHOWN`, then a count);
- PASS: none;
- no check at all for a stack without pairs, or a pair whose standby flow never stopped (no cut).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.outputs.contract import PairExport
from spark import kafka_io
from spark.outputs import ClusterAccess
from spark.report import Check, Status

CHECK = "divergence"
SHOWN = 20


def ranges(pair: PairExport, ends: Mapping[tuple[str, int], int]) -> dict[str, dict[int, tuple[int, int]]]:
    """{topic: {partition: (cut, end)}} of the passive side's partitions that took records past the cut."""
    out: dict[str, dict[int, tuple[int, int]]] = {}
    for c in pair.standby_cut:
        end = ends.get((c.topic, c.partition), c.source_end)
        if end > c.source_end:
            out.setdefault(c.topic, {})[c.partition] = (c.source_end, end)
    return out


def verdict(pair: PairExport, found: list[tuple[str, int, int, str]]) -> Check:
    """The check from the records found past the cut: (topic, partition, offset, key)."""
    if not found:
        return Check(CHECK, Status.PASS, f"pair {pair.name}: nothing on {pair.passive} past the cut")
    named = "; ".join(f"{t} p{p}@{o} key={k}" for t, p, o, k in sorted(found)[:SHOWN])
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    return Check(
        CHECK,
        Status.FAIL,
        f"pair {pair.name}: {len(found)} record(s) on {pair.passive} past the cut of {pair.passive}->{pair.active} "
        f"never replicated: {named}{more}. Decide with mm2:failover.{pair.name}.divergence (keep or discard) "
        "before failing back",
    )


def check_pair(spark: Any, pair: PairExport, cluster: ClusterAccess) -> Check | None:
    """Read the records past the standby flow's cut on the passive side; None without a cut."""
    if not pair.standby_cut:
        return None
    ends: dict[tuple[str, int], int] = {}
    for topic in sorted({c.topic for c in pair.standby_cut}):
        parts = max(c.partition for c in pair.standby_cut if c.topic == topic) + 1
        ends.update({(topic, p): hi for p, (_lo, hi) in kafka_io.watermarks(cluster, topic, parts).items()})
    wanted = ranges(pair, ends)
    if not wanted:
        return verdict(pair, [])
    rows = kafka_io.spark_read_topics(spark, cluster, wanted).select("topic", "partition", "offset", "key").collect()
    found = [(str(r["topic"]), int(r["partition"]), int(r["offset"]), _text(r["key"])) for r in rows]
    return verdict(pair, found)


def _text(key: bytes | bytearray | None) -> str:
    if key is None:
        return "null"
    return bytes(key).decode("utf-8", errors="replace")


def merged(checks: list[Check]) -> Check | None:
    """One `divergence` check for the stack (the report keys checks by name): failed if any pair's is."""
    if not checks:
        return None
    failed = [c for c in checks if c.status is Status.FAIL]
    return Check(CHECK, Status.FAIL if failed else Status.PASS, " | ".join(c.detail for c in (failed or checks)))
