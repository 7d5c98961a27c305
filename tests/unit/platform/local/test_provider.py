"""ProcessProvider: refresh of live and dead processes, in-place restarts on changed secret files."""

from __future__ import annotations

import subprocess

from components.platform.local.provider import ProcessProvider


def test_refresh_of_a_live_process_reports_it_running(marked: tuple[subprocess.Popen[bytes], str]) -> None:
    child, marker = marked
    result = ProcessProvider().read(marker, {"pid": float(child.pid), "marker": marker, "running": True})
    assert result.outs is not None and result.outs["running"] is True
    child.kill()
    child.wait()
    result = ProcessProvider().read(marker, {"pid": float(child.pid), "marker": marker, "running": True})
    assert result.outs is not None and result.outs["running"] is False


def test_changed_secret_file_restarts_the_process_in_place() -> None:
    base = {"marker": "m", "run_dir": "/r", "properties": {"a": "1"}, "secret_files": {"s": "old"}}
    diff = ProcessProvider().diff("m", base, {**base, "secret_files": {"s": "new"}})
    assert diff.changes is True and diff.replaces == []
    # State written before the input existed is no change.
    old_state = {k: v for k, v in base.items() if k != "secret_files"}
    assert ProcessProvider().diff("m", old_state, {**old_state, "secret_files": {}, "jvm_options": []}).changes is False
