"""ProcessProvider: refresh of live and dead processes, in-place restarts on changed secret files."""

from __future__ import annotations

import subprocess
from pathlib import Path

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


def test_diff_takes_the_group_size_from_its_inputs_and_reads_no_file(tmp_path: Path) -> None:
    """Two deployed sibling workers on disk, but the input says three: the preview names what the
    inputs say (diff is pure; the platform sets `group_size`), and without it a worker counts one."""
    for index in (0, 1):
        (tmp_path / f"worker-{index}").mkdir()
    olds = {"marker": "m", "run_dir": str(tmp_path / "worker-0"), "properties": {"a": "1"}, "rolling": None}
    news = {**olds, "properties": {"a": "2"}, "group_size": 3.0}
    assert "all 3 together" in ProcessProvider().diff("m", olds, news).impacts[0][1]
    alone = ProcessProvider().diff("m", olds, {**news, "group_size": None}).impacts[0][1]
    assert "all 2 together" not in alone and "all 3 together" not in alone, alone
