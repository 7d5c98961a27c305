"""Active/active on real processes: examples/active-active.yaml copied into a stack (ports changed,
MM2 intervals shortened), one worker group per side, deployed once for the module.

Proves records cross both ways under their prefixed names without looping, heartbeats flow both
ways, and a consumer group fails over east -> west and back west -> east at MM2's translated
offsets (the scenario of Strimzi's active/active MirrorMaker 2 system test), then the Spark stage
validates both flows and the destroy leaves nothing behind.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from components.mm2_records import decode_checkpoint, decode_heartbeat
from tests.integration.harness import (
    ROOT,
    TestStack,
    end_offsets,
    example_config_with_free_ports,
    kafka_conf,
    kafka_retrying,
    produce_batch,
    produce_end_markers,
    read_keys,
    read_partitions,
    running,
    stays_false,
    topic_names,
    wait_until,
    write_outputs,
)
from tests.integration.validation_stage import run_validator

pytestmark = pytest.mark.integration

# Short intervals so a new group is checkpointed within seconds (MM2 defaults to 10 minutes).
CHECKPOINT_INTERVAL_S = 5
FAST = {
    "refresh.topics.interval.seconds": "5",
    "refresh.groups.interval.seconds": "5",
    "emit.checkpoints.interval.seconds": str(CHECKPOINT_INTERVAL_S),
}
RECORDS = 600  # per direction and scenario
CONSUMED_BEFORE_FAILOVER = 400


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with running(tmp_path_factory.mktemp("active-active"), example_config_with_free_ports("active-active", FAST)) as s:
        yield s


def test_records_cross_both_ways_prefixed_without_loops(stack: TestStack) -> None:
    out = stack.outputs()
    assert out["flows"]["east->west"]["topics"] == {"orders": "east.orders"}
    assert out["flows"]["west->east"]["topics"] == {"orders": "west.orders"}
    run = uuid.uuid4().hex[:8]
    sent: dict[str, set[bytes]] = {}
    for source in ("east", "west"):
        keys = [f"aa-{run}-{source}-{i}".encode() for i in range(RECORDS)]
        produce_batch(out, source, "orders", keys)
        sent[source] = set(keys)
    for source, target in (("east", "west"), ("west", "east")):
        got = read_keys(out, target, f"{source}.orders", f"aa-{run}-{source}-".encode(), RECORDS, 120)
        assert set(got) == sent[source], f"{source}->{target}: {len(sent[source] - set(got))} never arrived"
    _no_leak_up_to_end_markers(out, run, sent)

    # A loop would show as a topic renamed twice (east.west.orders). Checked on every poll across
    # two topic-refresh intervals, after the records crossed.
    def loop_topics() -> list[str]:
        return sorted(
            t for alias in ("east", "west") for t in topic_names(out, alias) if t.count(".orders") and t.count(".") > 1
        )

    stays_false(loop_topics, 2 * int(FAST["refresh.topics.interval.seconds"]) + 2, "a loop topic appeared")


def test_heartbeats_flow_both_ways(stack: TestStack) -> None:
    out = stack.outputs()
    for source, target in (("east", "west"), ("west", "east")):
        # The flow's heartbeat connector writes (source, target) heartbeats into `heartbeats` on the
        # target; the reverse flow's source connector copies them back as `<target>.heartbeats`.
        assert wait_until(
            lambda s=source, t=target: _heartbeat(out, t, "heartbeats", s, t), 60, f"{source}->{target} heartbeats"
        )
        assert wait_until(
            lambda s=source, t=target: _heartbeat(out, s, f"{t}.heartbeats", s, t),
            90,
            f"{source}->{target} heartbeats replicated back to {source} as {target}.heartbeats",
        )


def test_consumer_fails_over_and_back(stack: TestStack, tmp_path: Path) -> None:
    out = stack.outputs()
    outputs_file = write_outputs(out, tmp_path / "outputs.json")
    group = f"it-failover-{uuid.uuid4().hex[:6]}"
    # Failover: the group reads east's orders, moves to west's east.orders. Failback: while on west
    # it reads what producers wrote there, then moves back to east's west.orders.
    for source, target in (("east", "west"), ("west", "east")):
        _fail_over(stack, out, outputs_file, group, source, target)


def test_spark_stage_validates_both_flows(stack: TestStack, tmp_path: Path) -> None:
    report = run_validator(stack, stack.outputs(), tmp_path, "--latency-window", "0", "--catch-up-timeout", "60")
    assert set(report["flows"]) == {"east->west", "west->east"}
    for name, flow in report["flows"].items():
        assert flow["topics"]["orders"]["checks"]["completeness"]["status"] == "pass", name
    assert report["checks"]["loops"]["status"] == "pass"


# --- helpers --------------------------------------------------------------------------------------


def _no_leak_up_to_end_markers(out: dict[str, Any], run: str, sent: dict[str, set[bytes]]) -> None:
    """No side's records (nor its end markers) in the other side's local `orders`, and each exactly
    once in its own `orders` (none came back round a loop). One end marker per partition of each
    side's `orders` must first arrive on its partition of the other side's remote topic (after
    every record written before it there); only then are both `orders` topics read up to their
    ends, so the flows have provably run past the records under test."""
    pairs = (("east", "west"), ("west", "east"))
    markers = {source: produce_end_markers(out, source, "orders", f"{run}-{source}") for source, _ in pairs}
    for source, target in pairs:
        read_partitions(out, target, f"{source}.orders", markers[source])
    local = {a: [k for _p, k in read_partitions(out, a, "orders", end_offsets(out, a, "orders"))] for a in sent}
    for source, target in pairs:
        ours = sent[source] | set(markers[source].values())
        leaked = ours & set(local[target])
        assert not leaked, f"{len(leaked)} of {source}'s records leaked into {target}'s orders: {sorted(leaked)[:3]}"
        home = Counter(k for k in local[source] if k in ours)
        assert set(home) == ours, f"{len(ours - set(home))} of {source}'s records missing from its own orders"
        came_back = sorted(k for k, n in home.items() if n > 1)
        assert not came_back, f"{len(came_back)} of {source}'s records came back into its orders, e.g. {came_back[:3]}"


def _heartbeat(out: dict[str, Any], alias: str, topic: str, source: str, target: str) -> bool:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        kafka_conf(out, alias, **{"group.id": f"it-hb-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False})
    )
    try:
        meta = consumer.list_topics(timeout=10).topics.get(topic)
        if meta is None or meta.error is not None:
            return False
        consumer.assign([TopicPartition(topic, p, 0) for p in meta.partitions])
        for _ in range(10):
            msg = consumer.poll(1.0)
            if msg is None or msg.error() is not None:
                continue
            beat = decode_heartbeat(msg.key(), msg.value())
            if (beat.source_alias, beat.target_alias) == (source, target):
                return True
        return False
    finally:
        consumer.close()


def _poll_ours(consumer: Any, prefix: bytes) -> Any:
    msg = consumer.poll(1.0)
    if msg is None or msg.error() is not None or not (msg.key() or b"").startswith(prefix):
        return None
    return msg


def _consume(
    out: dict[str, Any], alias: str, topic: str, group: str, prefix: bytes, until: Any, what: str
) -> tuple[list[bytes], dict[int, int]]:
    """The group reads records of ours from `topic` until `until(keys read)` holds (bounded), commits
    its position and leaves; returns the keys read in order and the committed position per partition."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        kafka_conf(out, alias, **{"group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    )
    consumer.subscribe([topic])
    keys: list[bytes] = []

    def done() -> bool:
        msg = _poll_ours(consumer, prefix)
        if msg is not None:
            keys.append(msg.key())
        return bool(until(keys))

    try:
        wait_until(done, 120, what, poll_s=0)
        kafka_retrying(lambda: consumer.commit(asynchronous=False), f"committing group {group} on {alias}")
        return keys, {tp.partition: tp.offset for tp in consumer.position(consumer.assignment()) if tp.offset >= 0}
    finally:
        consumer.close()


def _checkpointed(out: dict[str, Any], flow: dict[str, Any], group: str, positions: dict[int, int]) -> bool:
    """True once the flow's checkpoints topic holds, for `group`, every position the group committed
    on the source (so the failover starts from the group's last commit, not an older one)."""
    from confluent_kafka import Consumer, TopicPartition

    topic, remote = flow["checkpointsTopic"], flow["topics"]["orders"]
    consumer = Consumer(kafka_conf(out, flow["target"], **{"group.id": "it-ckpt", "enable.auto.commit": False}))
    seen: dict[int, int] = {}
    try:
        meta = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None:
            return False
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in meta.partitions}
        consumer.assign([TopicPartition(topic, p, 0) for p in meta.partitions])
        left = {p for p, end in ends.items() if end > 0}
        while left:
            msg = consumer.poll(5.0)
            assert msg is not None, f"could not read {topic} to its end"
            if msg.error() is not None:
                continue
            if msg.offset() + 1 >= ends[msg.partition()]:
                left.discard(msg.partition())
            ckpt = decode_checkpoint(msg.key(), msg.value())
            if ckpt.group == group and ckpt.topic == remote:
                seen[ckpt.partition] = ckpt.upstream_offset
    finally:
        consumer.close()
    return all(seen.get(p) == offset for p, offset in positions.items())


def _fail_over(stack: TestStack, out: dict[str, Any], outputs_file: Path, group: str, source: str, target: str) -> None:
    """One move of `group` from `source` to `target` through `bin/failover`, and what it re-reads."""
    flow = out["flows"][f"{source}->{target}"]
    lag_max = int(flow["offsetLagMax"])
    remote = flow["topics"]["orders"]
    prefix = f"fo-{group}-{source}-".encode()
    keys = [prefix + str(i).encode() for i in range(RECORDS)]
    placed = produce_batch(out, source, "orders", keys)
    # The failover test measures offset translation, not replication lag: let every record arrive.
    arrived = read_keys(out, target, remote, prefix, RECORDS, 120)
    assert len(set(arrived)) == RECORDS, f"{source}->{target}: {len(set(arrived))} of {RECORDS} replicated"

    before, positions = _consume(
        out, source, "orders", group, prefix, lambda k: len(k) >= CONSUMED_BEFORE_FAILOVER, f"{group} on {source}"
    )
    wait_until(lambda: _checkpointed(out, flow, group, positions), 120, f"a checkpoint of {group} at {positions}")

    run = subprocess.run(
        [
            str(ROOT / "bin" / "failover"),
            "--outputs",
            str(outputs_file),
            "--failed",
            source,
            "--to",
            target,
            "--group",
            group,
            "--json",
        ],
        cwd=ROOT,
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert run.returncode == 0, f"bin/failover {source}->{target}: {run.stdout[-2000:]}{run.stderr[-2000:]}"
    assert group in json.dumps(json.loads(run.stdout)["plan"]), (
        f"bin/failover did not plan {group}: {run.stdout[-2000:]}"
    )

    remaining = set(keys) - set(before)
    after, _ = _consume(
        out, target, remote, group, prefix, lambda k: remaining <= set(k), f"{group} reading the rest on {target}"
    )
    assert not remaining - set(after), "the failover skipped records"
    reread: dict[int, int] = {}
    for key in set(before) & set(after):
        reread[placed[key]] = reread.get(placed[key], 0) + 1
    # MM2's bound: a translated offset trails the group's position by at most offset.lag.max per
    # partition, plus what the group consumed after the last checkpoint (nothing: it was waited for).
    assert all(n <= lag_max for n in reread.values()), (
        f"re-read per partition {reread} exceeds offset.lag.max {lag_max}"
    )
    print(f"{source}->{target}: {len(before)} read on {source}, {len(after)} on {target}, re-read {reread}")
