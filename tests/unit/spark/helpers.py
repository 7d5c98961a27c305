"""Inline Kafka-source rows for the checks: a partition is a list of small record tuples."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from spark.transforms import KAFKA_SCHEMA, project

Record = tuple[str | None, str | None, list[tuple[str, str | None]], int]  # key, value, headers, ts ms


def rec(
    i: int, value: str | None = None, headers: list[tuple[str, str | None]] | None = None, ts: int | None = None
) -> Record:
    return (
        f"k{i}",
        value if value is not None else f"v{i}",
        headers if headers is not None else [("h", f"x{i}")],
        ts or 1_700_000_000_000 + i,
    )


def kafka_rows(spark: SparkSession, partitions: dict[int, list[Record]], topic: str = "t", start: int = 0) -> DataFrame:
    rows: list[tuple[Any, ...]] = []
    for part, records in partitions.items():
        for i, (k, v, hs, ts) in enumerate(records):
            rows.append(
                (
                    None if k is None else k.encode(),
                    None if v is None else v.encode(),
                    topic,
                    part,
                    start + i,
                    datetime.fromtimestamp(ts / 1000, tz=timezone.utc),
                    0,
                    [(hk, None if hv is None else hv.encode()) for hk, hv in hs],
                )
            )
    return spark.createDataFrame(rows, KAFKA_SCHEMA)


def projection(spark: SparkSession, partitions: dict[int, list[Record]], start: int = 0) -> DataFrame:
    return project(kafka_rows(spark, partitions, start=start))
