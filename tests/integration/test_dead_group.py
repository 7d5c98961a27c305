"""A dead worker group on real processes: a dev-style stack (two workers, SASL, ACLs), every
worker SIGKILLed at once.

`bin/status` names the group and exits with its unhealthy code (3) at once, instead of waiting a
REST client's retry budget (61 s and exit 1 before); its wall-clock time is printed and bounded
against the same command's on the live group just before. Then, with no `pulumi up`, the group's
watcher starts both workers again (its log and `bin/status` say so) and the flow resumes: every
record produced before and while the group was dead arrives on the target.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.platform.local import process as proc
from components.platform.local.layout import process_marker, watcher_path, worker_path
from tests.integration.harness import (
    TestStack,
    dev_config_with_free_ports,
    produce_batch,
    read_keys,
    run_status,
    running,
    wait_until,
)

pytestmark = pytest.mark.integration

TOPIC, REMOTE = "orders", "primary.orders"
CONVERGE_S = 240
# The dead group may cost this much more than the live one: the probe adds at most its 2 s, the
# rest is the load changing between the two runs; the REST client's 60 s retry budget would not fit.
BEYOND_ALIVE_S = 10


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestStack]:
    with running(tmp_path_factory.mktemp("deadgroup"), dev_config_with_free_ports()) as s:
        yield s


def status(outputs: dict[str, Any], tmp: Path, *args: str) -> tuple[int, str, float]:
    started = time.monotonic()
    out = run_status(outputs, tmp, *args)
    return out.returncode, out.stdout + out.stderr, time.monotonic() - started


def test_a_killed_worker_group_is_named_at_once_and_comes_back_on_its_own(stack: TestStack) -> None:
    outputs = stack.outputs()
    before = [f"before-{i}".encode() for i in range(200)]
    produce_batch(outputs, "primary", TOPIC, before)
    assert len(set(read_keys(outputs, "dr", REMOTE, b"before-", len(before), CONVERGE_S))) == len(before)

    alive_s = status(outputs, stack.tmp)[2]
    markers = [process_marker(stack.name, worker_path("mm2", i)) for i in range(2)]
    pids = [p for m in markers for p in proc.find_pids(m)]
    assert len(pids) == 2, pids
    for pid in pids:
        os.killpg(pid, signal.SIGKILL)
    wait_until(lambda: not any(proc.find_pids(m) for m in markers), 30, "both workers gone")

    code, text, took = status(outputs, stack.tmp)
    print(f"bin/status with every worker of mm2 SIGKILLed: exit {code} in {took:.2f}s (alive: {alive_s:.2f}s)")
    assert code == 3, text
    assert "worker group mm2: no worker answered within 2 s" in text, text
    assert "UNREACHABLE" in text and "Connect did not answer" not in text, text
    # Against the live group's run, so the machine's load cancels out: at load average 37 on two
    # cores 1.04 s dead against 1.55 s alive.
    assert took - alive_s < BEYOND_ALIVE_S, f"bin/status took {took:.1f}s with a dead group, {alive_s:.1f}s alive"

    during = [f"during-{i}".encode() for i in range(200)]
    produce_batch(outputs, "primary", TOPIC, during)

    # No `pulumi up`: the watcher starts both workers again, and says so.
    log = stack.run_dir / watcher_path("mm2") / "watcher.log"
    wait_until(lambda: all(proc.find_pids(m) for m in markers), 90, "the watcher restarted both workers")
    text_log = log.read_text()
    assert "restarted worker 0" in text_log and "restarted worker 1" in text_log, text_log
    assert len(set(read_keys(outputs, "dr", REMOTE, b"during-", len(during), CONVERGE_S))) == len(during)
    assert len(set(read_keys(outputs, "dr", REMOTE, b"before-", len(before), CONVERGE_S))) == len(before)

    again = ("--stack", stack.name)
    code, text, _ = wait_until(
        lambda: (r := status(outputs, stack.tmp, *again))[0] == 0 and r, CONVERGE_S, "status healthy again"
    )
    assert "worker-restart" in text, text
