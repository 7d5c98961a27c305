"""The benchmark's data: N records over several partitions, written identically to a source topic
and to its remote topic, as a correct MM2 copy would be.

No MirrorMaker runs here: the benchmark measures validation throughput, so both topics are filled
directly by fast producers (confluent-kafka, lz4, large batches, one process per core).

Each record is a pure function of (partition, index), so any process can regenerate it:
- key: `order-<partition>-<index>` (~16 B);
- value: 100-400 B (uniform, mean 250 B) cut from a fixed pool of word-like text (lz4 compresses
  it roughly 2x, like typical JSON-ish payloads);
- headers: `trace-id` (16 B) and `origin` (5 B), plus a null-valued `retry` header on every
  7th record;
- timestamp: a fixed base (one hour before the run) plus the index in ms (CreateTime).
"""

from __future__ import annotations

import multiprocessing as mp
import random
import time
from dataclasses import dataclass
from typing import Any

VALUE_MIN, VALUE_MAX = 100, 400
_POOL_SIZE = 1 << 20


def value_pool(seed: int = 7) -> bytes:
    rnd = random.Random(seed)
    words = [bytes(rnd.choices(b"abcdefghijklmnopqrstuvwxyz", k=rnd.randint(2, 9))) for _ in range(4096)]
    out = bytearray()
    while len(out) < _POOL_SIZE + VALUE_MAX:
        out += rnd.choice(words) + (b'", "' if rnd.random() < 0.15 else b" ")
    return bytes(out)


Record = tuple[bytes, bytes, list[tuple[str, str | bytes | None]], int]


def record(pool: bytes, partition: int, index: int, base_ms: int) -> Record:
    h = (index * 2654435761 + partition * 40503) & 0xFFFFFFFF
    length = VALUE_MIN + h % (VALUE_MAX - VALUE_MIN + 1)
    start = (index * 7919 + partition * 104729) % _POOL_SIZE
    headers: list[tuple[str, str | bytes | None]] = [("trace-id", b"%016x" % (h * 0x9E3779B1)), ("origin", b"bench")]
    if index % 7 == 0:
        headers.append(("retry", None))
    return (b"order-%d-%d" % (partition, index), pool[start : start + length], headers, base_ms + index)


@dataclass(frozen=True)
class LoadSpec:
    source_bootstrap: str
    source_topic: str
    target_bootstrap: str
    target_topic: str
    partitions: int
    records: int  # in total, spread evenly over the partitions
    base_ms: int

    def per_partition(self, p: int) -> int:
        return self.records // self.partitions + (1 if p < self.records % self.partitions else 0)


PRODUCER_CONF: dict[str, Any] = {
    "linger.ms": 50,
    "batch.size": 900_000,  # under the broker's message.max.bytes (1 MiB)
    "batch.num.messages": 100_000,
    "compression.type": "lz4",
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 512 * 1024,
    "enable.idempotence": True,  # per-partition order exactly as produced, no duplicates
    "log_level": 0,
}


def _produce_partitions(spec: LoadSpec, partitions: list[int]) -> int:
    """Worker: write the records of `partitions` to both topics; returns records written per topic."""
    from confluent_kafka import Producer

    pool = value_pool()
    src = Producer({"bootstrap.servers": spec.source_bootstrap, **PRODUCER_CONF})
    tgt = Producer({"bootstrap.servers": spec.target_bootstrap, **PRODUCER_CONF})
    failures: list[str] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None and len(failures) < 5:
            failures.append(str(err))

    written = 0
    for p in partitions:
        for i in range(spec.per_partition(p)):
            k, v, h, ts = record(pool, p, i, spec.base_ms)
            for producer, topic in ((src, spec.source_topic), (tgt, spec.target_topic)):
                while True:
                    try:
                        producer.produce(topic, v, k, partition=p, timestamp=ts, headers=h, on_delivery=on_delivery)
                        break
                    except BufferError:
                        producer.poll(0.05)
            written += 1
            if written % 20_000 == 0:
                src.poll(0)
                tgt.poll(0)
    for producer in (src, tgt):
        if producer.flush(300) != 0:
            raise RuntimeError("producer could not flush within 300 s")
    if failures:
        raise RuntimeError(f"delivery failed: {failures}")
    return written


def load(spec: LoadSpec, workers: int) -> float:
    """Write both topics with `workers` producer processes; returns the seconds it took."""
    groups = [[p for p in range(spec.partitions) if p % workers == w] for w in range(workers)]
    t0 = time.monotonic()
    # spawn, not fork: the parent holds librdkafka clients (and their threads) already.
    with mp.get_context("spawn").Pool(workers) as pool:
        written = sum(pool.starmap(_produce_partitions, [(spec, g) for g in groups if g]))
    if written != spec.records:
        raise RuntimeError(f"wrote {written} records per topic, expected {spec.records}")
    return time.monotonic() - t0
