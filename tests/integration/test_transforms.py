"""Settings that pass through the catalogue, on real processes: a filtering SMT really filters, and
Connect's validation catches what it would silently ignore, at preview.

One lean copy of the dev stack (SCRAM and ACLs, one worker) whose flow carries Connect's
`Filter` transformation with a `HasHeaderKey` predicate: records carrying the header
`mm2-test-drop` must not reach dr, every other record must. Then, against the running workers,
`pulumi preview` refuses a misspelt key (with a "did you mean") and an SMT class that is not on
the workers' plugin path (naming it), changing nothing.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
import yaml

from components.ops.clients import kafka_config
from components.outputs.contract import StackExports
from tests.integration.harness import TestStack, dev_config_with_free_ports, running

pytestmark = pytest.mark.integration

FLOW = "primary->dr"
DROP_HEADER = "mm2-test-drop"
FILTER = {
    "transforms": "dropMarked",
    "transforms.dropMarked.type": "org.apache.kafka.connect.transforms.Filter",
    "transforms.dropMarked.predicate": "isMarked",
    "predicates": "isMarked",
    "predicates.isMarked.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
    "predicates.isMarked.name": DROP_HEADER,
}
WAIT_S = 240


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    config = dev_config_with_free_ports()
    config["config"]["mm2:workerGroups"]["mm2"]["workers"] = 1
    flow = config["config"]["mm2:flows"][FLOW]
    flow["tasksMax"] = 1
    flow["settings"] = {**flow.get("settings", {}), **FILTER}
    with running(tmp_path_factory.mktemp("smt"), config) as s:
        yield s


def _produce(out: dict[str, Any], run: str, count: int) -> tuple[set[bytes], set[bytes], set[bytes]]:
    """`count` uniquely keyed records to orders on primary, every third one carrying the drop
    header, then one unmarked end record per partition. Returns (kept, dropped, end) keys as
    acknowledged by the broker."""
    from confluent_kafka import Producer

    acked: set[bytes] = set()
    producer = Producer(kafka_config(StackExports.from_json(out), "primary", **{"enable.idempotence": True}))
    partitions = producer.list_topics("orders", timeout=30).topics["orders"].partitions
    marked = {f"{run}-{i:05d}".encode() for i in range(0, count, 3)}
    for i in range(count):
        key = f"{run}-{i:05d}".encode()
        headers = [(DROP_HEADER, b"1")] if key in marked else None
        producer.produce("orders", key=key, value=b"v", headers=headers, on_delivery=_collect(acked))
        producer.poll(0)
    assert producer.flush(60) == 0
    # Records of one partition are replicated in order: once a partition's end record arrived,
    # every marked record before it has been through the filter.
    end = {f"{run}-end-{p}".encode(): p for p in partitions}
    for key, p in end.items():
        producer.produce("orders", key=key, value=b"end", partition=p, on_delivery=_collect(acked))
    assert producer.flush(60) == 0
    all_keys = {f"{run}-{i:05d}".encode() for i in range(count)}
    assert acked == all_keys | set(end), "the broker did not acknowledge every record"
    return all_keys - marked, marked, set(end)


def _collect(acked: set[bytes]) -> Any:
    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            acked.add(msg.key())

    return delivered


def _read_until(out: dict[str, Any], run: str, expected: set[bytes]) -> set[bytes]:
    """Keys of `run` in primary.orders on dr, read until every expected key arrived (bounded)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        kafka_config(
            StackExports.from_json(out),
            "dr",
            **{"group.id": f"smt-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False},
        )
    )
    seen: set[bytes] = set()
    try:
        parts = consumer.list_topics("primary.orders", timeout=30).topics["primary.orders"].partitions
        consumer.assign([TopicPartition("primary.orders", p, 0) for p in parts])
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and not expected <= seen:
            for msg in consumer.consume(1000, 1.0):
                if msg.error() is None and (msg.key() or b"").startswith(run.encode()):
                    seen.add(msg.key())
    finally:
        consumer.close()
    return seen


def test_a_filtering_smt_drops_exactly_the_marked_records(stack: TestStack) -> None:
    out = stack.outputs()
    assert out["flows"][FLOW]["transforms"] == ["dropMarked"]
    run = f"smt-{uuid.uuid4().hex[:6]}"
    kept, dropped, end = _produce(out, run, 3000)
    assert len(kept) == 2000 and len(dropped) == 1000
    seen = _read_until(out, run, kept | end)
    assert kept | end <= seen, f"{len((kept | end) - seen)} unmarked records never arrived"
    assert not (seen & dropped), f"{len(seen & dropped)} records with the drop header were replicated"
    print(f"\n[smt] {len(kept)} unmarked records arrived, all {len(dropped)} marked ones filtered")


def _preview_fails_with(stack: TestStack, settings: dict[str, str], *expected: str) -> None:
    original = stack.config_file.read_text()
    config = yaml.safe_load(original)
    config["config"]["mm2:flows"][FLOW]["settings"].update(settings)
    stack.config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    try:
        result = stack.pulumi("preview", check=False)
    finally:
        stack.config_file.write_text(original)
    text = result.stdout + result.stderr
    assert result.returncode != 0, text[-3000:]
    for fragment in expected:
        assert fragment in text, text[-4000:]


def test_preview_names_a_misspelt_key_and_a_missing_smt_class(stack: TestStack) -> None:
    _preview_fails_with(
        stack,
        {"config.action.relaod": "none"},
        "config.action.relaod",
        "Did you mean",
        "config.action.reload",
    )
    _preview_fails_with(
        stack,
        {"transforms.dropMarked.type": "com.example.NoSuchTransform"},
        "com.example.NoSuchTransform",
        "is not on the plugin path",
    )
    # The refused previews changed nothing: the stack still matches its config.
    stack.pulumi("preview", "--expect-no-changes")
    assert stack.outputs()["flows"][FLOW]["transforms"] == ["dropMarked"]
