"""Rolling restarts and reverse heartbeats on real processes (one shared copy of the dev stack, its
flow with `reverseHeartbeats: true`).

- Reverse heartbeats, keyed (dr, primary), arrive in `heartbeats` on the flow's source cluster.
- A worker-config change under a steady stream restarts the group's two workers one at a time:
  at every sampled moment at least one worker answers on REST, both workers did restart (new
  pids), and the Spark stage finds nothing lost (its heartbeat check covers the reverse ones too).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from components.mm2_records import RecordFormatError, decode_heartbeat
from components.platform.local import process as proc
from components.platform.local.layout import process_marker, worker_path
from tests.integration.harness import (
    TestStack,
    connect_auth,
    dev_config_with_free_ports,
    kafka_conf,
    running,
    wait_until,
)
from tests.integration.records import produce_paced
from tests.integration.sampling import PROBE_S, sample_at_once
from tests.integration.validation_stage import run_stage

pytestmark = pytest.mark.integration

FLOW = "primary->dr"
GROUP = "mm2"
WAIT_S = 240
SPARK_ARGS = ("--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=4", "--latency-window", "1")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestStack]:
    config = dev_config_with_free_ports()
    config["config"]["mm2:flows"][FLOW]["reverseHeartbeats"] = True
    with running(tmp_path_factory.mktemp("rolling"), config) as s:
        yield s


def _reverse_heartbeat_seen(out: dict[str, Any]) -> bool:
    """True when `heartbeats` on primary holds a heartbeat from (dr, primary)."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        kafka_conf(out, "primary", **{"group.id": f"itest-rhb-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest"})
    )
    consumer.subscribe(["heartbeats"])
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error() is not None:
                continue
            try:
                hb = decode_heartbeat(msg.key() or b"", msg.value() or b"")
            except RecordFormatError:
                continue
            if (hb.source_alias, hb.target_alias) == ("dr", "primary"):
                return True
    finally:
        consumer.close()
    return False


def test_reverse_heartbeats_arrive_on_the_source(stack: TestStack) -> None:
    out = stack.outputs()
    reverse = out["flows"][FLOW]["reverseHeartbeats"]
    assert reverse == {"connector": "mm2-primary-to-dr-reverse-heartbeat", "cluster": "primary", "topic": "heartbeats"}
    assert out["flows"][FLOW]["states"][reverse["connector"]] == "RUNNING"
    wait_until(lambda: _reverse_heartbeat_seen(out), WAIT_S, "a (dr, primary) heartbeat in heartbeats on primary")


def _stream(out: dict[str, Any], stop: threading.Event, rate: float, acked: list[int]) -> None:
    """`rate` records/s into orders on primary until `stop`; counts what the broker acknowledged."""
    from confluent_kafka import Producer

    producer = Producer(kafka_conf(out, "primary", **{"enable.idempotence": True, "linger.ms": 5}))
    sent = produce_paced(
        producer, "orders", lambda n: f"roll-{n:07d}".encode(), b"x" * 50, rate=rate, stop=stop,
        on_delivery=lambda e, _m: None,
    )  # fmt: skip
    assert producer.flush(60) == 0, "the stream's producer could not flush within 60s"
    acked.append(sent)


def answer_s(http: httpx.Client, url: str) -> float | None:
    """Seconds the worker at `url` took to answer `GET /` with 200; None when it refused, failed or
    did not answer within PROBE_S."""
    started = time.monotonic()
    try:
        status = http.get(f"{url}/").status_code
    except httpx.HTTPError:
        return None
    return time.monotonic() - started if status == 200 else None


def sample_workers(
    urls: list[str], auth: tuple[str, str] | None, stop: threading.Event, samples: list[list[float | None]]
) -> None:
    """Each worker's answer time to `GET /` (None: down), sampled with `sample_at_once`."""
    # No keep-alive: every probe connects afresh, so a stopped worker refuses at once instead of
    # failing on a pooled connection to its old process.
    limits = httpx.Limits(max_keepalive_connections=0)
    with httpx.Client(timeout=PROBE_S, auth=auth, limits=limits) as http:
        sample_at_once(lambda url: answer_s(http, url), urls, stop, samples)


def spark_report(out: dict[str, Any], tmp: Path) -> dict[str, Any]:
    """The Spark stage on the stack's outputs (a 0600 file, removed afterwards); its JSON report."""
    command = (sys.executable, "-m", "spark.validate")
    return run_stage(out, tmp / "report.json", os.environ, *SPARK_ARGS, command=command, timeout_s=600).report


def test_rolling_worker_restart_keeps_a_worker_up_and_loses_nothing(stack: TestStack, tmp_path: Path) -> None:
    out = stack.outputs()
    port = int(stack.config["config"]["mm2:workerGroups"][GROUP]["restPort"])
    urls = [f"http://127.0.0.1:{port + i}" for i in range(2)]
    markers = [process_marker(stack.name, worker_path(GROUP, i)) for i in range(2)]
    pids_before = [proc.find_pids(m) for m in markers]
    stack.config["config"]["mm2:workerGroups"][GROUP]["workerConfig"] = {"offset.flush.interval.ms": "2000"}
    stack.write_config()

    stop, acked = threading.Event(), []
    samples: list[list[float | None]] = []
    threads = [
        threading.Thread(target=_stream, args=(out, stop, 200.0, acked)),
        threading.Thread(target=sample_workers, args=(urls, connect_auth(out, GROUP), stop, samples)),
    ]
    for t in threads:
        t.start()
    try:
        up = stack.pulumi("up", "--yes", "--skip-preview", check=False)
    finally:
        stop.set()
        for t in threads:
            t.join(90)
    assert up.returncode == 0, f"pulumi up failed:\n{up.stdout[-4000:]}\n{up.stderr[-2000:]}"
    pids_after = [proc.find_pids(m) for m in markers]
    assert all(a and a != b for a, b in zip(pids_after, pids_before, strict=True)), (
        f"both workers should have restarted: pids {pids_before} -> {pids_after}"
    )
    answers = [a for row in samples for a in row if a is not None]
    down = [i for i, row in enumerate(samples) if all(a is None for a in row)]
    partial = sum(1 for row in samples if any(a is None for a in row))
    print(f"\n[rolling] {len(samples)} samples, {partial} with one worker down, {len(down)} with none up")
    print(f"[rolling] slowest GET / answer {max(answers, default=0.0):.2f}s (bound {PROBE_S:g}s)")
    assert partial > 0, "no sample caught a worker restarting: the sampling proves nothing"
    assert down == [], f"no worker answered at {len(down)} sampled moment(s), first at sample {down[0]}"
    assert acked and acked[0] > 0

    report = spark_report(stack.outputs(), tmp_path)
    flow = report["flows"][FLOW]
    incomplete = {t: v["checks"]["completeness"] for t, v in flow["topics"].items() if "completeness" in v["checks"]}
    assert incomplete and all(c["status"] == "pass" for c in incomplete.values()), json.dumps(incomplete, indent=1)
    heartbeats = flow["checks"]["heartbeats"]
    assert heartbeats["status"] == "pass" and "reverse heartbeat" in heartbeats["detail"], heartbeats


def test_a_roll_stops_at_a_worker_that_does_not_come_back(stack: TestStack) -> None:
    """A worker setting Connect rejects at start: the first worker to restart exits, the roll stops
    there, and the other worker keeps running its old process; the `up` fails naming both."""
    markers = [process_marker(stack.name, worker_path(GROUP, i)) for i in range(2)]
    pids_before = [proc.find_pids(m) for m in markers]
    assert all(pids_before), f"both workers should run before the change: {pids_before}"
    stack.config["config"]["mm2:workerGroups"][GROUP]["workerConfig"] = {"offset.flush.interval.ms": "not-a-number"}
    stack.write_config()
    up = stack.pulumi("up", "--yes", "--skip-preview", check=False)
    text = up.stdout + up.stderr
    assert up.returncode != 0, f"the up should fail:\n{text[-3000:]}"
    pids_after = [proc.find_pids(m) for m in markers]
    kept = [i for i in range(2) if pids_after[i] == pids_before[i]]
    assert len(kept) == 1, f"exactly one worker should keep its process: pids {pids_before} -> {pids_after}"
    failed = 1 - kept[0]
    assert pids_after[failed] == [], f"worker {failed} should be stopped, runs {pids_after[failed]}"
    assert f"ConnectWorkerGroup '{GROUP}', worker {failed}: the process exited during start-up" in text, text[-4000:]
    assert "offset.flush.interval.ms" in text, "the error should quote the log line naming the bad setting"
    assert f"ConnectWorkerGroup '{GROUP}', worker {kept[0]}: not restarted, left running" in text, text[-4000:]
    urls = [
        f"http://127.0.0.1:{int(stack.config['config']['mm2:workerGroups'][GROUP]['restPort']) + i}" for i in (0, 1)
    ]
    answer = httpx.get(f"{urls[kept[0]]}/connectors", auth=connect_auth(stack.outputs(), GROUP), timeout=10)
    assert answer.status_code == 200, f"the worker left running should still serve: {answer.status_code}"

    assert "pulumi up --refresh" in text, text[-4000:]

    # The user's fix, as the error says: the setting taken back out, `up --refresh`; the stopped
    # worker starts with the good properties. (The one left running is restarted too, though its
    # properties never changed: seen 2026-11-23, cause not found yet.)
    del stack.config["config"]["mm2:workerGroups"][GROUP]["workerConfig"]
    stack.write_config()
    stack.up("--refresh")
    pids_fixed = [proc.find_pids(m) for m in markers]
    assert all(pids_fixed), f"both workers should run after the fix: {pids_fixed}"
