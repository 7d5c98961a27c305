"""Brokers of a 3-node KRaft cluster roll for real (one cluster, no flow: a producer and a count
prove the point).

A broker setting changes (`brokerConfig`) while a producer with `acks=all` writes 200 records/s
into a topic with replication factor 3 and `min.insync.replicas=2`. The `up` restarts the three
brokers one at a time, each back in the ISR before the next stops:
- at every sampled moment at least 2 of the 3 brokers answer a Kafka request (ApiVersions), and
  each of them was caught down at some moment (the sampling saw the roll);
- every broker runs a new process afterwards, and every partition's ISR is full again;
- the producer saw no failed send (its retries absorb leader moves), and every acknowledged
  record is in the topic.
"""

from __future__ import annotations

import itertools
import socket
import struct
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from components.platform.local import process as proc
from components.platform.local.layout import broker_path, process_marker
from tests.integration.harness import TestStack, kafka_conf, read_keys, running, with_free_ports
from tests.integration.records import produce_paced
from tests.integration.sampling import PROBE_S, sample_at_once

pytestmark = pytest.mark.integration

CLUSTER = "solo"
BROKERS = 3
TOPIC = "orders"
RATE = 200.0


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestStack]:
    cluster = {
        "platform": "local",
        "brokers": BROKERS,
        "port": 0,  # replaced by a free block
        "security": {"protocol": "PLAINTEXT"},
        "topics": {TOPIC: {"partitions": 3, "replicationFactor": 3, "config": {"min.insync.replicas": "2"}}},
    }
    config = with_free_ports({"config": {"mm2:clusters": {CLUSTER: cluster}, "mm2:workerGroups": {}, "mm2:flows": {}}})
    with running(tmp_path_factory.mktemp("broker-rolling"), config) as s:
        yield s


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise OSError("connection closed")
        data += chunk
    return data


def answer_s(port: int, correlation: int = 7) -> float | None:
    """Seconds the broker on `port` took to answer an ApiVersions (v0) request without error; None
    when it refused, closed or did not answer within PROBE_S."""
    request = struct.pack(">hhih", 18, 0, correlation, 5) + b"itest"  # api key, version, correlation, client id
    started = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=PROBE_S) as sock:
            sock.settimeout(PROBE_S)
            sock.sendall(struct.pack(">i", len(request)) + request)
            (size,) = struct.unpack(">i", _read_exactly(sock, 4))
            got, error = struct.unpack(">ih", _read_exactly(sock, size)[:6])
    except OSError:
        return None
    return time.monotonic() - started if got == correlation and error == 0 else None


def stream(out: dict[str, Any], prefix: str, stop: threading.Event, result: dict[str, Any]) -> None:
    """RATE records/s with acks=all until `stop`; records which sends were acknowledged and which failed."""
    from confluent_kafka import Producer

    acked: list[bytes] = []
    failed: list[str] = []
    at: list[float] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failed.append(str(err))
        else:
            acked.append(msg.key())
            at.append(time.monotonic())

    producer = Producer(kafka_conf(out, CLUSTER, **{"enable.idempotence": True, "acks": "all", "linger.ms": 5}))
    sent = produce_paced(
        producer, TOPIC, lambda n: f"{prefix}{n:07d}".encode(), b"x" * 50, rate=RATE, stop=stop, on_delivery=delivered
    )
    result["unflushed"] = producer.flush(60)
    gaps = [b - a for a, b in itertools.pairwise(at)]
    result.update(sent=sent, acked=acked, failed=failed, longest_gap_s=max(gaps, default=0.0))


def isr_sizes(out: dict[str, Any]) -> dict[int, int]:
    from confluent_kafka.admin import AdminClient

    md = AdminClient(kafka_conf(out, CLUSTER)).list_topics(TOPIC, timeout=15)
    return {p.id: len(p.isrs) for p in md.topics[TOPIC].partitions.values()}


def test_brokers_roll_one_at_a_time_under_acks_all_and_lose_nothing(stack: TestStack) -> None:
    out = stack.outputs()
    base = int(stack.config["config"]["mm2:clusters"][CLUSTER]["port"])
    ports = [base + 2 * i for i in range(BROKERS)]
    markers = [process_marker(stack.name, broker_path(CLUSTER, i)) for i in range(BROKERS)]
    pids_before = [proc.find_pids(m) for m in markers]
    assert all(pids_before), f"every broker should run before the change: {pids_before}"
    stack.config["config"]["mm2:clusters"][CLUSTER]["brokerConfig"] = {"log.retention.check.interval.ms": "300001"}
    stack.write_config()

    prefix = f"roll-{uuid.uuid4().hex[:6]}-"
    stop, result = threading.Event(), {}
    samples: list[list[float | None]] = []
    threads = [
        threading.Thread(target=stream, args=(out, prefix, stop, result)),
        threading.Thread(target=sample_at_once, args=(answer_s, ports, stop, samples)),
    ]
    for t in threads:
        t.start()
    started = time.monotonic()
    try:
        up = stack.pulumi("up", "--yes", "--skip-preview", check=False, timeout=600)
    finally:
        stop.set()
        for t in threads:
            t.join(90)
    print(f"\n[broker rolling] up took {time.monotonic() - started:.1f}s, {len(samples)} samples")
    assert up.returncode == 0, f"pulumi up failed:\n{up.stdout[-4000:]}\n{up.stderr[-2000:]}"

    pids_after = [proc.find_pids(m) for m in markers]
    assert all(a and a != b for a, b in zip(pids_after, pids_before, strict=True)), (
        f"every broker should have restarted: pids {pids_before} -> {pids_after}"
    )
    answers = [a for row in samples for a in row if a is not None]
    print(f"[broker rolling] slowest ApiVersions answer {max(answers, default=0.0):.2f}s (bound {PROBE_S:g}s)")
    short = [i for i, row in enumerate(samples) if sum(a is not None for a in row) < BROKERS - 1]
    assert short == [], (
        f"fewer than {BROKERS - 1} brokers served at {len(short)} sampled moment(s): {samples[short[0]]}"
    )
    caught = [any(row[b] is None for row in samples) for b in range(BROKERS)]
    assert all(caught), f"the sampling did not see every broker restart (down seen: {caught}): it proves nothing"
    assert isr_sizes(out) == dict.fromkeys(range(3), BROKERS), "every partition's ISR should be full after the roll"

    assert result.get("failed") == [], f"sends failed during the roll: {result.get('failed', [])[:5]}"
    assert result["unflushed"] == 0 and len(result["acked"]) == result["sent"] > 0
    print(
        f"[broker rolling] {result['sent']} records sent with acks=all, all acknowledged; "
        f"longest time without an acknowledgement {result['longest_gap_s']:.2f}s"
    )
    found = read_keys(out, CLUSTER, TOPIC, prefix.encode(), want=len(result["acked"]), timeout_s=90)
    assert set(found) == set(result["acked"]), f"{len(set(result['acked']) - set(found))} acknowledged records missing"
