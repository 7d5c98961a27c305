"""Kafka access: Spark's Kafka source for records, confluent-kafka for small metadata.

Records (millions) are only ever read by Spark executors. The driver reads metadata whose size
depends on partitions, groups and heartbeats, never on records: watermarks, topic lists, group
offsets, the newest offset sync per partition (streamed, O(partitions) state) and the tail of the
heartbeat topics.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from components.mm2_records import (
    Checkpoint,
    RecordFormatError,
    decode_checkpoint,
    decode_heartbeat,
    decode_offset_sync,
)
from spark import StageError
from spark.outputs import ClusterAccess

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

TIMEOUT_S = 15.0
_PARTITION_EOF = -191  # KafkaError._PARTITION_EOF: the consumer reached the current end


class KafkaAccessError(StageError):
    """A cluster did not answer a metadata request."""


def _conf(cluster: ClusterAccess, **extra: Any) -> dict[str, Any]:
    return {**cluster.librdkafka_config(), "log_level": 0, "socket.timeout.ms": 10000, **extra}


def _consumer(cluster: ClusterAccess, isolation: str = "read_uncommitted") -> Any:
    from confluent_kafka import Consumer

    # A throwaway group id that never commits: the validator must not create visible groups.
    return Consumer(
        _conf(
            cluster,
            **{
                "group.id": f"mm2-validate-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "isolation.level": isolation,
                "enable.partition.eof": True,
            },
        )
    )


def list_topics(cluster: ClusterAccess) -> dict[str, int]:
    """{topic: partition count} on the cluster."""
    from confluent_kafka.admin import AdminClient

    try:
        md = AdminClient(_conf(cluster)).list_topics(timeout=TIMEOUT_S)
    except Exception as exc:
        raise KafkaAccessError(f"cluster {cluster.alias} ({cluster.bootstrap}) did not answer: {exc}") from exc
    return {name: len(t.partitions) for name, t in md.topics.items() if t.error is None}


def watermarks(
    cluster: ClusterAccess, topic: str, partitions: int, isolation: str = "read_uncommitted"
) -> dict[int, tuple[int, int]]:
    """{partition: (first offset, end offset)}; with read_committed the end is the last stable offset."""
    from confluent_kafka import TopicPartition

    consumer = _consumer(cluster, isolation)
    try:
        out = {}
        for p in range(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT_S, cached=False)
            out[p] = (int(low), int(high))
        return out
    except Exception as exc:
        raise KafkaAccessError(f"watermarks of {cluster.alias}/{topic}: {exc}") from exc
    finally:
        consumer.close()


@dataclass(frozen=True)
class GroupOffset:
    group: str
    topic: str
    partition: int
    offset: int


def committed_group_offsets(cluster: ClusterAccess, topics: Iterable[str]) -> list[GroupOffset]:
    """Committed offsets of every consumer group on the cluster for `topics`."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    wanted = set(topics)
    admin = AdminClient(_conf(cluster))
    listing = admin.list_consumer_groups(request_timeout=TIMEOUT_S).result()
    out = []
    for g in listing.valid:
        fut = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g.group_id)], request_timeout=TIMEOUT_S)
        for res in fut.values():
            for tp in res.result().topic_partitions or []:
                if tp.topic in wanted and tp.offset >= 0:
                    out.append(GroupOffset(g.group_id, tp.topic, tp.partition, tp.offset))
    return out


class OffsetSyncTracker:
    """Newest offset sync per (upstream topic, partition), read incrementally from the syncs topic.

    Used while waiting for catch-up: a sync whose upstream offset reached the cut proves that
    MM2 wrote the record at the cut downstream. State is one entry per partition.
    """

    def __init__(self, cluster: ClusterAccess, topic: str, topics: Iterable[str]) -> None:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        self.topics = set(topics)
        self.latest: dict[tuple[str, int], tuple[int, int]] = {}
        self.consumer = _consumer(cluster)
        self.consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])

    def poll(self, budget_s: float = 5.0) -> None:
        """Read what is new, up to the current end of the topic (or `budget_s`)."""
        deadline = time.monotonic() + budget_s
        while time.monotonic() < deadline:
            for m in self.consumer.consume(num_messages=10000, timeout=0.5):
                if m.error() is not None:
                    if m.error().code() == _PARTITION_EOF:
                        return
                    continue
                try:
                    s = decode_offset_sync(m.key() or b"", m.value() or b"")
                except RecordFormatError:
                    continue
                if s.topic in self.topics:
                    self.latest[(s.topic, s.partition)] = (s.upstream_offset, s.downstream_offset)

    def close(self) -> None:
        self.consumer.close()


@dataclass(frozen=True)
class HeartbeatTail:
    records: int  # records read from the tail
    newest_ms: int | None  # newest heartbeat timestamp with the wanted key


def heartbeat_tail(
    cluster: ClusterAccess, topic: str, source: str | None, target: str | None, tail: int = 2000
) -> HeartbeatTail:
    """Newest heartbeat emitted by the (source, target) heartbeat connector (None: any), from the tail."""
    from confluent_kafka import TopicPartition

    consumer = _consumer(cluster)
    try:
        md = consumer.list_topics(topic, timeout=TIMEOUT_S).topics[topic]
        newest: int | None = None
        seen = 0
        for p in md.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT_S, cached=False)
            if high <= low:
                continue
            position = max(low, high - tail)
            consumer.assign([TopicPartition(topic, p, position)])
            while True:
                # consume() returns when it has `num_messages` or the timeout passed: ask for no more
                # than are left up to `high`, or every tail read ended on a 2 s wait.
                msgs = consumer.consume(num_messages=max(1, min(1000, high - position)), timeout=2.0)
                if not msgs:
                    break
                done = False
                for m in msgs:
                    if m.error() is not None:
                        done = done or m.error().code() == _PARTITION_EOF  # at the end: nothing more to wait for
                        continue
                    seen += 1
                    position = m.offset() + 1
                    if m.offset() >= high - 1:
                        done = True
                    try:
                        hb = decode_heartbeat(m.key() or b"", m.value() or b"")
                    except RecordFormatError:
                        continue
                    if source is None or (hb.source_alias, hb.target_alias) == (source, target):
                        newest = max(newest or 0, hb.timestamp_ms)
                if done:
                    break
        return HeartbeatTail(seen, newest)
    finally:
        consumer.close()


def heartbeat_latencies(
    cluster: ClusterAccess, topics: Iterable[str], window_s: float
) -> dict[str, list[tuple[int, int]]]:
    """For heartbeats arriving during `window_s`: (receive time, receive time minus the heartbeat's timestamp), ms.

    The timestamp is the emitter's wall clock (MM2 preserves it through replication), so on
    `<source>.heartbeats` this is emission on the source to visibility on the target (the whole
    MM2 data path); on `heartbeats` it is the heartbeat connector's produce path only.
    """
    from confluent_kafka import OFFSET_END, TopicPartition

    topics = list(topics)
    out: dict[str, list[tuple[int, int]]] = {t: [] for t in topics}
    if not topics or window_s <= 0:
        return out
    consumer = _consumer(cluster)
    try:
        md = consumer.list_topics(timeout=TIMEOUT_S)
        assign = [TopicPartition(t, p, OFFSET_END) for t in topics if t in md.topics for p in md.topics[t].partitions]
        if not assign:
            return out
        consumer.assign(assign)
        deadline = time.monotonic() + window_s
        while time.monotonic() < deadline:
            for m in consumer.consume(num_messages=100, timeout=min(0.5, max(0.05, deadline - time.monotonic()))):
                if m.error() is not None:
                    continue
                now_ms = int(time.time() * 1000)
                try:
                    hb = decode_heartbeat(m.key() or b"", m.value() or b"")
                except RecordFormatError:
                    continue
                out[m.topic()].append((now_ms, now_ms - hb.timestamp_ms))
        return out
    finally:
        consumer.close()


def read_checkpoints(cluster: ClusterAccess, topic: str, budget_s: float = 10.0) -> list[Checkpoint]:
    """Every checkpoint in `topic` up to its current end (compacted: one per group and partition)."""
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    consumer = _consumer(cluster)
    out: list[Checkpoint] = []
    try:
        md = consumer.list_topics(topic, timeout=TIMEOUT_S).topics.get(topic)
        if md is None or md.error is not None:
            return out
        parts = [p for p in md.partitions if _has_records(consumer, topic, p)]
        if not parts:
            return out
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        done: set[int] = set()
        deadline = time.monotonic() + budget_s
        while len(done) < len(parts) and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=10000, timeout=0.5):
                if m.error() is not None:
                    if m.error().code() == _PARTITION_EOF:
                        done.add(m.partition())
                    continue
                try:
                    out.append(decode_checkpoint(m.key() or b"", m.value() or b""))
                except RecordFormatError:
                    continue
        return out
    finally:
        consumer.close()


def _has_records(consumer: Any, topic: str, partition: int) -> bool:
    from confluent_kafka import TopicPartition

    low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=TIMEOUT_S, cached=False)
    return high > low


def percentiles(samples: list[int]) -> dict[str, float | int | None]:
    if not samples:
        return {"samples": 0, "p50": None, "p99": None, "max": None}
    xs = sorted(samples)

    def pct(q: float) -> int:
        return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]

    return {"samples": len(xs), "p50": pct(0.50), "p99": pct(0.99), "max": xs[-1]}


# --- Spark reads -------------------------------------------------------------------------------


def spark_read(
    spark: SparkSession,
    cluster: ClusterAccess,
    topic: str,
    ranges: Mapping[int, tuple[int, int]],
    isolation: str = "read_uncommitted",
    min_partitions: int | None = None,
) -> DataFrame:
    """Records of `topic` in [start, end) per partition, through Spark's Kafka source (batch)."""
    return spark_read_topics(spark, cluster, {topic: ranges}, isolation, min_partitions)


def spark_read_topics(
    spark: SparkSession,
    cluster: ClusterAccess,
    ranges: Mapping[str, Mapping[int, tuple[int, int]]],
    isolation: str = "read_uncommitted",
    min_partitions: int | None = None,
) -> DataFrame:
    """Records of several topics of one cluster in one Kafka source relation: {topic: {partition:
    (start, end)}}. Each relation costs a driver-side offset lookup (its own admin client) before
    any record moves, so topics of one cluster and isolation level share one."""
    starting = {t: {str(p): int(lo) for p, (lo, _) in r.items()} for t, r in ranges.items()}
    ending = {t: {str(p): int(hi) for p, (_, hi) in r.items()} for t, r in ranges.items()}
    reader = (
        spark.read.format("kafka")
        .option("assign", json.dumps({t: sorted(int(p) for p in r) for t, r in ranges.items()}))
        .option("startingOffsets", json.dumps(starting))
        .option("endingOffsets", json.dumps(ending))
        .option("includeHeaders", "true")
        # Transaction markers and compaction leave offset gaps inside the range; they are not
        # data loss, and real loss shows up as missing records in the checks.
        .option("failOnDataLoss", "false")
        .option("kafka.isolation.level", isolation)
    )
    if min_partitions:
        reader = reader.option("minPartitions", str(min_partitions))
    for key, value in cluster.java_client_properties().items():
        reader = reader.option(f"kafka.{key}", value)
    return reader.load()
