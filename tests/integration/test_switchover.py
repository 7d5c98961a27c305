"""Failover as code on real parts: a cluster pair (`mm2:failover.primary<->dr`) switched over and
back by changing `active` and running `pulumi up`, while an application principal produces and a
consumer group reads.

1. Planned switchover and failback: the preview shows the plan; `up` fences the application's
   writes on the old side (its producer gets an authorization error), drains, moves the group at
   translated offsets (every record seen, re-reads within the bound) and starts the way back;
   the Spark stage passes. Records the test's admin (a super user, which the fence does not hold)
   writes on the old side afterwards are the divergence: the way back refuses to start until the
   config chooses, the preview names exactly those records, and `keep` hands them to the group.
2. The way back with `discard`: the group and the restarted flow resume after the records the
   old side took behind the fence.
3. A switchover whose flow cannot drain (paused behind the stack's back) stops before anything
   moves, with the old side writable again and the state named.
4. An unplanned failover: the active side's broker is killed, bin/failover moves the group,
   `active` + `unplanned: true` records it (both flows stopped, the cut at MM2's last committed
   position); once the lost side is back and `unplanned` removed, the way back runs as planned.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from components.platform.local.layout import broker_path
from tests.integration.connect_rest import pause_connector
from tests.integration.failover_app import (
    APP,
    BOUND_S,
    GROUP,
    LAG_MAX,
    PAIR,
    App,
    add_app_principal,
    connector_states,
    consume,
    diff_preview,
    pair_config,
    pair_state,
    produce_as_app,
    switch,
    use_on,
    wait_checkpointed,
)
from tests.integration.harness import (
    ROOT,
    TestStack,
    connect_auth,
    end_offsets,
    kafka_conf,
    produce_batch,
    produce_end_markers,
    read_keys,
    read_partitions,
    run_status,
    running,
    wait_until,
)
from tests.integration.validation_stage import run_validator

pytestmark = pytest.mark.integration


def start_from(stack: TestStack, active: str) -> None:
    """Bring the pair to `active` (a planned switchover) if it is not there: tests share one stack."""
    if pair_state(stack)["active"] != active:
        switch(stack, active, divergence="keep")
        stack.up()
    switch(stack, active, divergence=None, unplanned=None)


def wait_mm2_committed(outputs: dict[str, Any], flow: str, alias: str, topic: str) -> None:
    """Until the flow's committed source position (Connect's offsets API) covers the end of `topic`
    on `alias`: an unplanned failover's cut is that position, and the workers commit it only once
    per offset flush interval, later than the copied records can be read on the other side."""
    url, auth = outputs["connect"]["mm2"]["url"], connect_auth(outputs)
    source = outputs["flows"][flow]["connectors"]["source"]
    ends = {p: end for p, end in end_offsets(outputs, alias, topic).items() if end > 0}

    def covered() -> bool:
        answer = httpx.get(f"{url}/connectors/{source}/offsets", auth=auth, timeout=10).json()
        committed = {
            o["partition"]["partition"]: o["offset"]["offset"] + 1
            for o in answer.get("offsets") or []
            if o["partition"].get("topic") == topic
        }
        return all(committed.get(p, 0) >= end for p, end in ends.items())

    wait_until(covered, BOUND_S, f"{flow}'s committed position at the end of {topic} on {alias}")


def group_offsets(outputs: dict[str, Any], alias: str) -> dict[tuple[str, int], int]:
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(kafka_conf(outputs, alias))
    got = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(GROUP)])[GROUP].result(30)
    return {(tp.topic, tp.partition): tp.offset for tp in got.topic_partitions or [] if tp.offset >= 0}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestStack]:
    with running(tmp_path_factory.mktemp("switchover"), pair_config()) as s:
        outputs = s.outputs()
        for alias in ("primary", "dr"):
            add_app_principal(outputs, alias)
        yield s


def test_planned_switchover_and_failback_with_divergence(stack: TestStack, tmp_path: Path) -> None:
    old = pair_state(stack)["active"]
    new = "dr" if old == "primary" else "primary"
    outputs = stack.outputs()
    refused = produce_as_app(outputs, new, "orders", [b"fenced-probe"])
    assert refused and "authoriz" in refused[0].lower(), f"the passive side {new} must refuse the app: {refused}"

    # The application runs on the active side: a producer, and the group reading what it wrote.
    app = App(outputs, old, f"sw-{uuid.uuid4().hex[:6]}")
    app.thread.start()
    wait_until(lambda: len(app.acked) >= 200, 60, "the app's first 200 records")
    on_old = consume(outputs, old, ["orders"], lambda seen: len(seen) >= 150, 60)
    wait_checkpointed(outputs, old, new)

    switch(stack, new)
    preview = diff_preview(stack)
    assert f"switchover {PAIR}: {new} becomes active (was {old})" in preview, preview[-4000:]
    assert f"fence: deny WRITE to User:{APP} on {old} topics orders" in preview, preview[-4000:]
    assert f"move group {GROUP} to {new}" in preview, preview[-4000:]
    up = stack.up()
    app.stop.set()
    app.thread.join(60)
    assert app.refused and "authoriz" in app.refused[0].lower(), f"the fence must refuse the app: {app.refused[:3]}"
    assert "RPO 0 record(s)" in up.stdout + up.stderr, up.stdout[-4000:]
    state = pair_state(stack)
    assert state["active"] == new and state["last"]["rpoRecords"] == 0 and state["last"]["groups"] == [GROUP]
    assert 0 < state["last"]["drainSeconds"] + state["last"]["groupsSeconds"] <= state["last"]["fencedSeconds"]
    print(f"\nswitchover {old} -> {new}: {state['last']}, {len(app.acked)} acked")
    assert set(connector_states(stack, f"{old}->{new}").values()) == {"STOPPED"}

    # The group resumes on the new side: nothing lost, re-reads within the bound.
    remote = f"{old}.orders"
    acked = set(app.acked)
    later = consume(outputs, new, [remote, "orders"], lambda seen: acked <= set(on_old) | set(seen), BOUND_S)
    lost = acked - set(on_old) - set(later)
    assert not lost, f"{len(lost)} acknowledged record(s) never seen"
    reread = len([k for k in later if k in set(on_old)])
    # offset.lag.max per partition plus what the app wrote in one checkpoint interval (5 s).
    bound = 2 * LAG_MAX + int(5 * app.per_second())
    print(f"re-read on {new}: {reread} record(s), bound {bound}")
    assert reread <= bound, f"re-read {reread} records (bound {bound})"

    # The way back carries the new side's records: writes there are allowed now.
    back = [f"back-{uuid.uuid4().hex[:6]}-{i}".encode() for i in range(10)]
    assert produce_as_app(outputs, new, "orders", back) == []
    assert produce_as_app(outputs, old, "orders", [b"fenced-probe"]), f"{old} must be fenced now"
    copied = read_keys(outputs, old, f"{new}.orders", b"back-", len(back), BOUND_S)
    assert set(back) <= set(copied)
    run_validator(stack, stack.outputs(), tmp_path)

    # The test's admin, a super user, writes on the old side behind the fence: the divergence.
    placed = produce_batch(outputs, old, "orders", [f"diverge-{i}".encode() for i in range(5)])
    # The Spark stage names each of them before anyone decides (and fails until the way back).
    report = run_validator(stack, stack.outputs(), tmp_path, expect_exit=1)
    assert report["failedChecks"] == ["divergence"], report["failedChecks"]
    detail = report["checks"]["divergence"]["detail"]
    assert f"5 record(s) on {old} past the cut of {old}->{new} never replicated" in detail
    assert all(f"key={k.decode()}" in detail for k in placed), detail
    use_on(stack, new)
    switch(stack, old)
    refusal = stack.pulumi("preview", "--diff", check=False)
    assert refusal.returncode != 0
    assert "5 record(s) were written on" in refusal.stdout + refusal.stderr
    assert f"mm2:failover.{PAIR}.divergence" in refusal.stdout + refusal.stderr

    switch(stack, old, divergence="keep")
    preview = diff_preview(stack)
    cut = {(c["topic"], c["partition"]): c["sourceEnd"] for c in pair_state(stack)["cuts"][f"{old}->{new}"]}
    for p in sorted(set(placed.values())):
        count = sum(1 for q in placed.values() if q == p)
        start = cut[("orders", p)]
        assert f"orders p{p} offsets {start}..{start + count - 1} ({count} record(s))" in preview, preview[-4000:]
    assert f"group {GROUP} resumes on {old}'s own topics after what it read of them on {new}" in preview
    stack.up()
    assert pair_state(stack)["active"] == old
    # keep: the group reads the divergent records next on the old side, and the flow copies them.
    resumed = consume(outputs, old, ["orders", f"{new}.orders"], lambda seen: set(placed) <= set(seen), BOUND_S)
    assert set(placed) <= set(resumed)
    assert not set(resumed) & acked, "the group re-read records it had seen before the first switchover"
    assert set(placed) <= set(read_keys(outputs, new, remote, b"diverge-", len(placed), BOUND_S))


def test_a_switchover_that_cannot_drain_stops_before_anything_moves(stack: TestStack) -> None:
    active = pair_state(stack)["active"]
    other = "dr" if active == "primary" else "primary"
    use_on(stack, active)  # a group to move: without one the preview refuses before any drain
    outputs = stack.outputs()
    url, auth = outputs["connect"]["mm2"]["url"], connect_auth(outputs)
    source = outputs["flows"][f"{active}->{other}"]["connectors"]["source"]
    pause_connector(url, source, auth)  # its tasks paused too: the records below stay behind
    try:
        produce_batch(outputs, active, "orders", [f"stuck-{i}".encode() for i in range(20)])
        switch(stack, other, drainTimeout="10s")
        failed = stack.pulumi("up", "--yes", "--skip-preview", check=False)
        text = failed.stdout + failed.stderr
        assert failed.returncode != 0
        assert "stopped at step 2 (drain)" in text and "Nothing was moved" in text, text[-4000:]
        assert pair_state(stack)["active"] == active
        assert produce_as_app(outputs, active, "orders", [b"writable-again"]) == [], f"{active} must be writable"
        # Step 3 was never reached: the flow still runs (its source paused by hand, not stopped).
        assert "STOPPED" not in connector_states(stack, f"{active}->{other}").values()
    finally:
        httpx.put(f"{url}/connectors/{source}/resume", auth=auth, timeout=10).raise_for_status()
        switch(stack, active, drainTimeout="90s")
    stack.up()
    assert pair_state(stack)["active"] == active


def test_failback_with_discard_skips_what_the_old_side_took_behind_the_fence(stack: TestStack) -> None:
    start_from(stack, "primary")
    outputs = stack.outputs()
    use_on(stack, "primary")
    switch(stack, "dr")
    stack.up()
    run = uuid.uuid4().hex[:6]
    placed = produce_batch(outputs, "primary", "orders", [f"discard-{run}-{i}".encode() for i in range(4)])
    use_on(stack, "dr")
    switch(stack, "primary", divergence="discard")
    assert "(discarded): orders p" in diff_preview(stack)
    up = stack.up()
    ends = {p: end for p, end in end_offsets(outputs, "primary", "orders").items() if p in placed.values()}
    after = group_offsets(outputs, "primary")
    assert all(after.get(("orders", p)) == end for p, end in ends.items()), (after, ends, up.stderr[-3000:])
    # The restarted flow resumes after them: a marker written now on each partition arrives, and
    # up to it (in the partition's order) none of them does.
    markers = produce_end_markers(outputs, "primary", "orders", f"discard-{run}")
    copied = {key for _p, key in read_partitions(outputs, "dr", "primary.orders", markers, BOUND_S)}
    assert not copied & set(placed), f"discarded records copied: {sorted(copied & set(placed))}"


def test_an_unplanned_failover_is_recorded_and_the_way_back_picks_up(stack: TestStack, tmp_path: Path) -> None:
    began = time.monotonic()

    def lap(what: str) -> None:  # where the test's minutes go, in its output
        print(f"  {time.monotonic() - began:6.1f}s {what}")

    start_from(stack, "primary")
    use_on(stack, "primary")  # bin/failover moves what MM2 checkpointed: the group must have a checkpoint
    outputs = stack.outputs()
    prefix = f"before-loss-{uuid.uuid4().hex[:6]}-"
    copied = [f"{prefix}{i}".encode() for i in range(20)]
    produce_batch(outputs, "primary", "orders", copied)
    # Every one of them (a duplicate, MM2's at-least-once, must not stand in for a missing one),
    # and nothing else under their prefix.
    arrived = read_keys(outputs, "dr", "primary.orders", prefix.encode(), len(copied), BOUND_S)
    assert set(arrived) == set(copied), f"missing {sorted(set(copied) - set(arrived))}"
    wait_mm2_committed(outputs, "primary->dr", "primary", "orders")
    lap("copied and committed")
    stack.lose(broker_path("primary", 0))
    saved = tmp_path / "outputs.json"
    saved.write_text(json.dumps(outputs))
    failover = subprocess.run(
        [str(ROOT / "bin" / "failover"), "--outputs", str(saved), "--failed", "primary", "--to", "dr"],
        cwd=ROOT,
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert failover.returncode == 0, failover.stdout[-3000:] + failover.stderr[-2000:]
    lap("bin/failover moved the group")

    switch(stack, "dr", unplanned=True)
    assert "unplanned failover primary<->dr: dr becomes active (primary is lost" in diff_preview(stack)
    t0 = time.monotonic()
    recorded = stack.up()
    done = [line.strip() for line in recorded.stdout.splitlines() if f"unplanned failover {PAIR}: done" in line]
    assert done and "s, fence lifted" in done[-1], recorded.stdout[-3000:]  # each step's seconds
    print(f"\nunplanned failover recorded by `up` in {time.monotonic() - t0:.1f}s: {done[-1]}")
    state = pair_state(stack)
    assert state["active"] == "dr" and state["last"]["unplanned"] and state["last"].get("rpoRecords") is None
    cut = {(c["topic"], c["partition"]): c for c in state["cuts"]["primary->dr"]}
    assert sum(c["remoteEnd"] for c in cut.values()) > 0
    assert set(connector_states(stack, "dr->primary").values()) == {"STOPPED"}, "nothing may replicate into a lost side"
    # `up` did not wait for the lost flow's connectors: Connect stops them once their calls to the
    # lost cluster give up (admin.timeout.ms, 60 s); their tasks were gone before the cut was read.
    wait_until(
        lambda: set(connector_states(stack, "primary->dr").values()) == {"STOPPED"},
        BOUND_S,
        "Connect to finish stopping primary->dr's connectors",
    )
    lap("the lost flow's connectors STOPPED")

    # primary is back (refresh finds its broker dead, up starts it) and unplanned removed: it is fenced,
    # the way back starts; what it takes behind the fence is the divergence of the planned failback.
    switch(stack, "dr", unplanned=None)
    stack.up("--refresh")
    lap("primary back (up --refresh)")
    use_on(stack, "dr")
    lap("the group reads on dr")
    assert produce_as_app(outputs, "primary", "orders", [b"fenced-probe"]), "primary must be fenced once back"
    assert set(connector_states(stack, "dr->primary").values()) == {"RUNNING"}
    placed = produce_batch(outputs, "primary", "orders", [f"late-{i}".encode() for i in range(3)])
    switch(stack, "primary", divergence="keep")
    preview = diff_preview(stack)
    for p in sorted(set(placed.values())):
        start = cut[("orders", p)]["sourceEnd"]
        assert f"orders p{p} offsets {start}.." in preview, preview[-3000:]
    stack.up()
    lap("failed back to primary")
    assert pair_state(stack)["active"] == "primary"


def test_a_fence_deleted_behind_the_stacks_back_is_drift_that_up_restores(stack: TestStack) -> None:
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    passive = "dr" if pair_state(stack)["active"] == "primary" else "primary"
    outputs = stack.outputs()
    deny = AclBindingFilter(
        ResourceType.TOPIC,
        "orders",
        ResourcePatternType.LITERAL,
        f"User:{APP}",
        "*",
        AclOperation.WRITE,
        AclPermissionType.DENY,
    )
    assert pair_status(outputs, stack.tmp)["fence_missing"] == [], "the fence held before the deletion"
    admin = AdminClient(kafka_conf(outputs, passive))
    for future in admin.delete_acls([deny]).values():
        assert future.result(30), "the fence's binding was there to delete"
    # (No record is written through the gap: it would be divergence for the next switchover.)
    # bin/status reads the fence live: the gap shows before any refresh.
    gap = pair_status(outputs, stack.tmp, expect_exit=3)
    assert gap["fence_missing"] == [f"User:{APP} on orders"], gap
    assert gap["problems"][0].startswith(f"the fence on {passive} lacks User:{APP} on orders"), gap
    stack.pulumi("refresh", "--yes", "--skip-preview")
    assert f"fence lacks User:{APP} on orders" in diff_preview(stack)
    stack.up()
    assert produce_as_app(outputs, passive, "orders", [b"fenced-again"]), f"{passive} must refuse the app again"
    assert "fence lacks" not in diff_preview(stack)
    assert pair_status(outputs, stack.tmp)["fence_missing"] == []


def pair_status(outputs: dict[str, Any], tmp: Path, expect_exit: int | None = None) -> dict[str, Any]:
    """The pair as `bin/status --json` shows it; with `expect_exit`, asserts the exit code (the
    flows' own health varies between the module's tests, so it is asserted only when asked)."""
    run = run_status(outputs, tmp, "--json")
    assert run.returncode in (0, 3), run.stdout[-3000:] + run.stderr[-3000:]
    if expect_exit is not None:
        assert run.returncode == expect_exit, run.stdout[-3000:]
    return dict(json.loads(run.stdout)["failover"][PAIR])
