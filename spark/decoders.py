"""MM2's internal record formats as Spark SQL column expressions: checkpoints, offset syncs, heartbeats.

The Spark twin of `components/mm2_records.py` (the plain-Python codec the driver and the
operator commands use): the same layouts, decoded with no Python UDF, so executors decode
millions of records in the JVM and a cluster deployment needs no Python code shipped to them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from components.mm2_records import SUPPORTED_VERSION

if TYPE_CHECKING:
    from pyspark.sql import Column

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
