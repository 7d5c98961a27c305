"""The Spark validation stage against two real KRaft brokers, one deliberate fault at a time.

No MM2 here: the test plays MM2 itself. It produces records to a source topic on `primary`,
writes a copy into the remote topic on `dr` (same partition, key, value, headers, timestamp),
and writes offset syncs, checkpoints and heartbeats in MM2's byte format, computed from where
each record actually landed, as MM2 would. The correct copy must pass; each faulty copy must fail
with exactly the check that names its fault. (The lead's dev-stack test runs the validator
against a real MM2 flow.)
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from components import mm2_records as d
from components.platform.local import process as proc
from components.platform.readiness import kafka_answers
from spark import validate
from tests.integration.harness import free_port_block, kafka_retrying, wait_until
from tests.integration.validation_stage import run_stage, run_stage_in_process

pytestmark = pytest.mark.integration

PARTITIONS = 3
PER_PARTITION = 16
FAULT_PARTITION, FAULT_INDEX = 1, 8  # away from the sync points (first, last) and checkpoint (5)
CHECKPOINT_UPSTREAM = 5
SYNCS_TOPIC = "mm2-offset-syncs.dr.internal"  # on primary (offset-syncs.topic.location=source)
CHECKPOINTS_TOPIC = "primary.checkpoints.internal"  # on dr


# --- two brokers, always stopped ------------------------------------------------------------------


def _broker_props(port: int, data_dir: str) -> dict[str, str]:
    return {
        "process.roles": "broker,controller",
        "node.id": "0",
        "controller.quorum.voters": f"0@127.0.0.1:{port + 1}",
        "listeners": f"CLIENT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{port + 1}",
        "advertised.listeners": f"CLIENT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "CLIENT",
        "listener.security.protocol.map": "CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": data_dir,
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "false",
    }


def kafka_libs() -> str:
    """The Kafka jars bin/bootstrap resolved (MM2_KAFKA_LIBS, from .mm2/env). bin/test bootstraps
    and sources that file, so their absence fails the module with the fix; it never skips."""
    import os

    libs = os.environ.get("MM2_KAFKA_LIBS", "")
    if not libs:
        pytest.fail(
            "MM2_KAFKA_LIBS is not set. Fix: run `bin/bootstrap`, then `source .mm2/env` (bin/test does both).",
            pytrace=False,
        )
    if not any(Path(libs).glob("kafka_*.jar")):
        pytest.fail(
            f"no Kafka jars in {libs} (MM2_KAFKA_LIBS). Fix: run `bin/bootstrap` (bin/test does).", pytrace=False
        )
    return libs


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    libs = kafka_libs()
    root = tmp_path_factory.mktemp("spark-validation")
    tag = uuid.uuid4().hex[:8]
    specs: list[tuple[proc.JvmSpec, int]] = []
    bootstraps: dict[str, str] = {}
    try:
        for alias in ("primary", "dr"):
            port = free_port_block(2)
            run_dir = str(root / alias)
            spec = proc.JvmSpec(
                component=f"test broker {alias}",
                marker=f"spark-itest-{tag}/{alias}",
                main_class="kafka.Kafka",
                classpath_dir=libs,
                run_dir=run_dir,
                properties=_broker_props(port, f"{run_dir}/data"),
                heap="384m",
                java=proc.find_java(),
            )
            specs.append((spec, port))
            proc.prepare_run_dir(spec)
            proc.format_storage(spec, "c3BhcmtpdGVzdGNsdXN0ZX")
            pid = proc.start(spec)
            bootstrap = f"127.0.0.1:{port}"
            proc.wait_ready(spec, pid, lambda b=bootstrap: kafka_answers(b, {}), 120)  # type: ignore[misc]
            bootstraps[alias] = bootstrap
        yield bootstraps
    finally:
        for spec, _ in specs:
            proc.stop(spec.marker, grace_s=20)
            proc.remove_run_dir(spec.run_dir)
        # Nothing left behind: no process, no listening port, no directory.
        for spec, port in specs:
            assert proc.find_pids(spec.marker) == [], f"{spec.component} still running"
            assert not proc.port_in_use(port) and not proc.port_in_use(port + 1), f"port {port} still bound"
            assert not Path(spec.run_dir).exists(), f"{spec.run_dir} left behind"


def _admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def _create(bootstrap: str, topic: str, partitions: int, compact: bool = False) -> None:
    from confluent_kafka.admin import NewTopic

    config = {"cleanup.policy": "compact"} if compact else {}
    admin = _admin(bootstrap)  # keep a reference: a collected client cancels its futures
    fut = admin.create_topics([NewTopic(topic, partitions, 1, config=config)])
    for f in fut.values():
        try:
            f.result()
        except Exception as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise


def _producer(bootstrap: str) -> Any:
    from confluent_kafka import Producer

    # Idempotence keeps per-partition order exactly as produced.
    return Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "log_level": 0})


Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]


@pytest.fixture(scope="module")
def heartbeats(brokers: dict[str, str]) -> Iterator[None]:
    """MM2's heartbeat connector for primary->dr: a (primary, dr) heartbeat into dr every 0.5 s."""
    _create(brokers["dr"], "heartbeats", 1, compact=True)
    stop = threading.Event()

    def emit() -> None:
        p = _producer(brokers["dr"])
        while not stop.is_set():
            now = int(time.time() * 1000)
            key, value = d.encode_heartbeat(d.Heartbeat("primary", "dr", now))
            p.produce("heartbeats", key=key, value=value, partition=0, timestamp=now)
            p.poll(0)
            stop.wait(0.5)
        p.flush(10)

    thread = threading.Thread(target=emit, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(15)


@pytest.fixture(scope="module")
def spark(brokers: dict[str, str]) -> Iterator[Any]:
    """One session for the module, with the cached Kafka source jars (the validator's own setup)."""
    args = validate.parse_args(
        ["--conf", "spark.sql.shuffle.partitions=4", "--conf", "spark.ui.enabled=false", "--master", "local[2]"]
    )
    session = validate.build_session(args, validate.ensure_kafka_source_jars())
    yield session
    session.stop()


# --- playing MM2 -----------------------------------------------------------------------------------


def source_records(seed: str) -> dict[int, list[Record]]:
    base = int(time.time() * 1000) - 600_000  # recent: older records would fall to retention
    return {
        p: [
            (
                f"key-{p}-{i}".encode(),
                f"value {seed} {p} {i}".encode() * (1 + i % 3),
                [("trace", f"t{p}{i}".encode()), ("null-header", None)] if i % 2 else [("trace", f"t{p}{i}".encode())],
                base + p * 1000 + i,
            )
            for i in range(PER_PARTITION)
        ]
        for p in range(PARTITIONS)
    }


# A target partition: the records as written, each with the source offset it copies (None: none).
Target = dict[int, list[tuple[int | None, Record]]]


def exact_copy(src: dict[int, list[Record]]) -> Target:
    return {p: [(i, r) for i, r in enumerate(rs)] for p, rs in src.items()}


def fault_missing(t: Target) -> None:
    del t[FAULT_PARTITION][FAULT_INDEX]


def fault_modified_value(t: Target) -> None:
    _, (k, _v, h, ts) = t[FAULT_PARTITION][FAULT_INDEX]
    t[FAULT_PARTITION][FAULT_INDEX] = (None, (k, b"tampered", h, ts))


def fault_changed_header(t: Target) -> None:
    _, (k, v, _h, ts) = t[FAULT_PARTITION][FAULT_INDEX]
    t[FAULT_PARTITION][FAULT_INDEX] = (None, (k, v, [("trace", b"rewritten")], ts))


def fault_duplicate(t: Target) -> None:
    t[FAULT_PARTITION].insert(FAULT_INDEX + 1, t[FAULT_PARTITION][FAULT_INDEX])


def fault_swapped(t: Target) -> None:
    rs = t[FAULT_PARTITION]
    rs[FAULT_INDEX], rs[FAULT_INDEX + 1] = rs[FAULT_INDEX + 1], rs[FAULT_INDEX]


def fault_moved_partition(t: Target) -> None:
    _, rec = t[FAULT_PARTITION].pop(FAULT_INDEX)
    t[FAULT_PARTITION + 1].insert(FAULT_INDEX, (None, rec))  # MM2 would never sync this one


def _write_records(producer: Any, topic: str, partitions: dict[int, list[Record]], transactional: bool) -> None:
    """Each partition's records; transactional: one transaction per partition (a marker after its records)."""
    if transactional:
        producer.init_transactions(30)
    for p, rs in partitions.items():
        if transactional:
            producer.begin_transaction()
        for k, v, h, ts in rs:
            producer.produce(topic, key=k, value=v, headers=h, timestamp=ts, partition=p)
        if transactional:
            producer.commit_transaction(30)
    assert producer.flush(30) == 0


def _txn_producer(bootstrap: str, tag: str) -> Any:
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": bootstrap, "transactional.id": f"itest-{tag}", "log_level": 0})


def write_flow(
    brokers: dict[str, str],
    topic: str,
    fault: Callable[[Target], None] | None,
    ckpt_ahead: bool = False,
    transactional: bool = False,
) -> None:
    src = source_records(topic)
    remote = f"primary.{topic}"
    _create(brokers["primary"], topic, PARTITIONS)
    _create(brokers["dr"], remote, PARTITIONS)
    _create(brokers["primary"], SYNCS_TOPIC, 1, compact=True)
    _create(brokers["dr"], CHECKPOINTS_TOPIC, 1, compact=True)

    sp = _producer(brokers["primary"])
    _write_records(_txn_producer(brokers["primary"], topic) if transactional else sp, topic, src, transactional)

    target = exact_copy(src)
    if fault is not None:
        fault(target)
    tp = _producer(brokers["dr"])
    copies = {p: [r for _, r in entries] for p, entries in target.items()}
    _write_records(_txn_producer(brokers["dr"], remote) if transactional else tp, remote, copies, transactional)

    # Offset syncs at the first and last replicated record of each partition, and checkpoints of
    # group "app" at upstream offset 5: downstream = where the first record >= 5 landed (exact).
    for p, entries in target.items():
        copies = [(so, to) for to, (so, _) in enumerate(entries) if so is not None]
        for so, to in (copies[0], copies[-1]):
            key, value = d.encode_offset_sync(d.OffsetSync(topic, p, so, to))
            sp.produce(SYNCS_TOPIC, key=key, value=value, partition=0)
        exact = min(to for so, to in copies if so >= CHECKPOINT_UPSTREAM)
        downstream = exact + 2 if ckpt_ahead and p == FAULT_PARTITION else exact
        key, value = d.encode_checkpoint(d.Checkpoint("app", remote, p, CHECKPOINT_UPSTREAM, downstream, ""))
        tp.produce(CHECKPOINTS_TOPIC, key=key, value=value, partition=0)
    assert sp.flush(30) == 0 and tp.flush(30) == 0


def flow_outputs(brokers: dict[str, str], topic: str, worker_group: str = "mm2") -> dict[str, Any]:
    """Stack outputs for one flow primary->dr of `topic` (the stage's input)."""
    return {
        "clusters": {
            "primary": {"bootstrap": brokers["primary"], "securityProtocol": "PLAINTEXT"},
            "dr": {"bootstrap": brokers["dr"], "securityProtocol": "PLAINTEXT"},
        },
        "connect": {worker_group: {"url": "http://127.0.0.1:1", "cluster": "dr"}},
        "flows": {
            "primary->dr": {
                "source": "primary",
                "target": "dr",
                "workerGroup": worker_group,
                "connectors": {
                    "source": "mm2-primary-to-dr-source",
                    "checkpoint": "mm2-primary-to-dr-checkpoint",
                    "heartbeat": "mm2-primary-to-dr-heartbeat",
                },
                "states": {"mm2-primary-to-dr-source": "RUNNING"},
                "topics": {topic: f"primary.{topic}"},
                "checkpointsTopic": CHECKPOINTS_TOPIC,
                "offsetSyncsTopic": SYNCS_TOPIC,
                "heartbeatsTopic": "heartbeats",
                "exactlyOnce": True,  # so that a single duplicate is a failure
                "offsetLagMax": 100,
                "groups": [".*"],
            }
        },
    }


def run_validator(spark: Any, outputs: dict[str, Any], tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    run = run_stage_in_process(
        spark, outputs, tmp_path / "report.json", "--catch-up-timeout", "20", "--latency-window", "2", *extra
    )
    return run.code, run.report


# --- the tests ---------------------------------------------------------------------------------------


def test_correct_copy_passes(brokers: dict[str, str], heartbeats: None, spark: Any, tmp_path: Path) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    write_flow(brokers, "orders_ok", None)
    # A group synced by MM2 on the target, at a valid offset.
    admin = _admin(brokers["dr"])
    # The first group request on a fresh broker creates __consumer_offsets: its coordinator may
    # answer "not available" or "loading" for a moment, which Kafka marks retriable.
    kafka_retrying(
        lambda: admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions("app", [TopicPartition("primary.orders_ok", 0, 5)])]
        )["app"].result(),
        "committing group app's offset on dr",
    )
    code, report = run_validator(spark, flow_outputs(brokers, "orders_ok"), tmp_path)
    assert report["failedChecks"] == [] and code == 0, json.dumps(report, indent=1)[:6000]
    flow = report["flows"]["primary->dr"]
    topic = flow["topics"]["orders_ok"]
    assert [p["matched"] for p in topic["partitions"]] == [PER_PARTITION] * PARTITIONS
    # A healthy run never touches the exact path: every partition decided by its fingerprint.
    assert [p["path"] for p in topic["partitions"]] == ["fast"] * PARTITIONS
    assert report["meta"]["partitionsByPath"] == {"fast": PARTITIONS}
    assert [(p["sourceCount"], p["targetCount"], p["lag"]) for p in topic["partitions"]] == [
        (PER_PARTITION, PER_PARTITION, 0)
    ] * PARTITIONS
    assert {name: c["status"] for name, c in topic["checks"].items()} == {
        "completeness": "pass",
        "partitioning": "pass",
        "integrity": "pass",
        "order": "pass",
        "duplicates": "pass",
        "unexpected_records": "pass",
        "catch_up": "pass",
        "offset_syncs": "pass",
        "checkpoints": "pass",
    }
    assert topic["offsetSyncs"]["ok"]["count"] == 2 * PARTITIONS
    assert topic["checkpoints"]["ok"]["count"] == PARTITIONS
    assert flow["checks"]["group_offsets"]["status"] == "pass"
    assert flow["checks"]["heartbeats"]["status"] == "pass"
    assert flow["heartbeats"]["latencyMs"]["heartbeats"]["samples"] >= 1
    samples = flow["heartbeats"]["samples"]["heartbeats"]
    assert samples and all(len(s) == 2 and s[0] > 1e12 and s[1] >= 0 for s in samples), samples[:3]
    # No group has offsets on the source here: nothing to checkpoint is not a failure.
    assert flow["checks"]["checkpoints"]["status"] == "skip"
    assert report["checks"]["loops"]["status"] == "pass"


# name, fault, checkpoint ahead, transactional, failing check, evidence, partitions the fast path defers
FAULTS = [
    ("missing", fault_missing, False, False, "completeness", "src@8", [1]),
    ("modified", fault_modified_value, False, False, "integrity", "[value]", [1]),
    ("header", fault_changed_header, False, False, "integrity", "[headers]", [1]),
    ("duplicate", fault_duplicate, False, False, "duplicates", "tgt@9", [1]),
    ("swapped", fault_swapped, False, False, "order", "src@8", [1]),
    ("moved", fault_moved_partition, False, False, "partitioning", "partition 2", [1, 2]),
    ("ckptahead", None, True, False, "checkpoints", "ahead", []),
    # Transaction markers leave offset gaps: no partition is decidable by position, all go exact.
    ("txn", fault_missing, False, True, "completeness", "src@8", [0, 1, 2]),
]


@pytest.mark.parametrize(
    ("name", "fault", "ckpt_ahead", "txn", "check", "evidence", "deferred"), FAULTS, ids=[f[0] for f in FAULTS]
)
def test_each_fault_is_reported_exactly(
    brokers: dict[str, str],
    heartbeats: None,
    spark: Any,
    tmp_path: Path,
    name: str,
    fault: Callable[[Target], None] | None,
    ckpt_ahead: bool,
    txn: bool,
    check: str,
    evidence: str,
    deferred: list[int],
) -> None:
    topic = f"orders_{name}"
    write_flow(brokers, topic, fault, ckpt_ahead, transactional=txn)
    code, report = run_validator(spark, flow_outputs(brokers, topic), tmp_path)
    assert code == 1
    assert report["failedChecks"] == [f"primary->dr: {topic}: {check}"], json.dumps(report, indent=1)[:6000]
    detail = report["flows"]["primary->dr"]["topics"][topic]["checks"][check]["detail"]
    assert evidence in detail, detail
    # Only the faulty partition is affected, and only it takes the exact path.
    parts = report["flows"]["primary->dr"]["topics"][topic]["partitions"]
    assert parts[0]["matched"] == PER_PARTITION
    assert [p["partition"] for p in parts if p["path"] == "exact"] == deferred, parts
    if txn:
        assert all("not contiguous" in p["fastPathReason"] for p in parts), parts


# Alignment (spark.alignment) on real reads, forced onto these small partitions: blocks of 2, no
# minimum. name, fault, whether the region's result stands (a duplicate sends it back whole).
ALIGNED = [("missing", fault_missing, True), ("swapped", fault_swapped, True), ("duplicate", fault_duplicate, False)]


@pytest.mark.parametrize(("name", "fault", "narrowed"), ALIGNED, ids=[a[0] for a in ALIGNED])
def test_aligned_partitions_get_the_same_verdicts(
    brokers: dict[str, str],
    heartbeats: None,
    spark: Any,
    tmp_path: Path,
    name: str,
    fault: Callable[[Target], None],
    narrowed: bool,
) -> None:
    """Same failing check and evidence as whole matching (FAULTS), offset syncs and checkpoints
    (at the first, last and fifth records: around the region) still verified."""
    topic = f"orders_aligned_{name}"
    write_flow(brokers, topic, fault)
    spark.conf.set("spark.mm2.validate.alignBlock", "2")
    spark.conf.set("spark.mm2.validate.alignMinRecords", "1")
    try:
        code, report = run_validator(spark, flow_outputs(brokers, topic), tmp_path)
    finally:
        spark.conf.unset("spark.mm2.validate.alignBlock")
        spark.conf.unset("spark.mm2.validate.alignMinRecords")
    _, _, _, _, check, evidence, deferred = next(f for f in FAULTS if f[0] == name)
    assert code == 1
    assert report["failedChecks"] == [f"primary->dr: {topic}: {check}"], json.dumps(report, indent=1)[:6000]
    got = report["flows"]["primary->dr"]["topics"][topic]
    assert evidence in got["checks"][check]["detail"], got["checks"][check]
    parts = got["partitions"]
    assert [p["partition"] for p in parts if p["path"] == "exact"] == deferred, parts
    assert ("alignedOutsideRegion" in parts[FAULT_PARTITION]) is narrowed, parts[FAULT_PARTITION]
    assert (got["checks"]["offset_syncs"]["status"], got["checks"]["checkpoints"]["status"]) == ("pass", "pass")


def fault_lost_tail(t: Target) -> None:
    del t[FAULT_PARTITION][-1]


def test_lost_records_end_the_wait_once_mm2_has_consumed_them(
    brokers: dict[str, str], heartbeats: None, spark: Any, tmp_path: Path
) -> None:
    """The last record before the cut of one partition never reached the target (no offset sync
    proves it), but MM2's committed source offsets, in the worker group's offsets topic as Connect
    writes them, are past it: the wait ends once the target stays quiet, not at the timeout, and
    the verdict is a lost record (completeness), not lag (catch_up)."""
    topic, group = "orders_lost", "mm2lost"  # its own worker group: other tests keep theirs unreadable
    write_flow(brokers, topic, fault_lost_tail)
    offsets_topic = f"mm2-{group}-offsets"
    _create(brokers["dr"], offsets_topic, 5, compact=True)
    producer = _producer(brokers["dr"])
    for p in range(PARTITIONS):
        key = json.dumps(["mm2-primary-to-dr-source", {"cluster": "primary", "partition": p, "topic": topic}])
        value = json.dumps({"offset": PER_PARTITION - 1})  # the last record before the cut was processed
        producer.produce(offsets_topic, key=key.encode(), value=value.encode(), partition=p % 5)
    assert producer.flush(30) == 0
    outputs = flow_outputs(brokers, topic, worker_group=group)
    code, report = run_validator(spark, outputs, tmp_path, "--catch-up-quiet", "2")
    assert code == 1
    assert report["failedChecks"] == [f"primary->dr: {topic}: completeness"], json.dumps(report, indent=1)[:6000]
    catch_up = report["flows"]["primary->dr"]["catchUp"]
    assert catch_up["ended"] == "settled" and catch_up["lag"] == 0, catch_up
    assert catch_up["waitedSeconds"] < 20, catch_up  # the timeout run_validator sets
    detail = report["flows"]["primary->dr"]["topics"][topic]["checks"]["completeness"]["detail"]
    assert f"src@{PER_PARTITION - 1}" in detail, detail


def test_group_without_checkpoints_fails(brokers: dict[str, str], heartbeats: None, spark: Any, tmp_path: Path) -> None:
    """Strict: a replicated group with offsets on the source but no checkpoint FAILs after the wait."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    write_flow(brokers, "orders_nockpt", None)
    admin = _admin(brokers["primary"])
    kafka_retrying(
        lambda: admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions("lonely", [TopicPartition("orders_nockpt", 0, 3)])]
        )["lonely"].result(),
        "committing group lonely's offset on primary",
    )
    code, report = run_validator(spark, flow_outputs(brokers, "orders_nockpt"), tmp_path, "--checkpoint-wait", "3")
    assert code == 1
    assert report["failedChecks"] == ["primary->dr: checkpoints"], json.dumps(report, indent=1)[:6000]
    detail = report["flows"]["primary->dr"]["checks"]["checkpoints"]["detail"]
    assert "lonely" in detail and "no checkpoint" in detail, detail


def test_loop_topic_is_reported(brokers: dict[str, str], heartbeats: None, spark: Any, tmp_path: Path) -> None:
    write_flow(brokers, "orders_loop", None)
    _create(brokers["primary"], "dr.primary.orders_loop", 1)  # only a dr->primary flow could make it
    try:
        code, report = run_validator(spark, flow_outputs(brokers, "orders_loop"), tmp_path)
    finally:
        admin = _admin(brokers["primary"])
        admin.delete_topics(["dr.primary.orders_loop"])["dr.primary.orders_loop"].result()
        # Deletion completes asynchronously: later tests check for loops, so wait until it is gone.
        wait_until(
            lambda: "dr.primary.orders_loop" not in admin.list_topics(timeout=10).topics,
            60,
            "dr.primary.orders_loop to be deleted",
        )
    assert code == 1
    assert report["failedChecks"] == ["loops"]
    assert report["loops"] == [
        {
            "cluster": "primary",
            "topic": "dr.primary.orders_loop",
            "reason": "looks replicated from 'dr', but no flow dr->primary is declared",
        }
    ]


def test_cli_end_to_end(brokers: dict[str, str], heartbeats: None, tmp_path: Path) -> None:
    """bin/validate as a user runs it: its own Spark session, table on stdout, exit status."""
    write_flow(brokers, "orders_cli", fault_missing)
    report = tmp_path / "cli.json"
    out = run_stage(
        flow_outputs(brokers, "orders_cli"),
        report,
        os.environ,
        *("--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=4"),
        *("--catch-up-timeout", "20", "--latency-window", "1"),
        timeout_s=600,
    )
    assert out.code == 1, out.stdout + out.stderr[-3000:]
    # The stage's own lines only: no Spark console progress bars.
    assert "[Stage " not in out.stdout + out.stderr, out.stderr[-3000:]
    assert "fast path:" in out.stderr
    assert "RESULT: FAIL (1 failed check(s))" in out.stdout
    assert "primary->dr: orders_cli: completeness" in out.stdout
    assert out.report["failedChecks"] == ["primary->dr: orders_cli: completeness"]
    assert f"report: {report}" in out.stdout and f"html report: {report.with_suffix('.html')}" in out.stdout
    assert report.with_suffix(".html").read_text().startswith("<!DOCTYPE html>")
