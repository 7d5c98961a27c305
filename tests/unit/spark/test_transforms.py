"""Fingerprints: equal exactly when key, value, headers and timestamp are equal."""

from __future__ import annotations

from pyspark.sql import SparkSession

from spark.transforms import PROJECTION_COLUMNS
from tests.unit.spark.helpers import Record, projection, rec


def fps(spark: SparkSession, records: list[Record]) -> list[tuple[int, int]]:
    return [tuple(r["fp"]) for r in projection(spark, {0: records}).orderBy("off").collect()]


def test_projection_columns_and_types(spark: SparkSession) -> None:
    df = projection(spark, {2: [rec(0)]}, start=40)
    assert tuple(df.columns) == PROJECTION_COLUMNS
    row = df.first()
    assert row is not None
    assert (row["part"], row["off"], row["ts"]) == (2, 40, 1_700_000_000_000)
    a, b = row["fp"]["a"], row["fp"]["b"]
    assert isinstance(a, int) and isinstance(b, int) and a != b  # two independent 64-bit halves


def test_same_content_same_fingerprint_anywhere(spark: SparkSession) -> None:
    a = projection(spark, {0: [rec(1)]}, start=0).first()
    b = projection(spark, {5: [rec(1)]}, start=999).first()
    assert a is not None and b is not None and a["fp"] == b["fp"]


def test_every_field_changes_the_fingerprint(spark: SparkSession) -> None:
    base: Record = ("k", "v", [("h", "1")], 5)
    variants: list[Record] = [
        base,
        ("k2", "v", [("h", "1")], 5),
        ("k", "v2", [("h", "1")], 5),
        ("k", "v", [("h", "2")], 5),
        ("k", "v", [("h2", "1")], 5),
        ("k", "v", [("h", "1"), ("h", "1")], 5),
        ("k", "v", [], 5),
        ("k", "v", [("h", "1")], 6),
        (None, "v", [("h", "1")], 5),
        ("", "v", [("h", "1")], 5),
        ("k", None, [("h", "1")], 5),
        ("k", "v", [("h", None)], 5),
        ("k", "v", [("h", "")], 5),
        # Field boundaries cannot shift: "kv"+"" differs from "k"+"v".
        ("kv", "", [("h", "1")], 5),
    ]
    got = fps(spark, variants)
    assert len(set(got)) == len(variants)


def test_component_hashes_name_the_changed_field(spark: SparkSession) -> None:
    rows = projection(spark, {0: [("k", "v", [("h", "1")], 5), ("k", "w", [("h", "1")], 5)]}).orderBy("off").collect()
    assert rows[0]["kh"] == rows[1]["kh"] and rows[0]["hh"] == rows[1]["hh"]
    assert rows[0]["vh"] != rows[1]["vh"]
