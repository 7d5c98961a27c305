"""MM2's byte layouts, built by hand with struct (per the notes), decoded in Spark SQL as the Python codec does."""

from __future__ import annotations

import struct

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from components import mm2_records as r
from spark import decoders as d
from tests.unit.components.mm2_record_bytes import CKPT_KEY, CKPT_VALUE, HB_KEY, HB_VALUE, SYNC_KEY, SYNC_VALUE


def test_spark_checkpoint_decoder_matches_python(spark: SparkSession) -> None:
    other = r.encode_checkpoint(r.Checkpoint("g", "dr.orders", 12, 5, 2**33, "x"))
    bad = (CKPT_KEY, struct.pack(">h", 1) + CKPT_VALUE[2:])
    df = spark.createDataFrame([(CKPT_KEY, CKPT_VALUE), other, bad], "key binary, value binary")
    cols = d.checkpoint_columns(F.col("key"), F.col("value"))
    rows = [r.asDict() for r in df.select(*[c.alias(n) for n, c in cols.items()]).collect()]
    assert rows[0] == {
        "group": "consumer-group-1",
        "topic": "primary.test-topic-1",
        "partition": 3,
        "version": 0,
        "upstream_offset": 150,
        "downstream_offset": 251,
        "valid": True,
    }
    assert (rows[1]["group"], rows[1]["topic"], rows[1]["partition"], rows[1]["downstream_offset"]) == (
        "g",
        "dr.orders",
        12,
        2**33,
    )
    assert rows[1]["valid"] is True
    assert rows[2]["valid"] is False  # version 1 is an unknown format


def test_spark_offset_sync_decoder(spark: SparkSession) -> None:
    neg = r.encode_offset_sync(r.OffsetSync("t", -1, -5, 2**62))
    df = spark.createDataFrame([(SYNC_KEY, SYNC_VALUE), neg, (SYNC_KEY, SYNC_VALUE[:8])], "key binary, value binary")
    cols = d.offset_sync_columns(F.col("key"), F.col("value"))
    rows = [tuple(r) for r in df.select(*[c.alias(n) for n, c in cols.items()]).collect()]
    assert rows[0] == ("test-topic-1", 3, 100, 200, True)
    assert rows[1] == ("t", -1, -5, 2**62, True)  # signed big-endian, both widths
    assert rows[2][-1] is False


def test_spark_heartbeat_decoder(spark: SparkSession) -> None:
    df = spark.createDataFrame([(HB_KEY, HB_VALUE), (HB_KEY, HB_VALUE + b"\0")], "key binary, value binary")
    cols = d.heartbeat_columns(F.col("key"), F.col("value"))
    rows = [tuple(r) for r in df.select(*[c.alias(n) for n, c in cols.items()]).collect()]
    assert rows[0] == ("backup", "primary", 0, 1_700_000_000_000, True)
    assert rows[1][-1] is False
