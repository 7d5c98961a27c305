"""Writing records at a pace, and counting what a topic holds: the load the fault, rolling and
exactly-once tests put on a flow while something changes under it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from components.ops.clients import kafka_config
from components.outputs.contract import StackExports
from tests.integration.harness import end_offsets


def produce_paced(
    producer: Any,
    topic: str,
    key_of: Callable[[int], bytes],
    value: bytes,
    *,
    rate: float | None = None,
    count: int | None = None,
    stop: threading.Event | None = None,
    on_delivery: Callable[[Any, Any], None] | None = None,
    every: int = 1,
) -> int:
    """Records `key_of(0)`, `key_of(1)`, ... with `value` into `topic`, `rate` per second (None: as
    fast as the producer takes them), until `count` are sent or `stop` is set; returns how many
    were sent. The pace is kept (and delivery reports served) every `every` records: a few hundred
    at thousands per second, where sleeping per record costs more than it paces. A full local
    queue is waited out, not an error. Flushing is the caller's: it knows how long to allow."""
    started, sent = time.monotonic(), 0
    while (count is None or sent < count) and (stop is None or not stop.is_set()):
        try:
            producer.produce(topic, key=key_of(sent), value=value, on_delivery=on_delivery)
        except BufferError:
            producer.poll(0.05)
            continue
        sent += 1
        if sent % every == 0:
            producer.poll(0)
            ahead = sent / rate - (time.monotonic() - started) if rate is not None else 0.0
            if ahead > 0:  # poll(timeout) returns at the first delivery report: it cannot pace
                time.sleep(ahead)
    return sent


def produce_orders(out: dict[str, Any], run: str, count: int, rate: float | None = None) -> set[bytes]:
    """`count` small records keyed `<run>-<n>` to `orders` on primary (`rate` per second, None: at
    once); the keys the broker acknowledged."""
    from confluent_kafka import Producer

    acked: set[bytes] = set()

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            acked.add(msg.key())

    settings = {"linger.ms": 20, "batch.size": 262144, "enable.idempotence": True, "compression.type": "lz4"}
    producer = Producer(kafka_config(StackExports.from_json(out), "primary", **settings))

    def key_of(i: int) -> bytes:
        return f"{run}-{i:07d}".encode()

    produce_paced(producer, "orders", key_of, b"x" * 20, rate=rate, count=count, on_delivery=delivered, every=500)
    assert producer.flush(120) == 0, "producer could not flush within 120s"
    return acked


def topic_total(out: dict[str, Any], alias: str, topic: str) -> int:
    """How many records `topic` on `alias` has taken so far (its partitions' end offsets summed);
    0 while it does not exist."""
    return sum(end_offsets(out, alias, topic, missing_ok=True).values())
