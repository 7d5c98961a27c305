"""Declared connector states on real parts: `mm2:flows.<flow>.state` and `connectorStates`.

One stack (the dev shape on free ports). A flow declared paused stops copying and its
connectors report PAUSED; a source declared stopped releases its tasks; back to running, the
records produced while it was stopped arrive (offsets were kept); a connector paused by hand
shows as drift on refresh and `pulumi up --refresh` resumes it; then a no-op `up` changes
nothing. Each test declares the states it starts from, so it also runs alone (`-k`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from components.connect.provider import RETRY_SECONDS_ENV
from components.platform.local import process as proc
from components.platform.local.layout import process_marker, worker_path
from components.topology.model import ROLE_NAMES
from tests.integration.harness import (
    TestStack,
    connect_auth,
    end_offsets,
    kafka_conf,
    read_partitions,
    running,
    stays_false,
    wait_until,
)

pytestmark = pytest.mark.integration

FLOW = "primary->dr"
CONVERGE_S = 180  # generous: two shared cores; a rebalance round is seconds


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with running(tmp_path_factory.mktemp("connector-states")) as s:
        yield s


def statuses(stack: TestStack, worker: int = 0) -> dict[str, dict[str, Any]]:
    """The flow's connectors' statuses, asked of `worker` (0: the group's exported url)."""
    out = stack.outputs()
    url = out["connect"]["mm2"]["url"]
    if worker:
        port = int(stack.config["config"]["mm2:workerGroups"]["mm2"]["restPort"]) + worker
        url = f"http://127.0.0.1:{port}"
    names = out["flows"][FLOW]["connectors"]
    return {
        role: httpx.get(f"{url}/connectors/{names[role]}/status", auth=connect_auth(out), timeout=10).json()
        for role in ROLE_NAMES
    }


def statuses_when(
    stack: TestStack, converged: Callable[[dict[str, dict[str, Any]]], bool], what: str, worker: int = 0
) -> Any:
    """The connectors' statuses once `converged` holds for them, polled (bounded). Right after an
    `up` the worker group may still rebalance (a task UNASSIGNED for a moment), so one sample
    is not the state the group settles in."""
    seen: list[Any] = [None]

    def check() -> Any:
        try:
            seen[0] = statuses(stack, worker)
        except (httpx.HTTPError, ValueError) as exc:  # a worker between generations
            seen[0] = repr(exc)
            return None
        return seen[0] if converged(seen[0]) else None

    try:
        return wait_until(check, CONVERGE_S, what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last statuses: {seen[0]!r}") from None


def connector_states(live: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {role: s["connector"]["state"] for role, s in live.items()}


def declare(stack: TestStack, state: str | None = None, per_role: dict[str, str] | None = None) -> None:
    flow = stack.config["config"]["mm2:flows"][FLOW]
    flow.pop("state", None)
    flow.pop("connectorStates", None)
    if state is not None:
        flow["state"] = state
    if per_role:
        flow["connectorStates"] = per_role
    stack.write_config()


def produce(stack: TestStack, count: int) -> set[bytes]:
    from confluent_kafka import Producer

    run = uuid.uuid4().hex[:8]
    keys = {f"{run}-{i}".encode() for i in range(count)}
    producer = Producer(kafka_conf(stack.outputs(), "primary", **{"linger.ms": 5}))
    for key in keys:
        producer.produce("orders", key=key, value=b"v-" + key)
    assert producer.flush(60) == 0
    return keys


def remote_keys(stack: TestStack) -> set[bytes]:
    """Every key now in primary.orders on dr: each partition read from its start to its end now
    (a read that falls short fails, so a negative over it is never vacuous)."""
    out = stack.outputs()
    ends = end_offsets(out, "dr", "primary.orders")
    return {key for _p, key in read_partitions(out, "dr", "primary.orders", ends, 60) if key is not None}


def test_flow_declared_paused_stops_copying(stack: TestStack) -> None:
    first = produce(stack, 100)
    wait_until(lambda: first <= remote_keys(stack), 120, "records to replicate while running")

    declare(stack, "paused")
    stack.up()
    live = statuses_when(
        stack,
        lambda live: (
            connector_states(live) == dict.fromkeys(ROLE_NAMES, "PAUSED")
            and all(t["state"] == "PAUSED" for s in live.values() for t in s["tasks"])
        ),
        "every connector and task PAUSED",
    )
    assert connector_states(live) == dict.fromkeys(ROLE_NAMES, "PAUSED")
    assert all(t["state"] == "PAUSED" for s in live.values() for t in s["tasks"]), live
    out = stack.outputs()["flows"][FLOW]
    assert out["desiredStates"] == dict.fromkeys(ROLE_NAMES, "PAUSED")
    assert set(out["states"].values()) == {"PAUSED"}

    held = produce(stack, 100)
    # Checked on every poll for several poll intervals of a running source task.
    stays_false(lambda: held & remote_keys(stack), 10, "a paused flow must not copy")


def test_source_declared_stopped_releases_its_tasks(stack: TestStack) -> None:
    declare(stack, per_role={"source": "stopped"})
    stack.up()
    live = statuses_when(
        stack,
        lambda live: (
            connector_states(live)["source"] == "STOPPED"
            and live["source"]["tasks"] == []
            and connector_states(live)["heartbeat"] == "RUNNING"
        ),
        "the source STOPPED without tasks, the heartbeat RUNNING",
    )
    assert live["source"]["connector"]["state"] == "STOPPED"
    assert live["source"]["tasks"] == []
    assert live["heartbeat"]["connector"]["state"] == "RUNNING"


def test_back_to_running_copies_what_was_held(stack: TestStack) -> None:
    # Records of its own, held back by a state it declares itself: the source stopped, without
    # tasks (what the test before leaves in a module run; alone, this `up` stops it).
    declare(stack, per_role={"source": "stopped"})
    stack.up()
    statuses_when(
        stack,
        lambda live: connector_states(live)["source"] == "STOPPED" and live["source"]["tasks"] == [],
        "the source STOPPED without tasks",
    )
    held = produce(stack, 100)  # no source task is left to copy them

    declare(stack)
    stack.up()
    live = statuses_when(
        stack, lambda live: connector_states(live) == dict.fromkeys(ROLE_NAMES, "RUNNING"), "every connector RUNNING"
    )
    assert connector_states(live) == dict.fromkeys(ROLE_NAMES, "RUNNING")
    wait_until(lambda: held <= remote_keys(stack), 120, "records produced while stopped to arrive")


def test_hand_paused_connector_is_drift_that_up_refresh_reverts(stack: TestStack) -> None:
    out = stack.outputs()
    name = out["flows"][FLOW]["connectors"]["source"]
    url = out["connect"]["mm2"]["url"]
    httpx.put(f"{url}/connectors/{name}/pause", auth=connect_auth(out), timeout=10).raise_for_status()
    statuses_when(stack, lambda live: connector_states(live)["source"] == "PAUSED", "the hand pause")

    stack.pulumi("refresh", "--yes", "--skip-preview")
    preview = stack.preview_json()
    changed = [s for s in preview.get("steps", []) if s.get("op") == "update"]
    assert [s["urn"].rsplit("::", 1)[-1] for s in changed] == [name], changed
    before, after = changed[0]["oldState"]["inputs"], changed[0]["newState"]["inputs"]
    assert (before["desired_state"], after["desired_state"]) == ("PAUSED", "RUNNING")
    assert before["config"] == after["config"], "only the state drifted"

    stack.up()
    live = statuses_when(stack, lambda live: connector_states(live)["source"] == "RUNNING", "the source resumed")
    assert live["source"]["connector"]["state"] == "RUNNING"
    stack.pulumi("up", "--yes", "--expect-no-changes")


def test_with_its_first_worker_down_up_reaches_the_group_through_the_others(stack: TestStack) -> None:
    """A crash (or a DR event) took worker 0, whose URL is the group's exported one. Declared
    states still apply: every connector call fails over to worker 1 at once. Run with no retry
    budget, so an `up` that waited on the dead worker instead would fail, not just be slow."""
    worker_0 = process_marker(stack.name, worker_path("mm2", 0))
    stack.lose(worker_path("mm2", 0))
    # The survivor has taken over the group (leader, every connector and task) before the up.
    survivor = f"127.0.0.1:{int(stack.config['config']['mm2:workerGroups']['mm2']['restPort']) + 1}"
    statuses_when(
        stack,
        lambda live: all(
            e["state"] == "RUNNING" and e["worker_id"] == survivor
            for s in live.values()
            for e in [s["connector"], *s["tasks"]]
        ),
        "worker 1 running every connector and task",
        worker=1,
    )
    declare(stack, "paused")
    stack.env[RETRY_SECONDS_ENV] = "0"
    try:
        stack.up()
    finally:
        del stack.env[RETRY_SECONDS_ENV]
    live = statuses_when(
        stack,
        lambda live: connector_states(live) == dict.fromkeys(ROLE_NAMES, "PAUSED"),
        "every connector PAUSED",
        worker=1,
    )
    assert connector_states(live) == dict.fromkeys(ROLE_NAMES, "PAUSED")

    # Back to normal: the refresh finds worker 0 stopped and the up starts it again.
    declare(stack)
    stack.up("--refresh")
    live = statuses_when(
        stack, lambda live: connector_states(live) == dict.fromkeys(ROLE_NAMES, "RUNNING"), "every connector RUNNING"
    )
    assert proc.find_pids(worker_0), "worker 0 was not started again"
