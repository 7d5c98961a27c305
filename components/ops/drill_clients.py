"""The DR drill's Kafka clients: the load producer, the application's consumer group on the source,
the same group resuming on DR, and the read-back of the remote topic."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from components.ops import failover
from components.ops.clients import kafka_config
from components.ops.drill_figures import DrillSettings
from components.ops.errors import OpsError
from components.outputs.contract import StackExports

Log = Callable[[str], None]


class LoadProducer(threading.Thread):
    """Writes uniquely keyed records at a steady rate; records the acknowledgement time per key."""

    def __init__(self, conf: dict[str, Any], topic: str, run: str, settings: DrillSettings) -> None:
        super().__init__(name="drill-producer", daemon=True)
        from confluent_kafka import Producer

        self.producer = Producer(conf)
        self.topic = topic
        self.run_id = run
        self.settings = settings
        self.acked: dict[bytes, float] = {}
        self.failed = 0
        self.sent = 0
        self.limit = settings.warmup_records  # raised when the load phase starts
        self.rate: float | None = None  # None: as fast as possible (warm-up)
        self.stop_event = threading.Event()
        self.error: BaseException | None = None
        self._payload = os.urandom(settings.value_bytes)

    def key(self, i: int) -> bytes:
        return f"drill-{self.run_id}-{i:09d}".encode()

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked[msg.key()] = time.monotonic()
        else:
            self.failed += 1

    def run(self) -> None:
        try:
            load_started: float | None = None
            base = 0
            while not self.stop_event.is_set():
                due = self.limit
                if self.rate is not None:
                    if load_started is None:
                        load_started, base = time.monotonic(), self.sent
                    due = min(self.limit, base + int((time.monotonic() - load_started) * self.rate))
                while self.sent < due and not self.stop_event.is_set():
                    try:
                        self.producer.produce(
                            self.topic, key=self.key(self.sent), value=self._payload, on_delivery=self._delivered
                        )
                    except BufferError:
                        break
                    self.sent += 1
                self.producer.poll(0.005)
        except BaseException as exc:  # reported by the drill, not lost in a thread
            self.error = exc

    def finish(self) -> None:
        """Stop writing; drop what the stopped source can no longer acknowledge."""
        self.stop_event.set()
        self.join(30)
        self.producer.purge(in_queue=True, in_flight=True)
        self.producer.flush(5)


class SourceConsumer(threading.Thread):
    """The application's consumer group on the source: consumes and commits up to a target count."""

    def __init__(self, conf: dict[str, Any], topic: str, prefix: bytes, commit_every: int = 500) -> None:
        super().__init__(name="drill-source-consumer", daemon=True)
        from confluent_kafka import Consumer

        self.consumer = Consumer(conf)
        self.topic = topic
        self.prefix = prefix
        self.commit_every = commit_every
        self.target = 0
        self.consumed: set[bytes] = set()
        self.commits = 0
        self.polled = 0
        self.last_error = ""
        self.stop_event = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.consumer.subscribe([self.topic])
            since_commit = 0
            while not self.stop_event.is_set():
                if len(self.consumed) >= self.target:
                    if since_commit:
                        self.consumer.commit(asynchronous=False)
                        self.commits += 1
                        since_commit = 0
                    time.sleep(0.1)
                    continue
                msg = self.consumer.poll(0.5)
                if msg is None:
                    continue
                if msg.error() is not None:
                    self.last_error = str(msg.error())
                    continue
                self.polled += 1
                key = msg.key() or b""
                if key.startswith(self.prefix):
                    self.consumed.add(key)
                since_commit += 1
                if since_commit >= self.commit_every:
                    self.consumer.commit(asynchronous=False)
                    self.commits += 1
                    since_commit = 0
        except BaseException as exc:
            if not self.stop_event.is_set():
                self.error = exc


def checkpointed(outputs: StackExports, target: str, topic: str, group: str, remote: str) -> int:
    found = failover.read_latest_checkpoints(outputs, target, topic, timeout_s=30) or {}
    return sum(1 for (g, t, _) in found if g == group and t == remote)


def consume_on_dr(
    outputs: StackExports, target: str, remote: str, group: str, prefix: bytes, timeout_s: float, log: Log
) -> tuple[list[bytes], float | None]:
    """The group consumes the remote topic on DR until caught up; (drill keys, time of the first)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        kafka_config(
            outputs, target, **{"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": True}
        )
    )
    keys: list[bytes] = []
    first: float | None = None
    try:
        consumer.subscribe([remote])
        parts = consumer.list_topics(remote, timeout=30).topics[remote].partitions
        tps = [TopicPartition(remote, p) for p in parts]
        starts = {tp.partition: tp.offset for tp in consumer.committed(tps, timeout=30)}
        deadline = time.monotonic() + timeout_s
        ends: dict[int, int] = {}
        stable_since = time.monotonic()
        last_check = 0.0
        positions: dict[int, int] = {p: max(off, 0) for p, off in starts.items()}
        while time.monotonic() < deadline:
            # Batches: a watermark request waits behind the connection's fetch (up to 0.5 s), so
            # one record per loop would never catch up.
            for msg in consumer.consume(10_000, 0.5):
                if msg.error() is not None:
                    continue
                positions[int(msg.partition() or 0)] = int(msg.offset() or 0) + 1
                key = msg.key() or b""
                if key.startswith(prefix):
                    if first is None:
                        first = time.monotonic()
                    keys.append(key)
            if time.monotonic() - last_check >= 2.0:
                last_check = time.monotonic()
                now_ends = {tp.partition: consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in tps}
                if now_ends != ends:
                    ends, stable_since = now_ends, time.monotonic()
                caught_up = all(positions.get(p, 0) >= end for p, end in ends.items())
                # MM2 may still be writing what it polled before the failure: wait for quiet ends.
                if caught_up and time.monotonic() - stable_since >= 5:
                    return keys, first
        raise OpsError(
            f"drill: group {group} had not caught up on {remote} on {target} after {timeout_s:.0f}s "
            f"(positions {positions}, ends {ends}). Next step: check {target} and the consumer group."
        )
    finally:
        consumer.close()


def read_remote(outputs: StackExports, target: str, remote: str, prefix: bytes) -> list[bytes]:
    """Every drill key in the remote topic, copies included."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    conf = kafka_config(
        outputs,
        target,
        **{
            "group.id": f"drill-verify-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        },
    )
    consumer = Consumer(conf)
    keys: list[bytes] = []
    try:
        parts = consumer.list_topics(remote, timeout=30).topics[remote].partitions
        pending, assignment = set(), []
        for p in parts:
            low, high = consumer.get_watermark_offsets(TopicPartition(remote, p), timeout=30)
            if high > low:
                pending.add(p)
                assignment.append(TopicPartition(remote, p, low))
        consumer.assign(assignment)
        deadline = time.monotonic() + 300
        while pending and time.monotonic() < deadline:
            for msg in consumer.consume(10_000, 1.0):
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        pending.discard(msg.partition())
                    continue
                key = msg.key() or b""
                if key.startswith(prefix):
                    keys.append(key)
        if pending:
            raise OpsError(f"drill: reading {remote} on {target} back did not finish in 300s (partitions {pending})")
    finally:
        consumer.close()
    return keys


def raise_thread_errors(*threads: Any) -> None:
    for t in threads:
        if t.error is not None:
            raise OpsError(f"drill: {t.name} failed: {t.error}") from t.error
