"""The local watcher provider on a real process: started with the stack's marker and its plan,
credentials in a 0600 file, found dead by read, stopped and cleaned up by delete."""

from __future__ import annotations

import json
import os
import stat
import sys
import uuid
from pathlib import Path

from components.platform.local import process as proc
from components.platform.local.watcher import AUTH_FILE, PLAN_FILE, STATUS_FILE, WatcherProvider
from components.watch.plan import WatchPlan, plan_document

ROOT = Path(__file__).resolve().parents[4]


def props(tmp_path: Path) -> dict[str, object]:
    # Nothing listens on port 9 (discard): the watcher reports the group unreachable and goes on.
    plan = plan_document(WatchPlan(group="g", url="http://127.0.0.1:9", connectors={"c-source": 2}, poll_s=0.5))
    return {
        "component": "ConnectWorkerGroup 'g', auto-restart watcher",
        "marker": f"unit-{uuid.uuid4().hex[:8]}/watcher-g",
        "run_dir": str(tmp_path / "run" / "watcher-g"),
        "plan": plan,
        "auth": {"username": "mm2-admin", "password": "not-a-real-password"},
        "python": sys.executable,
        "project_dir": str(ROOT),
    }


def test_create_starts_it_read_sees_it_delete_stops_it(tmp_path: Path) -> None:
    p = props(tmp_path)
    provider = WatcherProvider()
    outs = provider.create(p).outs
    try:
        run_dir = Path(str(p["run_dir"]))
        assert proc.find_pids(str(p["marker"])) == [outs["pid"]]
        status = json.loads((run_dir / STATUS_FILE).read_text())
        assert status["reachable"] is False and status["connectors"]["c-source"] == {"state": "UNKNOWN"}
        plan = json.loads((run_dir / PLAN_FILE).read_text())
        assert plan["authFile"] == str(run_dir / AUTH_FILE) and "not-a-real-password" not in json.dumps(plan)
        assert stat.S_IMODE(os.stat(run_dir / AUTH_FILE).st_mode) == 0o600
        cmdline = Path(f"/proc/{outs['pid']}/cmdline").read_bytes()
        assert b"not-a-real-password" not in cmdline
        assert provider.read(str(p["marker"]), outs).outs["running"] is True
    finally:
        provider.delete(str(p["marker"]), outs)
    assert proc.find_pids(str(p["marker"])) == []
    assert not Path(str(p["run_dir"])).exists()
    assert provider.read(str(p["marker"]), outs).outs["running"] is False
    diff = provider.diff(str(p["marker"]), {**outs, "running": False}, p)
    assert diff.changes is True  # found dead: the next up starts it again
