"""Offset syncs and checkpoints judged beside the fast path give the per-topic verdict, or none."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from pyspark.sql import SparkSession

from spark import checks, internal_topics, kafka_io
from spark.flow_run import InternalTopics
from spark.report import Status, TopicReport
from tests.unit.spark.test_flow_checks import FLOW

FLOW2 = replace(FLOW, topics={"orders": "primary.orders", "payments": "primary.payments"})


def _run(snapshot: dict[str, Any]) -> Any:
    # Cut: orders p0 [0, 6), p1 [0, 4); payments p0 [2, 5). Target starts at +10 on orders p0.
    cut = {"orders": {0: (0, 6), 1: (0, 4)}, "payments": {0: (2, 5)}}
    return SimpleNamespace(flow=FLOW2, cut=cut, snapshot=snapshot, tgt="TGT", target_isolation="read_committed")


SNAPSHOT = {"orders": {0: (10, 16), 1: (0, 4)}, "payments": {0: (0, 3)}}


def _syncs(spark: SparkSession) -> Any:
    rows = [
        ("orders", 0, 0, 10),
        ("orders", 0, 3, 13),
        ("orders", 0, 4, 15),  # mismatch: u + shift = 14
        ("orders", 1, 2, 2),
        ("payments", 0, 2, 0),
        ("payments", 0, 4, 2),
        ("other", 0, 1, 1),
    ]
    return spark.createDataFrame(rows, "topic string, partition int, upstream_offset long, downstream_offset long")


def _ckpts(spark: SparkSession) -> Any:
    rows = [
        ("g", "primary.orders", 0, 3, 13, 0),
        ("g", "primary.orders", 0, 5, 16, 1),
        ("g", "primary.payments", 0, 3, 1, 0),
    ]
    return spark.createDataFrame(
        rows,
        "group string, topic string, partition int, upstream_offset long, downstream_offset long, ckpt_offset long",
    )


def _verdicts(run: Any, internal: InternalTopics, topic: str) -> tuple[Any, ...]:
    rep = TopicReport(topic, run.flow.topics[topic])
    shift = {p: run.snapshot[topic][p][0] - lo for p, (lo, _) in run.cut[topic].items()}
    n_src = sum(hi - lo for lo, hi in run.cut[topic].values())
    internal_topics.check_offset_syncs(rep, run, topic, None, internal, shift, n_src)
    internal_topics.check_checkpoints(rep, run, topic, None, internal, shift)
    return rep.offset_syncs, rep.checkpoints, [(c.name, c.status, c.detail) for c in rep.checks]


def test_presumed_verdicts_equal_the_per_topic_ones(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kafka_io, "watermarks", lambda cluster, topic, n, iso="": {p: (0, 16) for p in range(n)})
    run = _run(SNAPSHOT)
    per_topic = InternalTopics(syncs=_syncs(spark), ckpts=_ckpts(spark))
    beside = InternalTopics(syncs=_syncs(spark), ckpts=_ckpts(spark))
    with ThreadPoolExecutor(1) as pool:
        internal_topics.start_presumed(spark, run, beside, pool)
        assert beside.presumed is not None
        assert set(beside.presumed.result().syncs) == {"orders", "payments"}
        for topic in ("orders", "payments"):
            assert _verdicts(run, beside, topic) == _verdicts(run, per_topic, topic)
    # It can fail: the orders sync at u=4 points one record off, the checkpoint at U=5 is ahead.
    syncs_check, ckpt_check = _verdicts(run, beside, "orders")[2]
    assert syncs_check[:2] == ("offset_syncs", Status.FAIL) and ckpt_check[:2] == ("checkpoints", Status.FAIL)


def test_no_presumed_verdict_for_a_topic_with_a_partition_missing_on_the_target(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kafka_io, "watermarks", lambda cluster, topic, n, iso="": {p: (0, 16) for p in range(n)})
    run = _run({**SNAPSHOT, "orders": {0: (10, 16)}})
    internal = InternalTopics(syncs=_syncs(spark))
    with ThreadPoolExecutor(1) as pool:
        internal_topics.start_presumed(spark, run, internal, pool)
        assert internal.presumed is not None
        assert set(internal.presumed.result().syncs) == {"payments"}


def test_summaries_by_key_equal_one_summary_per_key(spark: SparkSession) -> None:
    rows = [("a", 0, 1, "ok"), ("a", 0, 2, "mismatch"), ("b", 1, 1, "ok"), ("b", 1, 3, "ok")]
    df = spark.createDataFrame(rows, "key string, part int, u long, status string")
    by_key = checks.summarize_status_by(df, ("part", "u"))
    for key in ("a", "b"):
        assert by_key[key] == checks.summarize_status(df.filter(df.key == key).drop("key"), ("part", "u"))
    assert by_key["b"]["ok"].count == 2
