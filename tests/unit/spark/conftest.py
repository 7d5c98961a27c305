"""One local Spark session for the whole unit suite (chispa style), small and quiet."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from spark.jars import ensure_kafka_source_jars


# The Kafka source jars go on this session too: PySpark puts `spark.jars` on the driver classpath
# only when it launches the JVM, so the first session of a pytest run decides for every later one
# (the integration tests run in the same process under bin/test). Package scope: the integration
# module then builds its own session, in the same JVM, with its own settings.
@pytest.fixture(scope="package")
def spark() -> Iterator[SparkSession]:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # read at JVM launch: loopback only
    jars = ensure_kafka_source_jars(log=False)
    session = (
        SparkSession.builder.master("local[2]")
        .config("spark.jars", jars.spark_jars_conf())
        .appName("mm2-validate-unit")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
