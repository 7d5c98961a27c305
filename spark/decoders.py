"""MM2's internal record formats: checkpoints, offset syncs, heartbeats.

Kafka's non-flexible protocol `Struct`: fields back to back, big-endian, STRING = INT16 length
plus UTF-8 (null not allowed). Checkpoint and Heartbeat values start with an INT16 version (0);
OffsetSync values have none. Layouts: /work/shared/notes/mm2-internals.md section 3.

Two implementations of the same layouts:
- plain Python (`struct`) for the driver's small reads (heartbeat tails, the offset-sync catch-up
  tracker) and for building records in tests;
- Spark SQL column expressions with no Python UDF, so executors decode millions of records in
  the JVM and a cluster deployment needs no Python code shipped to the executors.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column

SUPPORTED_VERSION = 0


class DecodeError(ValueError):
    """Bytes that do not follow the layout (truncated, trailing bytes, unknown version)."""


@dataclass(frozen=True)
class Checkpoint:
    group: str
    topic: str  # the downstream (remote) topic name
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str


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
            raise DecodeError(
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
            raise DecodeError(f"{self.what}: negative string length {n} (null strings are not allowed)")
        return self.take(n).decode("utf-8")

    def version(self) -> None:
        v = self.int16()
        if v != SUPPORTED_VERSION:
            raise DecodeError(f"{self.what}: unknown version {v} (only {SUPPORTED_VERSION} is defined)")

    def end(self) -> None:
        if self.pos != len(self.data):
            raise DecodeError(f"{self.what}: {len(self.data) - self.pos} trailing bytes")


def decode_checkpoint(key: bytes, value: bytes) -> Checkpoint:
    k = _Reader(key, "checkpoint key")
    group, topic, partition = k.string(), k.string(), k.int32()
    k.end()
    v = _Reader(value, "checkpoint value")
    v.version()
    upstream, downstream, metadata = v.int64(), v.int64(), v.string()
    v.end()
    return Checkpoint(group, topic, partition, upstream, downstream, metadata)


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


# --- encoders: the inverse, for tests and synthetic records -----------------------------------


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


# --- Spark SQL decoders -----------------------------------------------------------------------
# substr positions are 1-based. conv(hex, 16, -10) reads the hex digits as a signed two's
# complement 64-bit number, so negative INT64/INT32 values (none expected) decode correctly.


def _int(col: Column, pos: Column | int, nbytes: int) -> Column:
    from pyspark.sql import functions as F

    pos_col = pos if not isinstance(pos, int) else F.lit(pos)
    raw = F.conv(F.hex(col.substr(pos_col, F.lit(nbytes))), 16, -10).cast("long")
    if nbytes == 8:
        return raw
    # conv sign-extends only 64-bit inputs; fold narrower two's complement by hand.
    bound = 1 << (8 * nbytes - 1)
    return F.when(raw >= bound, raw - (2 * bound)).otherwise(raw)


def _str_len(col: Column, pos: Column | int) -> Column:
    return _int(col, pos, 2)


def _str(col: Column, pos: Column | int) -> Column:
    from pyspark.sql import functions as F

    pos_col = pos if not isinstance(pos, int) else F.lit(pos)
    return F.decode(col.substr(pos_col + 2, _str_len(col, pos_col).cast("int")), "UTF-8")


def checkpoint_columns(key: Column, value: Column) -> dict[str, Column]:
    """Columns group, topic, partition, version, upstream_offset, downstream_offset, valid."""
    from pyspark.sql import functions as F

    group_len = _str_len(key, 1)
    topic_pos = (group_len + 3).cast("int")
    topic_len = _str_len(key, topic_pos)
    part_pos = (topic_pos + topic_len + 2).cast("int")
    version = _int(value, 1, 2)
    valid = (
        (F.length(key) == part_pos + 3)
        & (version == SUPPORTED_VERSION)
        & (F.length(value) >= 20)
        & (F.length(value) == 20 + _str_len(value, 19))
    )
    return {
        "group": _str(key, 1),
        "topic": _str(key, topic_pos),
        "partition": _int(key, part_pos, 4).cast("int"),
        "version": version.cast("int"),
        "upstream_offset": _int(value, 3, 8),
        "downstream_offset": _int(value, 11, 8),
        "valid": F.coalesce(valid, F.lit(False)),
    }


def offset_sync_columns(key: Column, value: Column) -> dict[str, Column]:
    """Columns topic, partition, upstream_offset, downstream_offset, valid."""
    from pyspark.sql import functions as F

    topic_len = _str_len(key, 1)
    part_pos = (topic_len + 3).cast("int")
    valid = (F.length(key) == part_pos + 3) & (F.length(value) == 16)
    return {
        "topic": _str(key, 1),
        "partition": _int(key, part_pos, 4).cast("int"),
        "upstream_offset": _int(value, 1, 8),
        "downstream_offset": _int(value, 9, 8),
        "valid": F.coalesce(valid, F.lit(False)),
    }


def heartbeat_columns(key: Column, value: Column) -> dict[str, Column]:
    """Columns source_alias, target_alias, version, timestamp_ms, valid."""
    from pyspark.sql import functions as F

    target_pos = (_str_len(key, 1) + 3).cast("int")
    version = _int(value, 1, 2)
    valid = (
        (F.length(key) == target_pos + 1 + _str_len(key, target_pos))
        & (F.length(value) == 10)
        & (version == SUPPORTED_VERSION)
    )
    return {
        "source_alias": _str(key, 1),
        "target_alias": _str(key, target_pos),
        "version": version.cast("int"),
        "timestamp_ms": _int(value, 3, 8),
        "valid": F.coalesce(valid, F.lit(False)),
    }
