"""Per-record fingerprints of Kafka records, in Spark SQL (no Python UDF).

A record's identity for replication is its key, value, headers (names, values, order) and
timestamp; topic, partition and offset are where it sits, not what it is. `fp` is SHA-256 over a
length-prefixed encoding of those four fields, so two records share a fingerprint only if all of
them are equal (null and empty are told apart). The cheap 64-bit component hashes (`kh`, `vh`,
`hh`) only serve to say *which* field differs once two records have been paired.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

# The columns Spark's Kafka source produces with includeHeaders=true (tests build inline data
# with this schema).
KAFKA_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
        StructField(
            "headers",
            ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())])),
        ),
    ]
)

# One row per record, the input of every check: where it sits plus what it is.
PROJECTION_COLUMNS = ("part", "off", "fp", "kh", "vh", "hh", "ts")

# `<decimal length or -1>:<bytes>`: unambiguous for any bytes, and null differs from empty.
_ENC = "concat(encode(concat(coalesce(cast(length({x}) as string), '-1'), ':'), 'UTF-8'), coalesce({x}, X''))"
_HEADERS = (
    "concat(encode(concat(cast(coalesce(size(headers), -1) as string), ':'), 'UTF-8'), "
    "aggregate(coalesce(headers, array()), X'', (acc, h) -> concat(acc, "
    + _ENC.format(x="encode(h.key, 'UTF-8')")
    + ", "
    + _ENC.format(x="h.value")
    + ")))"
)


def headers_bytes() -> Column:
    return F.expr(_HEADERS)


def timestamp_ms(col: str = "timestamp") -> Column:
    return F.unix_millis(F.col(col))


def fingerprint() -> Column:
    """SHA-256 (32 bytes) of key, value, headers and timestamp of a Kafka-source row."""
    payload = F.concat(
        F.expr(_ENC.format(x="key")),
        F.expr(_ENC.format(x="value")),
        headers_bytes(),
        F.encode(timestamp_ms().cast("string"), "UTF-8"),
    )
    return F.unhex(F.sha2(payload, 256))


def project(records: DataFrame) -> DataFrame:
    """Kafka-source rows -> (part, off, fp, kh, vh, hh, ts), the only columns kept downstream.

    The encoded fields are computed once and then hashed twice (into `fp` and into their
    component hash): Spark does not inline an expensive expression into two places of the next
    projection, and the headers' encoding is an interpreted higher-order function.
    """
    encoded = records.select(
        F.col("partition").alias("part"),
        F.col("offset").alias("off"),
        F.expr(_ENC.format(x="key")).alias("ek"),
        F.expr(_ENC.format(x="value")).alias("ev"),
        headers_bytes().alias("eh"),
        timestamp_ms().alias("ts"),
    )
    return encoded.select(
        "part",
        "off",
        F.unhex(F.sha2(F.concat("ek", "ev", "eh", F.encode(F.col("ts").cast("string"), "UTF-8")), 256)).alias("fp"),
        F.xxhash64("ek").alias("kh"),
        F.xxhash64("ev").alias("vh"),
        F.xxhash64("eh").alias("hh"),
        "ts",
    )


def differing_fields(left: str, right: str) -> Column:
    """Array of the field names (key, value, headers, timestamp) that differ between two sides."""
    pairs = (("key", "kh"), ("value", "vh"), ("headers", "hh"), ("timestamp", "ts"))
    return F.filter(
        F.array(*[F.when(F.col(f"{left}.{c}") != F.col(f"{right}.{c}"), F.lit(name)) for name, c in pairs]),
        lambda x: x.isNotNull(),
    )
