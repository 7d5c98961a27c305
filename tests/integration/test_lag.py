"""Lag and the data-loss sentinel on real parts: a dev-style stack (one worker) whose lag exporter
is scraped by a real Prometheus loaded with the stack's rules.

1. A paused flow: lag grows in records and seconds past the declared RPO, the RPO alert fires,
   and both clear once the flow resumes.
2. Retention deletes records MM2 has not copied (the flow paused, the source topic's retention
   shrunk behind the stack's back): the exporter counts exactly the deleted offsets, the alert
   fires, `bin/status` names them and exits 3, the Spark stage names them as expired, and
   nothing else is reported lost.
3. A source topic deleted and created again under the same name: reported as re-created, with
   the records of the old topic MM2 had not copied.
4. The exporter on its lagPort: killed, and started again by `up --refresh`, it comes back at the
   same URL, which the scrape job Prometheus was given before scrapes again.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from components.monitoring.rules import Thresholds
from components.platform.local import process as proc
from components.platform.local.layout import lag_exporter_path, process_marker
from components.watch.lag import CAUSE, DELETED
from tests.integration.harness import (
    TestStack,
    connect_auth,
    dev_config_with_free_ports,
    free_port_block,
    kafka_conf,
    produce_batch,
    run_status,
    running,
    wait_until,
)
from tests.integration.prometheus import Prometheus, stack_prometheus
from tests.integration.validation_stage import run_validator

GONE = CAUSE[DELETED]  # the reports' words for records deleted before MM2 copied them

pytestmark = pytest.mark.integration

FLOW = "primary->dr"
RPO_S = 20
SCRAPE = "2s"
FAST = Thresholds(window="30s", latency_for="10s", failure_for="6s", lag_for="6s")
BOUND_S = 120  # exporter reading (5 s) + scrape + evaluation + MM2's offset flush, on 2 busy cores


def lag_config() -> dict[str, Any]:
    cfg = dev_config_with_free_ports()
    config = cfg["config"]
    config["mm2:workerGroups"]["mm2"]["workers"] = 1
    # The exporter on a fixed address, so a restart keeps its URL (the last test).
    config["mm2:workerGroups"]["mm2"]["lagPort"] = free_port_block(1)
    # Retention is enforced every second, not every 5 minutes: the test waits on deletions.
    config["mm2:clusters"]["primary"]["brokerConfig"] = {"log.retention.check.interval.ms": "1000"}
    config["mm2:clusters"]["primary"]["topics"]["expiring"] = {"partitions": 1}
    flow = config["mm2:flows"][FLOW]
    flow["topics"] = ["orders", "payments", "expiring", "recreated"]
    flow["rpo"] = f"{RPO_S}s"
    return cfg


def lag_url(stack: TestStack) -> str:
    url = stack.outputs()["connect"]["mm2"]["lagUrl"]
    assert url.startswith("http://127.0.0.1:"), url
    return str(url)


def scrape(url: str) -> str:
    return httpx.get(f"{url}/metrics", timeout=5).text


def samples(url: str, name: str, text: str | None = None) -> list[tuple[dict[str, str], float]]:
    """Every sample of metric `name` the exporter serves now (or in the scraped `text`), as (labels, value)."""
    out = []
    for line in (scrape(url) if text is None else text).splitlines():
        if line.startswith(name + "{"):
            labels_text, value = line[len(name) + 1 :].rsplit("} ", 1)
            labels = dict(part.split("=", 1) for part in labels_text.split('",') if part)
            out.append(({k: v.strip('"') for k, v in labels.items()}, float(value)))
    return out


def value(url: str, name: str, text: str | None = None, **wanted: str) -> float | None:
    for labels, v in samples(url, name, text):
        if all(labels.get(k) == w for k, w in wanted.items()):
            return v
    return None


def total(url: str, name: str, **wanted: str) -> float:
    return sum(v for labels, v in samples(url, name) if all(labels.get(k) == w for k, w in wanted.items()))


def wait_lag(url: str, topic: str, records: int, what: str, since: float) -> None:
    """Until the exporter serves `records` behind on partition 0 of `topic` from a reading it
    started after `since` (Unix time): a reading from before the records under test were written
    says nothing about them. A timeout names the last value and how old the last reading was."""
    seen: list[tuple[float | None, float | None]] = []

    def reached() -> bool:
        text = scrape(url)
        read_at = value(url, "mm2_lag_last_read_timestamp_seconds", text, flow=FLOW)
        seen.append((read_at, value(url, "mm2_partition_lag_records", text, topic=topic, partition="0")))
        return read_at is not None and read_at > since and seen[-1][1] == records

    try:
        wait_until(reached, BOUND_S, what)
    except AssertionError as exc:
        read_at, lag = seen[-1] if seen else (None, None)
        age = f"{time.time() - read_at:.0f} s ago" if read_at else "never"
        raise AssertionError(
            f"{exc}: lag of {topic}[0] served last {lag}, values seen {sorted({str(v) for _t, v in seen})}; "
            f"the exporter last read {age}, read errors {total(url, 'mm2_lag_read_errors_total')}"
        ) from None


def expired(url: str) -> dict[str, Any]:
    return dict(httpx.get(f"{url}/expired", timeout=5).json())


def source_connector(stack: TestStack) -> str:
    return str(stack.outputs()["flows"][FLOW]["connectors"]["source"])


def set_source_state(stack: TestStack, action: str, state: str) -> None:
    """Pause or resume the flow's source connector behind the stack's back, and wait for the state."""
    out = stack.outputs()
    url, auth, name = out["connect"]["mm2"]["url"], connect_auth(out), source_connector(stack)
    httpx.put(f"{url}/connectors/{name}/{action}", auth=auth, timeout=10).raise_for_status()

    def reached() -> bool:
        status = httpx.get(f"{url}/connectors/{name}/status", auth=auth, timeout=10).json()
        # No task listed is not a task paused: during a reassignment the list is briefly empty.
        return bool(status["tasks"]) and all(s["state"] == state for s in [status["connector"], *status["tasks"]])

    wait_until(reached, 60, f"the source connector {state}", poll_s=0.5)


def wait_copied(stack: TestStack, url: str, topic: str, records: int) -> None:
    """Partition 0 of `topic` holds `records` records (just produced); until the exporter, in a
    reading started after that, sees MM2 past them all (lag 0 then means MM2 committed them)."""
    written = time.time()
    assert watermarks(stack, topic)[1] == records, f"{topic} holds {watermarks(stack, topic)} (start, end)"
    wait_lag(url, topic, 0, f"the {records} records of {topic} copied", since=written)


def admin(stack: TestStack) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(kafka_conf(stack.outputs(), "primary"))


def alter_topic(stack: TestStack, topic: str, **config: str) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    entries = [
        ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET) for k, v in config.items()
    ]
    client = admin(stack)  # kept until the futures resolve: a collected client destroys its handle
    resource = ConfigResource("TOPIC", topic, incremental_configs=entries)
    for future in client.incremental_alter_configs([resource]).values():
        future.result(30)


def watermarks(stack: TestStack, topic: str) -> tuple[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(kafka_conf(stack.outputs(), "primary", **{"group.id": "lag-test-watermarks"}))
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
        return int(low), int(high)
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestStack, Prometheus]]:
    with running(tmp_path_factory.mktemp("lag"), lag_config()) as stack:
        url = lag_url(stack)
        prometheus = stack_prometheus(stack, url, tmp_path_factory.mktemp("prometheus"), FAST, SCRAPE)
        try:
            yield stack, prometheus
        finally:
            prometheus.stop()


def test_a_paused_flow_lags_past_its_rpo_and_recovers(world: tuple[TestStack, Prometheus]) -> None:
    stack, prometheus = world
    url = lag_url(stack)
    wait_until(lambda: value(url, "mm2_flow_lag_records", flow=FLOW) == 0, BOUND_S, "no lag while the flow runs")
    set_source_state(stack, "pause", "PAUSED")
    try:
        produce_batch(stack.outputs(), "primary", "orders", [f"lag-{i}".encode() for i in range(300)])
        behind = wait_until(
            lambda: (v := total(url, "mm2_partition_lag_records", flow=FLOW, topic="orders")) >= 300 and v,
            BOUND_S,
            "300 records of orders behind",
        )
        # The flow's figure is its worst partition's (orders has 3), both from one scrape.
        text = scrape(url)
        assert value(url, "mm2_flow_lag_records", text, flow=FLOW) == max(
            v for labels, v in samples(url, "mm2_partition_lag_records", text) if labels["flow"] == FLOW
        )
        assert behind >= 300
        seconds = wait_until(
            lambda: (v := value(url, "mm2_flow_lag_seconds", flow=FLOW)) and v > RPO_S and v,
            BOUND_S,
            f"lag past the {RPO_S}s RPO",
        )
        print(f"\npaused flow: {behind:.0f} records and {seconds:.0f}s behind")
        fired = wait_until(lambda: prometheus.firing().get("MM2FlowLagAboveRPO"), BOUND_S, "MM2FlowLagAboveRPO firing")
        assert fired[0]["flow"] == FLOW, fired
    finally:
        set_source_state(stack, "resume", "RUNNING")
    wait_until(lambda: value(url, "mm2_flow_lag_records", flow=FLOW) == 0, BOUND_S, "lag back to 0 after resume")
    assert value(url, "mm2_flow_lag_seconds", flow=FLOW) == 0
    wait_until(lambda: "MM2FlowLagAboveRPO" not in prometheus.firing(), BOUND_S, "the RPO alert to clear")
    assert expired(url)["expired"] == [], "a paused flow loses nothing while retention keeps the records"


def test_records_deleted_before_replication_are_named_and_counted(
    world: tuple[TestStack, Prometheus], tmp_path: Path
) -> None:
    stack, prometheus = world
    url, out = lag_url(stack), stack.outputs()
    # MM2 copies the first 10 records and commits them: the sentinel knows where it stands.
    produce_batch(out, "primary", "expiring", [f"kept-{i}".encode() for i in range(10)])
    wait_copied(stack, url, "expiring", 10)
    set_source_state(stack, "pause", "PAUSED")
    try:
        produce_batch(out, "primary", "expiring", [f"doomed-{i}".encode() for i in range(100)])
        # Short segments and retention: keep producing one record at a time (each append after
        # segment.ms rolls the segment) until the log start passes MM2's position.
        alter_topic(stack, "expiring", segment_ms="500", retention_ms="1000")
        run = uuid.uuid4().hex[:6]

        def deleted() -> bool:
            produce_batch(out, "primary", "expiring", [f"trickle-{run}-{time.monotonic()}".encode()])
            return watermarks(stack, "expiring")[0] > 10

        wait_until(deleted, BOUND_S, "retention to delete records MM2 had not copied", poll_s=0.5)
        alter_topic(stack, "expiring", retention_ms="-1")  # nothing more is deleted from here on
        log_start = watermarks(stack, "expiring")[0]
        want = log_start - 10
        found = wait_until(
            lambda: (d := expired(url)["expired"]) and sum(e["count"] for e in d) == want and d,
            BOUND_S,
            f"the exporter to count {want} expired records",
        )
        assert [(e["topic"], e["partition"], e["reason"]) for e in found] == [("expiring", 0, "deleted")] * len(found)
        assert min(e["first"] for e in found) == 10 and max(e["end"] for e in found) == log_start
        assert value(url, "mm2_expired_records_total", topic="expiring", partition="0", reason="deleted") == want
        fired = wait_until(
            lambda: prometheus.firing().get("MM2RecordsExpiredBeforeReplication"), BOUND_S, "the data-loss alert"
        )
        assert fired[0]["topic"] == "expiring", fired
    finally:
        set_source_state(stack, "resume", "RUNNING")
    # MM2 resumes from the log start; the count stays what was lost, no new loss is found.
    wait_lag(url, "expiring", 0, "caught up", since=time.time())
    assert sum(e["count"] for e in expired(url)["expired"]) == want

    status = run_status(stack.outputs(), tmp_path, "--json", env=stack.env)
    assert status.returncode == 3, status.stdout[-3000:] + status.stderr[-3000:]
    print(f"\nexpired before replication: {want} records; bin/status exit {status.returncode}")
    assert f"offsets 10..{log_start - 1}: {want} record(s) {GONE}" in status.stdout

    # The Spark stage fails the flow on them alone, as expired before replication: nothing else
    # is reported lost (the records are gone from the source, the rest arrived).
    report = run_validator(stack, stack.outputs(), tmp_path, expect_exit=1)
    assert report["failedChecks"] == [f"{FLOW}: source_records_expired"], report["failedChecks"]
    detail = report["flows"][FLOW]["checks"]["source_records_expired"]["detail"]
    assert f"expiring[0] offsets 10..{log_start - 1}: {want} record(s) {GONE}" in detail, detail


def _recreate(stack: TestStack, topic: str) -> None:
    from confluent_kafka.admin import NewTopic

    client = admin(stack)
    for future in client.delete_topics([topic], operation_timeout=30).values():
        future.result(60)

    def created() -> bool:
        try:
            for future in client.create_topics([NewTopic(topic, 1, 1)], operation_timeout=30).values():
                future.result(60)
        except Exception as exc:  # still being deleted: TOPIC_ALREADY_EXISTS until the deletion completes
            if "already exists" in str(exc).lower() or "marked for deletion" in str(exc).lower():
                return False
            raise
        return True

    wait_until(created, 60, f"{topic} created again", poll_s=0.5)


def test_a_recreated_source_topic_is_reported_with_what_mm2_had_not_copied(
    world: tuple[TestStack, Prometheus],
) -> None:
    stack, prometheus = world
    url, out = lag_url(stack), stack.outputs()
    from confluent_kafka.admin import NewTopic

    client = admin(stack)
    for future in client.create_topics([NewTopic("recreated", 1, 1)], operation_timeout=30).values():
        future.result(60)
    produce_batch(out, "primary", "recreated", [f"old-{i}".encode() for i in range(20)])
    wait_copied(stack, url, "recreated", 20)
    set_source_state(stack, "pause", "PAUSED")
    try:
        produce_batch(out, "primary", "recreated", [f"unsent-{i}".encode() for i in range(30)])
        wait_lag(url, "recreated", 30, "the exporter to see 30 records not copied", since=time.time())
        _recreate(stack, "recreated")
        produce_batch(out, "primary", "recreated", [f"new-{i}".encode() for i in range(5)])
        new_written = time.time()
        found = wait_until(
            lambda: [e for e in expired(url)["expired"] if e["topic"] == "recreated"] or None,
            BOUND_S,
            "the re-creation reported",
        )
        assert [(e["first"], e["end"], e["count"], e["reason"]) for e in found] == [(20, 50, 30, "recreated")]
        assert value(url, "mm2_source_topic_recreations_total", topic="recreated") == 1
        wait_until(lambda: prometheus.firing().get("MM2SourceTopicRecreated"), BOUND_S, "the re-creation alert")
    finally:
        set_source_state(stack, "resume", "RUNNING")
    # MM2 copies the new topic from its start; the exporter sees it caught up, nothing more lost.
    wait_lag(url, "recreated", 0, "the new topic copied", since=new_written)
    assert [e["count"] for e in expired(url)["expired"] if e["topic"] == "recreated"] == [30]


def test_a_restarted_exporter_keeps_its_lag_port_url(world: tuple[TestStack, Prometheus]) -> None:
    stack, prometheus = world
    port = int(stack.config["config"]["mm2:workerGroups"]["mm2"]["lagPort"])
    url = lag_url(stack)
    assert url == f"http://127.0.0.1:{port}", url
    marker = process_marker(stack.name, lag_exporter_path("mm2"))
    (pid,) = proc.find_pids(marker)

    def scraped(health: str) -> bool:
        jobs = [t for t in prometheus.targets() if t["labels"].get("job") == "mm2-lag-mm2"]
        return bool(jobs) and all(t["health"] == health for t in jobs)

    def serves_metrics() -> bool:
        try:
            answer = httpx.get(f"{url}/metrics", timeout=5)
        except httpx.HTTPError:
            return False
        return answer.status_code == 200 and "mm2_flow_lag_records" in answer.text

    assert serves_metrics(), "the exporter serves /metrics before it is killed"
    os.kill(pid, signal.SIGKILL)  # as a crash: nothing of the stack starts it again on its own
    wait_until(lambda: not proc.find_pids(marker), 30, "the lag exporter to die", poll_s=0.1)
    assert not serves_metrics(), f"{url} still answers with its exporter dead"
    wait_until(lambda: scraped("down"), 60, "Prometheus to see the exporter down", poll_s=0.5)

    stack.up("--refresh")  # refresh finds it dead; up starts it again, on its lagPort
    assert lag_url(stack) == url, "the restart moved the exporter"
    (again,) = wait_until(lambda: proc.find_pids(marker), 30, "the restarted exporter's process")
    assert again != pid
    wait_until(serves_metrics, 60, f"{url}/metrics served again")
    # The scrape job written from the outputs before the restart is still right.
    wait_until(lambda: scraped("up"), 60, "Prometheus to scrape the restarted exporter", poll_s=0.5)
