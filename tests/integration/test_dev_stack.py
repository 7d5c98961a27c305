"""The dev stack on real parts: Pulumi engine, KRaft brokers, distributed Connect, MM2 connectors.

The deployment is the README's main job itself: `bin/deploy-dev` run to its end (bootstrap,
`pulumi up` of the dev stack on its fixed ports, the smoke check, the Spark stage) in a copy of
this checkout (tests/integration/main_job.py). The tests then run against that stack, and the
fixture tears it down with `bin/pulumi destroy --stack dev --yes`, also on failure, and checks
that nothing is left behind.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from components.platform.local import process as proc
from components.platform.local.layout import process_marker, worker_path
from tests.integration.harness import (
    TestStack,
    all_running,
    connect_auth,
    end_offsets,
    kafka_conf,
    kafka_retrying,
    partitions_of,
    produce_batch,
    stack_passwords,
    wait_until,
)
from tests.integration.main_job import DevStack, main_job
from tests.integration.validation_stage import run_stage

pytestmark = pytest.mark.integration

FLOW = "primary->dr"
RECORDS = 10_000


@pytest.fixture(scope="module")
def main(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with main_job(tmp_path_factory.mktemp("checkout")) as deployed:
        yield deployed


@pytest.fixture(scope="module")
def stack(main: tuple[DevStack, subprocess.CompletedProcess[str]]) -> DevStack:
    return main[0]


def test_the_main_job_deploys_smoke_checks_and_validates(main: tuple[DevStack, Any]) -> None:
    stack, job = main
    printed = job.stdout + job.stderr
    steps = [line.removeprefix("==> ") for line in printed.splitlines() if line.startswith("==> ")]
    assert [s.split(" ", 1)[0] for s in steps] == ["selecting", "pulumi", "smoke", "Spark"], steps
    smoke = [line for line in printed.splitlines() if " produced to orders arrived in primary.orders " in line]
    assert smoke, f"no smoke-check line in bin/deploy-dev's output:\n{printed[-3000:]}"
    assert "RESULT: PASS" in printed, printed[-3000:]
    assert "[Stage " not in printed, "Spark console progress bars in the main job's output"
    outputs = stack.root / ".mm2" / "dev-outputs.json"  # every credential of the stack: owner only
    assert outputs.stat().st_mode & 0o777 == 0o600, oct(outputs.stat().st_mode)
    passwords = stack_passwords(json.loads(outputs.read_text()))
    assert passwords and not [p for p in passwords if p in printed], "a password in bin/deploy-dev's output"
    print(f"bin/deploy-dev: {smoke[0].strip()}")


def test_up_runs_all_three_connectors(stack: TestStack) -> None:
    out = stack.outputs()
    flow = out["flows"][FLOW]
    assert set(flow["connectors"]) == {"source", "checkpoint", "heartbeat"}
    assert set(flow["states"].values()) == {"RUNNING"}, flow["states"]
    assert flow["topics"] == {"orders": "primary.orders", "payments": "primary.payments"}
    url = out["connect"]["mm2"]["url"]

    def live() -> dict[str, Any]:
        return {
            role: httpx.get(f"{url}/connectors/{name}/status", auth=connect_auth(out), timeout=10).json()
            for role, name in flow["connectors"].items()
        }

    # `up` saw them RUNNING; the group may rebalance right after (a task UNASSIGNED for a
    # moment), so poll until it settles instead of sampling one instant.
    statuses = wait_until(lambda: all_running(st := live()) and st, 120, "every connector and task RUNNING")
    for role, name in flow["connectors"].items():
        status = statuses[role]
        assert status["connector"]["state"] == "RUNNING"
        assert all(t["state"] == "RUNNING" for t in status["tasks"]), status
        # MirrorCheckpointConnector starts no task until the source has consumer groups.
        if role != "checkpoint":
            assert status["tasks"], f"{name} has no tasks"


def test_records_replicate_byte_for_byte(stack: TestStack) -> None:
    from confluent_kafka import Consumer, Producer

    out = stack.outputs()
    run = uuid.uuid4().hex[:8]
    sent: dict[bytes, tuple[bytes, list[tuple[str, bytes]], int]] = {}

    produced: dict[bytes, tuple[bytes, list[tuple[str, bytes]]]] = {}

    def delivered(err: Any, msg: Any) -> None:
        # Delivery reports carry the partition; value and headers are what we produced.
        assert err is None, err
        sent[msg.key()] = (*produced[msg.key()], msg.partition())

    producer = Producer(kafka_conf(out, "primary", **{"linger.ms": 5, "enable.idempotence": True}))
    for i in range(RECORDS):
        key = f"{run}-{i}".encode()
        produced[key] = (os.urandom(16) + f"order {i}".encode(), [("seq", str(i).encode()), ("run", run.encode())])
        producer.produce("orders", key=key, value=produced[key][0], headers=produced[key][1], on_delivery=delivered)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    assert len(sent) == RECORDS

    consumer = Consumer(kafka_conf(out, "dr", **{"group.id": f"it-read-{run}", "auto.offset.reset": "earliest"}))
    consumer.subscribe(["primary.orders"])
    got: dict[bytes, tuple[bytes, list[tuple[str, bytes]], int]] = {}
    duplicates = 0
    deadline = time.monotonic() + 180
    try:
        while len(got) < RECORDS and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error() is not None or not (msg.key() or b"").startswith(run.encode()):
                continue
            if msg.key() in got:
                duplicates += 1
            got[msg.key()] = (msg.value(), list(msg.headers() or []), msg.partition())
    finally:
        consumer.close()
    missing = set(sent) - set(got)
    assert not missing, f"{len(missing)} of {RECORDS} records never arrived in primary.orders"
    mismatched = [k for k in sent if sent[k] != got[k]]
    assert not mismatched, f"{len(mismatched)} records differ in value, headers or partition, e.g. {mismatched[:3]}"
    print(f"{RECORDS} records replicated, {duplicates} duplicates")


def test_consumer_group_offsets_are_translated(stack: TestStack) -> None:
    from confluent_kafka import Consumer, TopicPartition

    out = stack.outputs()
    lag_max = int(out["flows"][FLOW]["offsetLagMax"])
    # Records of its own on every partition, so halfway through one is further from its end than
    # offset.lag.max (in a module run they come on top of the previous test's).
    _produce_orders(out, 2 * lag_max + 50)
    group = f"it-group-{uuid.uuid4().hex[:6]}"
    src = Consumer(kafka_conf(out, "primary", **{"group.id": group, "enable.auto.commit": False}))
    try:
        partitions = src.list_topics("orders", timeout=10).topics["orders"].partitions
        commits = []
        at_end: set[int] = set()
        for p in partitions:
            low, high = src.get_watermark_offsets(TopicPartition("orders", p), timeout=10)
            assert high - low > 2 * lag_max, f"partition {p} holds {high - low} records"
            # Odd partitions: a caught-up consumer (at the end); even ones: halfway through.
            if p % 2:
                at_end.add(p)
            commits.append(TopicPartition("orders", p, high if p % 2 else low + (high - low) // 2))
        kafka_retrying(lambda: src.commit(offsets=commits, asynchronous=False), f"committing group {group}")
    finally:
        src.close()

    # Where the committed source position lands on the target: the target offset of the record just
    # before it, plus one (records are unique, so match by key and value).
    translated = _translated_positions(out, commits)

    dr_admin = Consumer(kafka_conf(out, "dr", **{"group.id": group, "enable.auto.commit": False}))
    try:
        wanted = [TopicPartition("primary.orders", tp.partition) for tp in commits]

        def synced() -> list[Any] | None:
            got = dr_admin.committed(wanted, timeout=10)
            # Never ahead holds for every checkpoint MM2 emits, so it is checked on every sample.
            for tp in got:
                assert tp.offset <= translated[tp.partition], f"partition {tp.partition}: dr offset {tp.offset} ahead"
            if not all(tp.offset >= 0 for tp in got):
                return None
            # The first checkpoint may predate the newest offset sync (MM2 emits one per interval
            # from the syncs it has read so far): the bound at the end holds once it has caught up.
            caught_up = all(translated[tp.partition] - tp.offset <= lag_max for tp in got if tp.partition in at_end)
            return got if caught_up else None

        committed = wait_until(synced, 180, f"group {group} offsets synced to dr within offset.lag.max at the end")
    finally:
        dr_admin.close()
    # MM2's guarantee (docs: mm2-internals 3.6): never ahead, so a failover skips nothing; behind
    # by less than offset.lag.max near the end of the topic, by more further back.
    assert at_end, "no partition tested at the end"
    for tp in committed:
        expect = translated[tp.partition]
        assert 0 <= tp.offset <= expect, f"partition {tp.partition}: dr offset {tp.offset} vs translated {expect}"
        if tp.partition in at_end:
            lag = expect - tp.offset
            assert lag <= lag_max, f"partition {tp.partition}: lags {lag} > offset.lag.max at the end of the topic"


def _produce_orders(out: dict[str, Any], per_partition: int) -> None:
    """`per_partition` new records into every partition of `orders` on the source."""
    partitions = partitions_of(out, "primary", "orders")
    run = uuid.uuid4().hex[:8]
    into = [p for p in partitions for _ in range(per_partition)]
    produce_batch(out, "primary", "orders", [f"{run}-{i}".encode() for i in range(len(into))], partitions=into)


def _commit_at_end(out: dict[str, Any], group: str, partitions: list[int] | None = None) -> None:
    """`group` commits on the source at the end of `orders` (every partition, or `partitions`):
    where MM2 can always translate (a recent offset sync)."""
    from confluent_kafka import Consumer, TopicPartition

    src = Consumer(kafka_conf(out, "primary", **{"group.id": group, "enable.auto.commit": False}))
    try:
        if partitions is None:
            partitions = partitions_of(out, "primary", "orders")
        ends = [src.get_watermark_offsets(TopicPartition("orders", p), timeout=10)[1] for p in partitions]
        commit = [TopicPartition("orders", p, end) for p, end in zip(partitions, ends, strict=True)]
        kafka_retrying(lambda: src.commit(offsets=commit, asynchronous=False), f"committing group {group}")
    finally:
        src.close()


def _translated_positions(out: dict[str, Any], commits: list[Any]) -> dict[int, int]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    src = Consumer(kafka_conf(out, "primary", **{"group.id": "it-peek", "enable.auto.commit": False}))
    wanted: dict[int, tuple[bytes, bytes]] = {}
    try:
        for tp in commits:
            src.assign([TopicPartition("orders", tp.partition, tp.offset - 1)])
            msg = wait_until(lambda: (m := src.poll(1.0)) is not None and m.error() is None and m, 30, "peek")
            wanted[tp.partition] = (msg.key(), msg.value())
    finally:
        src.close()
    dst = Consumer(kafka_conf(out, "dr", **{"group.id": "it-peek", "enable.auto.commit": False}))
    found: dict[int, int] = {}
    try:
        dst.assign([TopicPartition("primary.orders", p, OFFSET_BEGINNING) for p in wanted])
        deadline = time.monotonic() + 180  # reads the topic from the start: generous on two shared cores
        while len(found) < len(wanted) and time.monotonic() < deadline:
            msg = dst.poll(1.0)
            if msg is not None and msg.error() is None and wanted.get(msg.partition()) == (msg.key(), msg.value()):
                found[msg.partition()] = msg.offset() + 1
    finally:
        dst.close()
    assert len(found) == len(wanted), "committed records not found on the target"
    return found


def _validate(stack: TestStack, tmp: Path, *extra: str) -> tuple[int, dict[str, Any], str, float]:
    """The Spark validation stage as bin/deploy-dev runs it: bin/validate --outputs <0600 file>."""
    run = run_stage(stack.outputs(), tmp / "report.json", os.environ, *extra)
    return run.code, run.report, run.output, run.seconds


def test_validation_stage_passes_on_the_real_flow(stack: TestStack, tmp_path: Path) -> None:
    # A group of its own with offsets on the source, for the stage to find checkpointed (without
    # one the checkpoints check is skipped, not passed): records first, so MM2 has an offset sync.
    out = stack.outputs()
    _produce_orders(out, 10)
    _commit_at_end(out, f"it-stage-{uuid.uuid4().hex[:6]}")
    code, report, text, wall = _validate(stack, tmp_path)
    print(f"validation stage on the dev stack: {wall:.1f}s wall, stage {report.get('meta', {}).get('seconds')}s")
    assert code == 0, text[-6000:]
    assert report["failedChecks"] == []
    assert "[Stage " not in text, "Spark console progress bars in the stage's output"
    flow = report["flows"][FLOW]
    # Its group (and any an earlier test committed) checkpointed by MM2.
    assert flow["checks"]["checkpoints"]["status"] == "pass", flow["checks"]
    assert flow["checks"]["heartbeats"]["status"] == "pass", flow["checks"]
    print(f"partitions by path: {report['meta']['partitionsByPath']}")


def test_stopped_checkpoint_connector_fails_the_stage(stack: TestStack, tmp_path: Path) -> None:
    original = copy.deepcopy(stack.config)
    stack.config["config"]["mm2:flows"][FLOW]["connectorStates"] = {"checkpoint": "stopped"}
    stack.write_config()
    try:
        stack.up()
        group = f"it-after-stop-{uuid.uuid4().hex[:6]}"
        _commit_at_end(stack.outputs(), group, [0])
        code, report, text, _ = _validate(stack, tmp_path, "--checkpoint-wait", "15")
    finally:
        stack.config = original
        stack.write_config()
        stack.up()
    assert code == 1, text[-6000:]
    assert f"{FLOW}: checkpoints" in report["failedChecks"], report["failedChecks"]
    detail = report["flows"][FLOW]["checks"]["checkpoints"]["detail"]
    assert group in detail and "STOPPED" in detail.upper(), detail


def test_records_deleted_on_the_target_fail_the_stage(stack: TestStack, tmp_path: Path) -> None:
    """On a topic of its own, added to the flow for this test and taken out again: records deleted
    from the target stay deleted, and no other test of the module, in whatever order, validates it."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    original = copy.deepcopy(stack.config)
    config = stack.config["config"]
    config["mm2:clusters"]["primary"]["topics"]["scratch"] = {"partitions": 1}
    config["mm2:flows"][FLOW]["topics"] = [*config["mm2:flows"][FLOW]["topics"], "scratch"]
    stack.write_config()
    try:
        stack.up()
        out = stack.outputs()
        produce_batch(out, "primary", "scratch", [f"scratch-{i}".encode() for i in range(10)], [0] * 10)
        copied = lambda: sum(end_offsets(out, "dr", "primary.scratch", missing_ok=True).values()) >= 10  # noqa: E731
        wait_until(copied, 120, "the 10 records of scratch copied to dr")
        admin = AdminClient(kafka_conf(out, "dr"))
        for f in admin.delete_records([TopicPartition("primary.scratch", 0, 5)]).values():
            f.result(timeout=30)
        code, report, text, _ = _validate(stack, tmp_path, "--checkpoint-wait", "30")
    finally:
        stack.config = original
        stack.write_config()
        stack.up()
    assert code == 1, text[-6000:]
    assert report["failedChecks"] == [f"{FLOW}: scratch: completeness"], report["failedChecks"]
    parts = report["flows"][FLOW]["topics"]["scratch"]["partitions"]
    assert [p["partition"] for p in parts if p["path"] == "exact"] == [0], parts


def test_second_up_changes_nothing(stack: TestStack) -> None:
    out = stack.up("--expect-no-changes")
    assert "error" not in out.stdout.lower()


def test_one_setting_change_is_one_in_place_update(stack: TestStack) -> None:
    original = copy.deepcopy(stack.config)
    stack.config["config"]["mm2:flows"][FLOW].setdefault("settings", {})["offset.lag.max"] = "50"
    stack.write_config()
    try:
        preview = stack.preview_json()
    finally:
        stack.config = original
        stack.write_config()
    changed = [(s["op"], s["urn"].rsplit("::", 1)[-1]) for s in preview["steps"] if s["op"] != "same"]
    assert changed == [("update", "mm2-primary-to-dr-source")], changed


def test_killed_worker_is_reported_by_refresh_and_restored_by_up(stack: TestStack) -> None:
    marker = process_marker(stack.name, worker_path("mm2", 1))
    assert proc.find_pids(marker), "worker-1 not running"
    stack.lose(worker_path("mm2", 1))

    refreshed = stack.pulumi("refresh", "--yes", "--skip-preview")
    assert "connect-mm2-worker-1" in refreshed.stdout and "updated" in refreshed.stdout, refreshed.stdout[-3000:]
    preview = stack.preview_json()
    changed = [(s["op"], s["urn"].rsplit("::", 1)[-1]) for s in preview["steps"] if s["op"] != "same"]
    assert ("update", "connect-mm2-worker-1") in changed, changed

    stack.up()
    assert proc.find_pids(marker), "worker-1 was not restarted"
    out = stack.outputs()
    url, auth = out["connect"]["mm2"]["url"], connect_auth(out)
    port = int(stack.config["config"]["mm2:workerGroups"]["mm2"]["restPort"]) + 1
    assert httpx.get(f"http://127.0.0.1:{port}/health", auth=auth, timeout=10).status_code == 200

    def states() -> list[str]:
        return [
            httpx.get(f"{url}/connectors/{n}/status", auth=auth, timeout=10).json()["connector"]["state"]
            for n in out["flows"][FLOW]["connectors"].values()
        ]

    # The restarted worker rejoins the group, which rebalances: a connector can be UNASSIGNED for
    # a moment (seen in CI). The worker group must converge back to every connector RUNNING.
    wait_until(lambda: states() == ["RUNNING"] * 3, 120, "all connectors RUNNING after the rebalance")
    assert Path(stack.run_dir).exists()
