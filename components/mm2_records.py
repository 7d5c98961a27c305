"""MM2's internal record formats: checkpoints, offset syncs, heartbeats. Pure: bytes in, values out.

Kafka's non-flexible protocol `Struct`: fields back to back, big-endian, STRING = INT16 length
plus UTF-8 (null not allowed). Checkpoint and Heartbeat values start with an INT16 version (0);
OffsetSync values have none. Layouts: mm2-internals.md section 3.

One codec for every reader: the failover reads checkpoints with it, the Spark stage reads
heartbeat tails and offset syncs with it on the driver (its Spark SQL twin for executors is
`spark/decoders.py`), and tests and drills build records with the encoders.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass

SUPPORTED_VERSION = 0


class RecordFormatError(ValueError):
    """Bytes that do not follow MM2's layout (truncated, trailing bytes, unknown version)."""


@dataclass(frozen=True)
class Checkpoint:
    group: str
    topic: str  # the remote (downstream) topic name, e.g. primary.orders
    partition: int
    upstream_offset: int  # the group's committed offset on the source cluster
    downstream_offset: int  # the translated offset on the target cluster
    metadata: str = ""
    timestamp_ms: int = 0  # the record's timestamp: when MM2 listed the source group's offsets


@dataclass(frozen=True)
class OffsetSync:
    topic: str  # the upstream (source) topic name
    partition: int
    upstream_offset: int
    downstream_offset: int


@dataclass(frozen=True)
class Heartbeat:
    source_alias: str
    target_alias: str
    timestamp_ms: int


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise RecordFormatError(
                f"{self.what}: truncated at byte {self.pos} (need {n} more, have {len(self.data) - self.pos})"
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        return int(struct.unpack(">h", self.take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self.take(4))[0])

    def int64(self) -> int:
        return int(struct.unpack(">q", self.take(8))[0])

    def string(self) -> str:
        n = self.int16()
        if n < 0:
            raise RecordFormatError(f"{self.what}: negative string length {n} (null strings are not allowed)")
        return self.take(n).decode("utf-8")

    def version(self) -> None:
        v = self.int16()
        if v != SUPPORTED_VERSION:
            raise RecordFormatError(f"{self.what}: unknown version {v} (only {SUPPORTED_VERSION} is defined)")

    def end(self) -> None:
        if self.pos != len(self.data):
            raise RecordFormatError(f"{self.what}: {len(self.data) - self.pos} trailing bytes")


def decode_checkpoint(key: bytes, value: bytes, timestamp_ms: int = 0) -> Checkpoint:
    """One record of `<source>.checkpoints.internal`; `timestamp_ms` is the record's timestamp."""
    k = _Reader(key, "checkpoint key")
    group, topic, partition = k.string(), k.string(), k.int32()
    k.end()
    v = _Reader(value, "checkpoint value")
    v.version()
    upstream, downstream, metadata = v.int64(), v.int64(), v.string()
    v.end()
    return Checkpoint(group, topic, partition, upstream, downstream, metadata, timestamp_ms)


def decode_offset_sync(key: bytes, value: bytes) -> OffsetSync:
    k = _Reader(key, "offset-sync key")
    topic, partition = k.string(), k.int32()
    k.end()
    v = _Reader(value, "offset-sync value")
    upstream, downstream = v.int64(), v.int64()
    v.end()
    return OffsetSync(topic, partition, upstream, downstream)


def decode_heartbeat(key: bytes, value: bytes) -> Heartbeat:
    k = _Reader(key, "heartbeat key")
    source, target = k.string(), k.string()
    k.end()
    v = _Reader(value, "heartbeat value")
    v.version()
    timestamp = v.int64()
    v.end()
    return Heartbeat(source, target, timestamp)


# --- encoders: the inverse, as MM2 writes the records (for tests, drills, synthetic records) ---


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack(">h", len(raw)) + raw


def encode_checkpoint(c: Checkpoint) -> tuple[bytes, bytes]:
    key = _string(c.group) + _string(c.topic) + struct.pack(">i", c.partition)
    value = struct.pack(">hqq", SUPPORTED_VERSION, c.upstream_offset, c.downstream_offset) + _string(c.metadata)
    return key, value


def encode_offset_sync(s: OffsetSync) -> tuple[bytes, bytes]:
    return _string(s.topic) + struct.pack(">i", s.partition), struct.pack(">qq", s.upstream_offset, s.downstream_offset)


def encode_heartbeat(h: Heartbeat) -> tuple[bytes, bytes]:
    return _string(h.source_alias) + _string(h.target_alias), struct.pack(">hq", SUPPORTED_VERSION, h.timestamp_ms)


def decode_source_offset(
    key: bytes | None, value: bytes | None, connector: str, source: str
) -> tuple[tuple[str, int], int | None] | None:
    """A record of a worker group's offsets topic (Connect's source offsets, keyed
    `["<connector>", {"cluster": <source alias>, "partition": p, "topic": t}]`, valued `{"offset": o}`,
    o the last source record the MirrorSourceConnector processed):
    ((topic, partition), offset) for a record of `connector` replicating from `source`;
    offset None for a reset (tombstone); None for any other record."""
    try:
        name, part = json.loads(key or b"")
    except (ValueError, TypeError):
        return None
    if name != connector or not isinstance(part, dict) or part.get("cluster") != source:
        return None
    topic, partition = part.get("topic"), part.get("partition")
    if not isinstance(topic, str) or not isinstance(partition, int):
        return None
    if value is None:
        return (topic, partition), None
    try:
        offset = json.loads(value).get("offset")
    except (ValueError, AttributeError):
        return None
    return ((topic, partition), offset) if isinstance(offset, int) else None
