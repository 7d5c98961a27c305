"""Baseline: a single-process confluent-kafka validator doing completeness and integrity.

    python -m bench.validation.baseline --spec spec.json --out result.json

The best a single process can reasonably do, not a strawman. Per partition it streams the source
range and the remote partition side by side (one consumer per cluster, librdkafka fetching and
decompressing in its own threads) and compares records in order, on the raw fields (key, value,
headers in order, timestamp): no hashing, no shuffle, no sort. It relies on what MM2 guarantees
anyway, that a remote partition keeps the source order, so a correct copy is one linear pass
where whole batches are compared with one C-level list comparison. Memory is bounded: at most
`window` records per side plus librdkafka's prefetch queue (`queued.max.messages.kbytes`).

When the streams diverge it resynchronises within a bounded look-ahead window:
- the source record turns up later on the target: the target records before it are extra;
- the target record turns up later on the source: the source records before it are missing;
- neither: the pair is one modified record, with the differing fields named.
A divergence wider than the window is counted as missing plus extra, the price of bounded memory
(the Spark validator has no such limit: it pairs records by fingerprint).

Completeness: every source record of the range is on the target partition (`missing` = 0).
Integrity: no record at the place of a source record differs (`modified` = 0).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

BATCH = 10_000
WINDOW = 20_000
FIELDS = ("key", "value", "headers", "timestamp")
IDLE_TIMEOUT_S = 60.0

# (key, value, headers, timestamp ms): what a record *is*; where it sits is not compared.
Rec = tuple[Any, Any, Any, int]


@dataclass
class PartitionResult:
    partition: int
    source_records: int = 0
    target_records: int = 0
    matched: int = 0
    missing: int = 0
    extra: int = 0
    modified: int = 0
    modified_fields: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if len(self.examples) < 5:
            self.examples.append(text)


class PartitionStream:
    """Records of one partition in [start, end), read in batches; `done` once `end` is reached."""

    def __init__(self, consumer: Any, topic: str, partition: int, start: int, end: int) -> None:
        from confluent_kafka import TopicPartition

        self.consumer, self.end = consumer, end
        self.done = end <= start
        self.next_offset = start  # offset of the first record not yet returned
        if not self.done:
            consumer.assign([TopicPartition(topic, partition, start)])

    def read(self) -> list[Rec]:
        if self.done:
            return []
        deadline = time.monotonic() + IDLE_TIMEOUT_S
        while True:
            # Never ask for more than the range holds: consume() waits for a full batch until its
            # timeout, which at the end of every partition would be dead time.
            want = max(1, min(BATCH, self.end - self.next_offset))
            msgs = self.consumer.consume(num_messages=want, timeout=0.5)
            if msgs:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"no record for {IDLE_TIMEOUT_S:.0f}s before offset {self.end}")
        for m in msgs:
            if m.error() is not None:
                raise RuntimeError(f"consumer error: {m.error()}")
        last = msgs[-1].offset()
        if last >= self.end - 1:
            self.done = True
            self.consumer.unassign()
            if last >= self.end:
                msgs = [m for m in msgs if m.offset() < self.end]
        self.next_offset = last + 1
        return [(m.key(), m.value(), m.headers(), m.timestamp()[1]) for m in msgs]


def _first_difference(s: list[Rec], t: list[Rec], n: int) -> int:
    for i in range(n):
        if s[i] != t[i]:
            return i
    return n


def _find(xs: list[Rec], x: Rec, lo: int, hi: int) -> int:
    try:
        return xs.index(x, lo, hi)
    except ValueError:
        return -1


def compare_partition(src: PartitionStream, tgt: PartitionStream, res: PartitionResult, window: int) -> None:
    s: list[Rec] = []
    t: list[Rec] = []
    s_off = src.next_offset  # source offset of s[0]
    t_off = tgt.next_offset
    while True:
        if len(s) < window and not src.done:
            got = src.read()
            res.source_records += len(got)
            s += got
        if len(t) < window and not tgt.done:
            got = tgt.read()
            res.target_records += len(got)
            t += got
        n = min(len(s), len(t))
        if n and s[:n] == t[:n]:  # the common case: one C-level comparison per batch
            res.matched += n
            del s[:n], t[:n]
            s_off, t_off = s_off + n, t_off + n
            continue
        i = _first_difference(s, t, n)
        res.matched += i
        del s[:i], t[:i]
        s_off, t_off = s_off + i, t_off + i
        if (len(s) < window and not src.done) or (len(t) < window and not tgt.done):
            continue  # decide with a full window on both sides
        if not s or not t:
            for _ in s:
                res.note(f"missing src@{s_off}")
            for _ in t:
                res.note(f"extra tgt@{t_off}")
            res.missing += len(s)
            res.extra += len(t)
            return
        j = _find(t, s[0], 1, window)
        if j > 0:  # target records before the source record's copy: extra (or duplicates)
            res.extra += j
            res.note(f"extra tgt@{t_off}..{t_off + j - 1}")
            del t[:j]
            t_off += j
            continue
        j = _find(s, t[0], 1, window)
        if j > 0:  # source records whose copies never came
            res.missing += j
            res.note(f"missing src@{s_off}..{s_off + j - 1}")
            del s[:j]
            s_off += j
            continue
        differs = [name for name, a, b in zip(FIELDS, s[0], t[0], strict=True) if a != b]
        res.modified += 1
        for name in differs:
            res.modified_fields[name] = res.modified_fields.get(name, 0) + 1
        res.note(f"modified src@{s_off} tgt@{t_off} [{', '.join(differs)}]")
        del s[0], t[0]
        s_off, t_off = s_off + 1, t_off + 1


def _consumer(bootstrap: str) -> Any:
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-baseline-{uuid.uuid4().hex[:8]}",  # never commits: assign() only
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "fetch.max.bytes": 64 * 1024 * 1024,
            "max.partition.fetch.bytes": 16 * 1024 * 1024,
            "queued.min.messages": 200_000,
            "queued.max.messages.kbytes": 64 * 1024,  # bounded prefetch per side
            "fetch.wait.max.ms": 10,
            "log_level": 0,
        }
    )


def watermarks(consumer: Any, topic: str, partitions: Iterable[int]) -> dict[int, tuple[int, int]]:
    from confluent_kafka import TopicPartition

    out = {}
    for p in partitions:
        lo, hi = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15, cached=False)
        out[p] = (int(lo), int(hi))
    return out


def validate(
    source_bootstrap: str,
    source_topic: str,
    target_bootstrap: str,
    target_topic: str,
    partitions: int,
    window: int = WINDOW,
) -> dict[str, Any]:
    """Completeness and integrity of `target_topic` against `source_topic`, partition by partition.

    The cut is the source end offsets when the run starts; the target is read to its end.
    """
    src_c, tgt_c = _consumer(source_bootstrap), _consumer(target_bootstrap)
    t0 = time.monotonic()
    try:
        cut = watermarks(src_c, source_topic, range(partitions))
        snap = watermarks(tgt_c, target_topic, range(partitions))
        results = []
        for p in range(partitions):
            res = PartitionResult(p)
            compare_partition(
                PartitionStream(src_c, source_topic, p, *cut[p]),
                PartitionStream(tgt_c, target_topic, p, *snap[p]),
                res,
                window,
            )
            results.append(res)
    finally:
        src_c.close()
        tgt_c.close()
    seconds = time.monotonic() - t0
    # The kernel's peak RSS of this process (KiB on Linux): exact, unlike sampling from outside.
    peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    total = {k: sum(getattr(r, k) for r in results) for k in ("source_records", "matched", "missing", "modified")}
    checks = {
        "completeness": "pass" if total["missing"] == 0 else "fail",
        "integrity": "pass" if total["modified"] == 0 else "fail",
    }
    return {
        "passed": all(v == "pass" for v in checks.values()),
        "checks": checks,
        "totals": total,
        "seconds": seconds,
        "peak_rss_mib": round(peak_rss_mib, 1),
        "partitions": [asdict(r) for r in results],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--spec", required=True, help="JSON: source/target bootstrap and topic, partitions")
    p.add_argument("--out", required=True, help="result JSON")
    p.add_argument("--window", type=int, default=WINDOW)
    args = p.parse_args(argv)
    with open(args.spec) as fh:
        spec = json.load(fh)
    result = validate(
        spec["source_bootstrap"],
        spec["source_topic"],
        spec["target_bootstrap"],
        spec["target_topic"],
        int(spec["partitions"]),
        args.window,
    )
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    print(
        json.dumps({k: result[k] for k in ("passed", "checks", "totals", "seconds", "peak_rss_mib")}), file=sys.stderr
    )
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
