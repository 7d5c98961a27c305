"""Liveness checks of local processes, with pids as Pulumi hands them to dynamic providers."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest

from components.local import process as proc
from components.local.provider import ProcessProvider


@pytest.fixture
def marked() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    marker = f"unit/{uuid.uuid4().hex[:8]}"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", f"-Dmm2.process={marker}"])
    try:
        # Popen may return before the exec: wait (bounded) for the child's own command line.
        deadline = time.monotonic() + 10
        while proc.find_pids(marker) != [child.pid] and time.monotonic() < deadline:
            time.sleep(0.05)
        yield child, marker
    finally:
        child.kill()
        child.wait()


def test_a_float_pid_from_pulumi_state_is_the_same_process(marked: tuple[subprocess.Popen[bytes], str]) -> None:
    child, marker = marked
    assert proc.is_running(float(child.pid), marker)
    assert not proc.is_running(float(child.pid), marker + "-other")


def test_refresh_of_a_live_process_reports_it_running(marked: tuple[subprocess.Popen[bytes], str]) -> None:
    child, marker = marked
    result = ProcessProvider().read(marker, {"pid": float(child.pid), "marker": marker, "running": True})
    assert result.outs is not None and result.outs["running"] is True
    child.kill()
    child.wait()
    result = ProcessProvider().read(marker, {"pid": float(child.pid), "marker": marker, "running": True})
    assert result.outs is not None and result.outs["running"] is False
