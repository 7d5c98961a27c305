"""A stream of records through a flow while something changes under it (a roll, a kill): every
record must arrive, and the longest time with none arriving is measured."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tests.integration.harness import kafka_conf, wait_until

T = TypeVar("T")
_AFTER_S = 180.0  # how long the watcher keeps reading after the stream stopped


@dataclass(frozen=True)
class Streamed:
    sent: int
    missing: int  # records sent and acknowledged that never arrived
    longest_gap_s: float  # the longest time with no record of the stream arriving
    # Records the producer (acks=all, librdkafka's retries) could not write, by error name: e.g.
    # NOT_ENOUGH_REPLICAS when a partition's ISR fell below min.insync.replicas for good.
    failed: Counter[str] = field(default_factory=Counter)


def streamed_during(
    outputs: dict[str, Any], source: tuple[str, str], target: tuple[str, str], action: Callable[[], T]
) -> tuple[T, Streamed]:
    """Produce about 50 records/s (acks=all) to `source` (alias, topic) while `action` runs, from before it
    starts until records arrive again after it; read them on `target` (alias, remote topic)."""
    from confluent_kafka import Consumer, Producer

    stop, sent, arrivals, failed = threading.Event(), [0], [], Counter[str]()
    run = f"stream-{time.monotonic_ns()}-".encode()
    stopped = [float("inf")]

    def stream() -> None:
        producer = Producer(kafka_conf(outputs, source[0], acks="all"))

        def delivered(error: Any, _message: Any) -> None:
            if error is not None:
                failed[error.name()] += 1

        while not stop.is_set():
            producer.produce(source[1], key=run + str(sent[0]).encode(), value=b"x", on_delivery=delivered)
            sent[0] += 1
            producer.poll(0.02)
        assert producer.flush(60) == 0

    def watch() -> None:
        settings = {"group.id": run.decode(), "auto.offset.reset": "earliest", "enable.auto.commit": False}
        consumer = Consumer(kafka_conf(outputs, target[0], **settings))
        consumer.subscribe([target[1]])
        try:
            while not stop.is_set() or len({k for _t, k in arrivals}) < sent[0]:
                message = consumer.poll(0.5)
                if message is not None and not message.error() and (message.key() or b"").startswith(run):
                    arrivals.append((time.monotonic(), message.key()))
                if stop.is_set() and time.monotonic() > stopped[0] + _AFTER_S:
                    return
        finally:
            consumer.close()

    threads = [threading.Thread(target=stream), threading.Thread(target=watch)]
    for t in threads:
        t.start()
    try:
        wait_until(lambda: len(arrivals) > 50, 60, f"the stream arriving on {target[0]} before the change")
        result = action()
        wait_until(lambda: time.monotonic() - arrivals[-1][0] < 2, 180, "records arriving again")
    finally:
        stopped[0] = time.monotonic()
        stop.set()
        for t in threads:
            t.join(_AFTER_S + 60)
    times = [t for t, _k in arrivals]
    missing = {run + str(i).encode() for i in range(sent[0])} - {k for _t, k in arrivals}
    gap = max((b - a for a, b in itertools.pairwise(times)), default=0.0)
    return result, Streamed(sent[0], len(missing), gap, failed)
