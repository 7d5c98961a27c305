"""MM2's progress per source partition, read from Kafka (no Connect REST needed).

Connect stores a source connector's progress in its worker group's offsets topic: records keyed
`["<connector>", {"cluster": <source alias>, "partition": p, "topic": t}]` with value
`{"offset": o}`, where for the MirrorSourceConnector `o` is the offset of the last source record
it processed (MirrorUtils.wrapPartition / wrapOffset). Connect writes an offset only once the
target has acknowledged every record up to it (every `offset.flush.interval.ms`, 5 s in this
stack; inside the transaction for exactly-once flows), so `o >= cut - 1` proves the records
before the cut reached the target. The topic is compacted; a null value resets the offset.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from components.mm2_records import decode_source_offset
from spark.outputs import ClusterAccess


class SourceOffsetTracker:
    """The MirrorSourceConnector's committed source offsets, read incrementally (one entry per partition)."""

    def __init__(
        self,
        cluster: ClusterAccess,
        offsets_topic: str,
        partitions: int,
        connector: str,
        source: str,
        topics: Iterable[str],
    ) -> None:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        from spark.kafka_io import _consumer

        self.connector, self.source, self.topics = connector, source, set(topics)
        self.latest: dict[tuple[str, int], int] = {}
        # read_committed: an exactly-once flow writes its offsets inside the records' transaction.
        self.consumer: Any = _consumer(cluster, "read_committed")
        self.consumer.assign([TopicPartition(offsets_topic, p, OFFSET_BEGINNING) for p in range(partitions)])

    def poll(self, budget_s: float = 3.0) -> dict[tuple[str, int], int]:
        """Read what is new (until a fetch comes back empty, or `budget_s`); the offsets so far."""
        deadline = time.monotonic() + budget_s
        while time.monotonic() < deadline:
            msgs = self.consumer.consume(num_messages=10000, timeout=0.3)
            if not msgs:
                break
            for m in msgs:
                if m.error() is not None:
                    continue
                got = decode_source_offset(m.key(), m.value(), self.connector, self.source)
                if got is None or got[0][0] not in self.topics:
                    continue
                if got[1] is None:
                    self.latest.pop(got[0], None)
                else:
                    self.latest[got[0]] = got[1]
        return dict(self.latest)

    def close(self) -> None:
        self.consumer.close()
