"""Faults on real processes: target broker restart, rolling worker restarts during `pulumi up`,
and the DR drill. The broker restart and the drill take the Spark validation stage's verdict for
"nothing lost": `bin/validate` on the flow exits 0 with every topic complete (duplicates may be a
warning: MM2 is at-least-once). The rolling restart reads the remote topic back and compares it
with what the source acknowledged. A Connect worker SIGKILLed while 100,000 records flow is
test_exactly_once.py's at-least-once scenario (the same stack shape, judged by the same stage).

The first two share one deployed copy of the dev stack; each starts by checking the stack is
whole and ends by restoring it (`pulumi refresh` + `pulumi up`). The drill stops the source
cluster, so it gets its own stack. Every stack is destroyed, and no process marker may be left."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from components.connect.client import ConnectClient
from components.ops.clients import connect_auth
from components.outputs.contract import StackExports
from components.platform.local import process as proc
from components.platform.local.layout import (
    LOGS_DIR,
    broker_path,
    lag_exporter_path,
    process_marker,
    watcher_path,
    worker_path,
)
from tests.integration.harness import ROOT, TestStack, all_running, deployed, read_keys, running, wait_until
from tests.integration.records import produce_orders, topic_total
from tests.integration.validation_stage import run_stage

pytestmark = pytest.mark.integration

FLOW = "primary->dr"
GROUP = "mm2"
WAIT_S = 300  # generous: the machine's two cores are shared with other JVMs


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with running(tmp_path_factory.mktemp("faults")) as s:
        yield s


@pytest.fixture
def whole(stack: TestStack) -> TestStack:
    """The shared stack with every process up and the flow RUNNING (restored if a test broke it)."""
    expected = _expected_markers(stack)
    if sorted(stack.markers()) != expected:
        _restore(stack)
    assert sorted(stack.markers()) == expected
    _wait_flow_running(stack)
    return stack


def _expected_markers(s: TestStack) -> list[str]:
    cfg = s.config["config"]
    found = [
        process_marker(s.name, broker_path(alias, i))
        for alias, c in cfg["mm2:clusters"].items()
        for i in range(int(c.get("brokers", 1)))
    ]
    found += [
        process_marker(s.name, worker_path(name, i))
        for name, g in cfg["mm2:workerGroups"].items()
        for i in range(g["workers"])
    ]
    found += [process_marker(s.name, watcher_path(name)) for name in cfg["mm2:workerGroups"]]
    found += [process_marker(s.name, lag_exporter_path(name)) for name in cfg["mm2:workerGroups"]]  # each runs flows
    return sorted(found)


# --- helpers ----------------------------------------------------------------------------------


def _restore(s: TestStack) -> None:
    """What an operator does after a crash: refresh sees the dead process, up restarts it in place."""
    s.pulumi("refresh", "--yes", "--skip-preview")
    s.up()


def _worker_url(s: TestStack, index: int) -> str:
    return f"http://127.0.0.1:{int(s.config['config']['mm2:workerGroups'][GROUP]['restPort']) + index}"


def _client(s: TestStack, out: dict[str, Any], url: str | None = None) -> ConnectClient:
    return ConnectClient(
        url or out["connect"][GROUP]["url"], auth=connect_auth(StackExports.from_json(out), GROUP), retry_budget_s=30
    )


def _statuses(s: TestStack, out: dict[str, Any], url: str | None = None) -> dict[str, Any]:
    with _client(s, out, url) as client:
        return {role: client.get_status(name) for role, name in out["flows"][FLOW]["connectors"].items()}


def _wait_flow_running(s: TestStack, url: str | None = None) -> dict[str, Any]:
    out = s.outputs()

    def check() -> dict[str, Any] | None:
        try:
            st = _statuses(s, out, url)
        except Exception:
            return None
        return st if all_running(st) else None

    return wait_until(check, WAIT_S, f"all connectors of {FLOW} RUNNING", poll_s=2)


def _verdict(name: str, acked: set[bytes], seen: Counter[bytes]) -> tuple[int, int]:
    missing = acked - set(seen)
    duplicates = sum(n - 1 for n in seen.values() if n > 1)
    print(f"\n[{name}] produced {len(acked)}, arrived {len(set(seen) & acked)}, missing {len(missing)}, "
          f"duplicates {duplicates}")  # fmt: skip
    return len(missing), duplicates


def _stage_finds_nothing_lost(s: TestStack, out: dict[str, Any], name: str, tmp: Path) -> None:
    """The validation stage's verdict on the whole flow, once the target caught up (bounded):
    every record of the source topics is on the target, and every other check passes."""
    run = run_stage(
        out,
        tmp / "report.json",
        s.env,
        *("--catch-up-timeout", str(WAIT_S), "--latency-window", "0", "--conf", "spark.sql.shuffle.partitions=8"),
    )
    topics = run.report["flows"][FLOW]["topics"]
    rows = [r for t in topics.values() for r in t.get("partitions") or []]
    source = sum(r.get("sourceCount", r.get("sourceRecords", 0)) for r in rows)
    target = sum(r.get("targetCount", r.get("targetRecords", 0)) for r in rows)
    print(f"[{name}] validation stage: exit {run.code} in {run.seconds:.0f}s; {source} source record(s), "
          f"{target} on the target; failed {run.report['failedChecks']}")  # fmt: skip
    assert run.losses() == {}, f"the stage found records lost or doubled: {run.losses()}\n{run.summary()}"
    assert run.code == 0, run.summary()


# --- tests ------------------------------------------------------------------------------------


def test_target_broker_restart_mid_stream_loses_nothing(whole: TestStack, tmp_path: Path) -> None:
    s = whole
    out = s.outputs()
    records = 50_000
    run = f"broker-{uuid.uuid4().hex[:6]}"
    marker = process_marker(s.name, broker_path("dr", 0))
    baseline = topic_total(out, "dr", "primary.orders")

    result: dict[str, Any] = {}
    producer = threading.Thread(target=lambda: result.update(acked=produce_orders(out, run, records, rate=5_000)))
    producer.start()
    wait_until(
        lambda: topic_total(out, "dr", "primary.orders") - baseline >= 5_000,
        WAIT_S,
        "5,000 records replicated",
        poll_s=0.1,
    )
    replicated_at_stop = topic_total(out, "dr", "primary.orders") - baseline
    stopped_at = time.monotonic()
    proc.stop(marker)  # SIGTERM, SIGKILL after 30 s: the broker's controlled shutdown
    assert not proc.find_pids(marker)
    print(f"\n[broker restart] stopped dr broker-0 after {replicated_at_stop} of {records} records replicated")
    assert replicated_at_stop < records, "the broker was not stopped mid-stream"

    refreshed = s.pulumi("refresh", "--yes", "--skip-preview")
    assert "kafka-dr-broker-0" in refreshed.stdout, refreshed.stdout[-3000:]
    s.up()
    assert proc.find_pids(marker), "refresh + up did not restart dr broker-0"
    print(f"[broker restart] dr broker-0 back after {time.monotonic() - stopped_at:.1f}s (refresh + up)")
    producer.join(WAIT_S)
    acked = result["acked"]
    assert len(acked) == records

    _stage_finds_nothing_lost(s, out, "broker restart", tmp_path)
    _wait_flow_running(s)


def test_rolling_worker_restarts_during_pulumi_up_converge(whole: TestStack) -> None:
    s = whole
    original = copy.deepcopy(s.config)
    # Worker-independent flow settings: an in-place update of the source and checkpoint connectors.
    settings = s.config["config"]["mm2:flows"][FLOW].setdefault("settings", {})
    settings["offset.lag.max"] = "50"
    settings["emit.checkpoints.interval.seconds"] = "4"
    s.write_config()
    out = s.outputs()
    run = f"roll-{uuid.uuid4().hex[:6]}"
    try:
        result: dict[str, Any] = {}

        def up() -> None:
            result["up"] = s.pulumi("up", "--yes", "--skip-preview", check=False)

        updater = threading.Thread(target=up)
        updater.start()
        producer = threading.Thread(target=lambda: result.update(acked=produce_orders(out, run, 20_000, rate=1_000)))
        producer.start()
        restarts = []
        for index in (1, 0):  # worker-0 serves the REST URL the update talks to: restart it second
            began = time.monotonic()
            _restart_worker(s, out, index)
            restarts.append(f"worker-{index} {time.monotonic() - began:.1f}s")
        updater.join(900)
        producer.join(WAIT_S)
        up_result = result["up"]
        print(f"\n[rolling restart] restarted {', '.join(restarts)} while `pulumi up` ran "
              f"(exit {up_result.returncode})")  # fmt: skip
        assert up_result.returncode == 0, (
            f"pulumi up did not converge:\n{up_result.stdout[-4000:]}\n{up_result.stderr[-2000:]}"
        )

        _wait_flow_running(s)
        with _client(s, out) as client:
            names = out["flows"][FLOW]["connectors"]
            assert (client.get_config(names["source"]) or {}).get("offset.lag.max") == "50"
            assert (client.get_config(names["checkpoint"]) or {}).get("emit.checkpoints.interval.seconds") == "4"
        acked = result["acked"]
        no_commit = {"enable.auto.commit": False}
        seen = Counter(read_keys(out, "dr", "primary.orders", run.encode(), acked, WAIT_S, **no_commit))
        missing, _ = _verdict("rolling restart", acked, seen)
        assert missing == 0, f"{missing} of {len(acked)} records never arrived in primary.orders"

        # The workers restarted behind Pulumi's back have new pids: refresh + up adopts them by
        # restarting in place, after which the stack is at rest.
        _restore(s)
        s.up("--expect-no-changes")
        _wait_flow_running(s)
    finally:
        s.config = original
        s.write_config()


def _restart_worker(s: TestStack, out: dict[str, Any], index: int) -> None:
    """SIGTERM one worker and start it again with its exact command line, as a supervisor would."""
    from components.platform.readiness import connect_answers

    marker = process_marker(s.name, worker_path(GROUP, index))
    pids = proc.find_pids(marker)
    assert len(pids) == 1, f"worker-{index}: expected one process, found {pids}"
    argv = [a.decode() for a in Path(f"/proc/{pids[0]}/cmdline").read_bytes().split(b"\0") if a]
    env = dict(
        line.decode().split("=", 1)
        for line in Path(f"/proc/{pids[0]}/environ").read_bytes().split(b"\0")
        if b"=" in line
    )
    run_dir = s.run_dir / worker_path(GROUP, index)
    with proc.held(str(run_dir)):  # the supervisor here, not the stack's watcher, starts it again
        os.kill(pids[0], signal.SIGTERM)
        wait_until(lambda: not proc.find_pids(marker), 120, f"worker-{index} to shut down", poll_s=0.2)
        with open(run_dir / LOGS_DIR / "stdout.log", "ab") as log:
            child = subprocess.Popen(
                argv, cwd=run_dir, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
    url = _worker_url(s, index)
    auth = connect_auth(StackExports.from_json(out), GROUP)
    wait_until(lambda: child.poll() is None and connect_answers(url, auth) is None, WAIT_S, f"worker-{index} ready")


def test_dr_drill_loses_nothing_and_bounds_rereads(tmp_path: Path) -> None:
    with deployed(tmp_path) as s:
        s.up()
        outputs_file = tmp_path / "outputs.json"
        outputs_file.write_text(json.dumps(s.outputs()))
        cmd = [str(ROOT / "bin" / "drill"), "--stack", s.name, "--outputs", str(outputs_file), "--yes", "--json"]
        started = time.monotonic()
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
        print(f"\n[drill] {' '.join(cmd[1:])} ({time.monotonic() - started:.0f}s, exit {done.returncode})")
        print(done.stderr[-6000:])
        assert done.stdout.strip(), f"the drill printed no report:\n{done.stderr[-4000:]}"
        report = json.loads(done.stdout)
        f = report["figures"]
        print(json.dumps(f, indent=2))
        assert f["produced"] >= 30_000 * 0.9 and f["consumed_on_source"] > 0 and f["consumed_on_dr"] > 0
        assert f["lost"] == 0, f"records lost: {f['lost_sample']}"
        assert f["reread"] <= f["reread_bound"], f"re-read {f['reread']} > bound {f['reread_bound']}"
        assert f["time_to_first_record_s"] is not None
        assert done.returncode == 0
        assert not [m for m in s.markers() if "/primary/" in m], "the drill did not stop the source"
        # Its source back (refresh + up, as the drill's own restore), the flow must be whole: every
        # record the drill produced on the source is on DR, by the validation stage's verdict.
        _restore(s)
        _stage_finds_nothing_lost(s, s.outputs(), "drill", tmp_path)
    assert s.markers() == [], f"processes left behind: {s.markers()}"
