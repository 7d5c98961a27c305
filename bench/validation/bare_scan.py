"""The engine's floor: a bare Spark scan of both topics, with the validator's own session settings.

    python -m bench.validation.bare_scan --outputs outputs.json --topic orders --remote primary.orders

Reads every record of the source topic and of its remote topic with Spark's Kafka source (all
columns, headers included, exactly the reader options the validator uses) and reduces them to a
per-partition count and byte sum, so every field is materialised; nothing is compared. Its wall
time is what any Spark validation of these topics must pay at least.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from spark import kafka_io, validate  # noqa: E402
from spark.jars import ensure_kafka_source_jars  # noqa: E402
from spark.outputs import read_outputs_file  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--outputs", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--remote", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    from pyspark.sql import functions as F

    scope = read_outputs_file(a.outputs)
    src, tgt = scope.clusters["primary"], scope.clusters["dr"]
    ranges = {
        "src": kafka_io.watermarks(src, a.topic, kafka_io.list_topics(src)[a.topic]),
        "tgt": kafka_io.watermarks(tgt, a.remote, kafka_io.list_topics(tgt)[a.remote]),
    }
    spark = validate.build_session(validate.parse_args([]), ensure_kafka_source_jars(log=False))
    try:
        t0 = time.monotonic()
        frames = [
            kafka_io.spark_read(spark, src, a.topic, ranges["src"]).withColumn("side", F.lit(0)),
            kafka_io.spark_read(spark, tgt, a.remote, ranges["tgt"]).withColumn("side", F.lit(1)),
        ]
        size = (
            F.coalesce(F.length("key"), F.lit(0))
            + F.coalesce(F.length("value"), F.lit(0))
            + F.coalesce(F.size("headers"), F.lit(0))
            + F.unix_millis("timestamp") % 2
        )
        rows = (
            frames[0]
            .unionByName(frames[1])
            .groupBy("side", "partition")
            .agg(F.count(F.lit(1)).alias("n"), F.sum(size).alias("bytes"))
            .collect()
        )
        scan_s = time.monotonic() - t0
    finally:
        spark.stop()
    records = sum(int(r["n"]) for r in rows)
    Path(a.out).write_text(json.dumps({"records": records, "scan_s": round(scan_s, 2)}))
    print(f"bare scan: {records} records in {scan_s:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
