"""Failed tasks repaired, on real parts: refresh shows a FAILED task, `up` restarts it, the watcher too.

One SCRAM + ACL stack (the dev shape, one worker). A source task is made to fail for real by
deleting the MM2 user's WRITE ACL on the remote topic behind the stack's back, then producing
to every partition: each task's producer is refused and Connect marks the tasks FAILED. In order:

1. `pulumi refresh` shows the failure as drift with the first line of its trace; after the ACL
   is restored `pulumi up` brings the task back to RUNNING within 30 s of starting;
2. with `autoRestart` on the source role, the stack's own watcher process restarts a task that
   failed for real within its first back-off step, and records it in its log and status file;
3. it stops after `maxRestarts` (1 here): a second real failure is left alone and reported;
4. the foreground command (`python -m components.ops.watcher`) restarts twice, then gives up.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from components.ops.watcher import AUTH_PASSWORD_ENV, AUTH_USER_ENV
from components.platform.local import process as proc
from components.platform.local.layout import process_marker
from components.platform.local.watcher import LOG_FILE, STATUS_FILE, watcher_path
from components.watch.backoff import Backoff
from tests.integration.harness import (
    ROOT,
    TestStack,
    arrives,
    connect_auth,
    kafka_conf,
    produce_batch,
    produce_one,
    running,
    stays_false,
    wait_until,
)

pytestmark = pytest.mark.integration

FLOW = "primary->dr"
SOURCE = "mm2-primary-to-dr-source"
REMOTE = "primary.orders"
FAIL_S = 120  # a denied produce fails the task within seconds; generous for two shared cores
UP_REPAIR_S = 30  # the bound: RUNNING again within 30 s of `up` starting (beyond the engine's own time)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests.integration.harness import dev_config_with_free_ports

    cfg = dev_config_with_free_ports()
    cfg["config"]["mm2:workerGroups"]["mm2"]["workers"] = 1
    with running(tmp_path_factory.mktemp("repair"), cfg) as s:
        yield s


def status(out: dict[str, Any]) -> dict[str, Any]:
    url = out["connect"]["mm2"]["url"]
    return httpx.get(f"{url}/connectors/{SOURCE}/status", auth=connect_auth(out), timeout=10).json()


def status_text(out: dict[str, Any]) -> str:
    """The connector's status for a failure message (the REST error if there is none)."""
    try:
        return json.dumps(status(out))[:3000]
    except (httpx.HTTPError, ValueError) as exc:
        return f"no status: {exc}"


def task_states(out: dict[str, Any]) -> list[str]:
    try:
        return [t["state"] for t in status(out).get("tasks", [])]
    except (httpx.HTTPError, ValueError):
        return []


def all_running(out: dict[str, Any]) -> bool:
    states = task_states(out)
    return bool(states) and set(states) == {"RUNNING"}


def _acl_admin(out: dict[str, Any]) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(kafka_conf(out, "dr"))


def _exact(binding: Any) -> Any:
    """The filter that matches exactly `binding`."""
    from confluent_kafka.admin import AclBindingFilter

    b = binding
    pattern = (b.restype, b.name, b.resource_pattern_type)
    return AclBindingFilter(*pattern, b.principal, b.host, b.operation, b.permission_type)


def revoke_remote_write(out: dict[str, Any]) -> list[Any]:
    """Delete every ALLOW WRITE binding of User:mm2 on dr that covers primary.orders; returns them."""
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    admin = _acl_admin(out)
    writes = AclBindingFilter(
        ResourceType.TOPIC, None, ResourcePatternType.ANY, "User:mm2", None, AclOperation.WRITE, AclPermissionType.ALLOW
    )
    covering = [
        b
        for b in admin.describe_acls(writes).result(30)
        if b.name in (REMOTE, "*")
        or (b.resource_pattern_type == ResourcePatternType.PREFIXED and REMOTE.startswith(b.name))
    ]
    assert covering, "the MM2 user had no WRITE binding on the remote topic to revoke"
    for b in covering:
        exact = _exact(b)
        admin.delete_acls([exact])[exact].result(30)
    return covering


def restore(out: dict[str, Any], bindings: list[Any]) -> None:
    """Create the bindings again and return once the broker answers with them: it applies a
    created ACL when it replays the metadata log, after the create has returned."""
    admin = _acl_admin(out)  # held: a collected client cancels its pending requests
    for future in admin.create_acls(bindings).values():
        future.result(30)

    def applied() -> bool:
        return all(admin.describe_acls(_exact(b)).result(30) for b in bindings)

    wait_until(applied, 30, "the broker to answer with the restored ACLs", poll_s=0.2)


def orders_owners(out: dict[str, Any]) -> dict[int, list[int]]:
    """The source tasks that replicate `orders`, each with its partitions, from the tasks' own
    configs (`task.assigned.partitions`): which task gets which partition is MM2's choice."""
    url = out["connect"]["mm2"]["url"]
    tasks = httpx.get(f"{url}/connectors/{SOURCE}/tasks", auth=connect_auth(out), timeout=10).json()
    owners: dict[int, list[int]] = {}
    for task in tasks:
        for encoded in task["config"].get("task.assigned.partitions", "").split(","):
            topic, _, partition = encoded.rpartition("-")
            if topic == "orders":
                owners.setdefault(task["id"]["task"], []).append(int(partition))
    assert owners, f"no source task replicates orders: {tasks}"
    return owners


def fail_for_real(out: dict[str, Any]) -> None:
    """Revoke WRITE and produce to every partition of orders until every task that replicates
    orders is FAILED. Not just the first: a task whose send was refused fails seconds later, and
    one failing after `up` or the watcher restarted the others would stay FAILED (seen once in CI)."""
    owners = orders_owners(out)
    partitions = sorted(p for ps in owners.values() for p in ps)

    def produced_and_all_failed() -> bool:
        produce_batch(
            out, "primary", "orders", [f"fail-{uuid.uuid4().hex[:8]}".encode() for _ in partitions], partitions
        )
        try:
            states = {t["id"]: t["state"] for t in status(out).get("tasks", [])}
        except (httpx.HTTPError, ValueError):
            return False
        return all(states.get(task) == "FAILED" for task in owners)

    what = f"source tasks {sorted(owners)} to FAIL on the revoked WRITE ACL"
    started = time.monotonic()
    wait_until(produced_and_all_failed, FAIL_S, what, poll_s=0.5)
    print(f"\n[measured] tasks replicating orders {owners}: all FAILED after {time.monotonic() - started:.1f}s")


def test_refresh_shows_a_failed_task_and_up_restarts_it(stack: TestStack) -> None:
    out = stack.outputs()
    key = f"before-{uuid.uuid4().hex}".encode()
    produce_one(out, "primary", "orders", key, b"v")
    assert arrives(out, "dr", REMOTE, key, 120, "it-repair"), "replication never worked"
    revoked = revoke_remote_write(out)
    fail_for_real(out)

    refresh = stack.pulumi("refresh", "--yes", "--skip-preview", "--diff")
    assert "FAILED" in refresh.stdout, refresh.stdout[-3000:]
    previewed = time.monotonic()
    preview = stack.preview_json()
    engine_s = time.monotonic() - previewed  # the engine running the program, nothing applied
    changed = {s["urn"].rsplit("::", 1)[-1]: s for s in preview.get("steps", []) if s.get("op") == "update"}
    # The revoked ACL is drift of its own (kafka-dr-acls); the connector is the only other change.
    assert set(changed) - {"kafka-dr-acls"} == {SOURCE}, sorted(changed)
    drift = changed[SOURCE]["oldState"]["inputs"]["desired_state"]
    assert drift.startswith("FAILED: task ") and "Exception" in drift, drift
    assert changed[SOURCE]["newState"]["inputs"]["desired_state"] == "RUNNING"

    restore(out, revoked)
    seen: dict[str, float] = {}
    started = time.monotonic()

    def watch() -> None:
        while "running" not in seen and time.monotonic() - started < 180:
            if all_running(out):
                seen["running"] = time.monotonic() - started
            time.sleep(0.25)

    poller = threading.Thread(target=watch, daemon=True)
    poller.start()
    stack.up()
    seen["up"] = time.monotonic() - started
    # The update waits for RUNNING (restart_failed): `up` returning is the repair, done.
    assert all_running(out), f"`up` returned with the tasks not RUNNING: {status_text(out)}"
    poller.join(timeout=180)
    running = f"{seen['running']:.1f}s" if "running" in seen else "never"
    print(
        f"\n[measured] up started -> source tasks RUNNING: {running}; up took {seen['up']:.1f}s; "
        f"a preview of the same program {engine_s:.1f}s"
    )
    # The 30 s from `up` starting, beyond what the engine itself takes to start, run the
    # program and diff (the preview above), which is what the suite's load stretches most. At load
    # average 25 on two cores: RUNNING 5.8 s after `up` started, the preview 3.7 s.
    assert seen.get("running") is not None and seen["running"] - engine_s <= UP_REPAIR_S, seen
    key = f"after-{uuid.uuid4().hex}".encode()
    produce_one(out, "primary", "orders", key, b"v")
    assert arrives(out, "dr", REMOTE, key, 120, "it-repair"), f"replication did not resume: {status_text(out)}"


def watcher_files(stack: TestStack) -> tuple[Path, Path]:
    directory = stack.run_dir / watcher_path("mm2")
    return directory / STATUS_FILE, directory / LOG_FILE


def watcher_pids(stack: TestStack) -> list[int]:
    pids = proc.find_pids(process_marker(stack.name, watcher_path("mm2")))
    assert pids, f"no watcher process running: {stack.markers()}"
    return pids


@contextlib.contextmanager
def held(pids: list[int]) -> Iterator[None]:
    """The processes stopped (SIGSTOP) inside the block, continued after it, also on failure."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


def test_the_stack_watcher_restarts_a_real_failure_within_its_first_step(stack: TestStack) -> None:
    stack.config["config"]["mm2:flows"][FLOW]["autoRestart"] = {"source": {"enabled": True, "maxRestarts": 1}}
    stack.write_config()
    stack.up()
    status_file, log_file = watcher_files(stack)
    assert any(m.endswith(watcher_path("mm2")) for m in stack.markers()), stack.markers()
    assert json.loads(status_file.read_text())["connectors"][SOURCE]["maxRestarts"] == 1

    out = stack.outputs()
    # The watcher is held (SIGSTOP) while the tasks fail and the ACL comes back: otherwise, on a
    # loaded machine, its first restart (5 s after it sees the failure) can come before the
    # restore, fail again and use up maxRestarts (seen once in CI). Let go, it sees the failure
    # at its next poll.
    with held(watcher_pids(stack)):
        revoked = revoke_remote_write(out)
        fail_for_real(out)
        restore(out, revoked)
        failed_at = time.monotonic()
    step = Backoff().first_s
    poll = 2.0  # the plan's pollSeconds: the watcher may see the failure one poll late
    wait_until(lambda: all_running(out), 60, "the watcher to bring the task back")
    took = time.monotonic() - failed_at
    print(f"\n[measured] watcher let go -> task RUNNING again: {took:.1f}s (first step {step:g}s)")
    doc = json.loads(status_file.read_text())
    restarts = [e for e in doc["events"] if e["action"] == "restart" and e["connector"] == SOURCE]
    assert len(restarts) == 1 and "FAILED" in restarts[0]["cause"], doc["events"]
    assert f"restarted {SOURCE} (restart 1 of 1)" in log_file.read_text()
    # Within the first step: the restart itself (and the task's start) within a few seconds after it.
    assert took <= step + poll + 10, took


def test_the_stack_watcher_stops_after_max_restarts(stack: TestStack) -> None:
    out = stack.outputs()
    status_file, log_file = watcher_files(stack)
    revoke_remote_write(out)
    fail_for_real(out)

    def gave_up() -> bool:
        return json.loads(status_file.read_text())["connectors"][SOURCE].get("gaveUp") is True

    wait_until(gave_up, 30, "the watcher to give up (maxRestarts 1 already used)")
    assert f"gave up on {SOURCE} after 1 restart(s) of 1" in log_file.read_text()
    # Past its first step and more: no further restart, the task stays FAILED.
    stays_false(
        lambda: sum(e["action"] == "restart" for e in json.loads(status_file.read_text())["events"]) != 1,
        Backoff().first_s + 5,
        "the watcher restarted again after maxRestarts",
    )
    assert "FAILED" in task_states(out)


def test_the_foreground_watcher_restarts_then_gives_up(stack: TestStack, tmp_path: Path) -> None:
    """The ACL is still revoked: every restart fails again; fast timings keep the test short."""
    # The outputs without any password on disk; the REST credentials go through the environment.
    out = stack.outputs()
    user, password = connect_auth(out) or ("", "")
    public = {
        **out,
        "clusters": {a: {k: c[k] for k in ("bootstrap", "securityProtocol")} for a, c in out["clusters"].items()},
    }
    public["connect"] = {g: {k: v for k, v in c.items() if k != "auth"} for g, c in out["connect"].items()}
    outputs_file = tmp_path / "outputs.json"
    outputs_file.write_text(json.dumps(public))
    env = {**os.environ, AUTH_USER_ENV: user, AUTH_PASSWORD_ENV: password}
    status_file = tmp_path / "status.json"
    cmd = [sys.executable, "-m", "components.ops.watcher", "--outputs", str(outputs_file), "--group", "mm2"]
    cmd += ["--connector", SOURCE, "--max-restarts", "2", "--first-s", "1", "--unit-s", "1", "--poll-s", "0.5"]
    cmd += ["--status-file", str(status_file), "--max-seconds", "60"]
    watcher = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:

        def gave_up() -> bool:
            # Records keep coming, so every restarted task meets the missing ACL again.
            produce_one(out, "primary", "orders", f"again-{uuid.uuid4().hex[:8]}".encode(), b"v")
            return (
                status_file.exists() and json.loads(status_file.read_text())["connectors"][SOURCE].get("gaveUp") is True
            )

        wait_until(gave_up, 45, "the foreground watcher to give up after 2 restarts")
        doc = json.loads(status_file.read_text())
        assert [e["action"] for e in doc["events"] if e["connector"] == SOURCE] == ["restart", "restart", "give-up"]
        assert doc["connectors"][SOURCE]["restarts"] == 2
    finally:
        watcher.terminate()
        log = watcher.communicate(timeout=30)[0]
    assert "restarted mm2-primary-to-dr-source (restart 2 of 2)" in log, log[-2000:]
    assert "gave up on mm2-primary-to-dr-source after 2 restart(s) of 2" in log, log[-2000:]
