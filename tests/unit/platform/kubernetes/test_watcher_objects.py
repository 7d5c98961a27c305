"""The watcher's Kubernetes objects: what the pod runs, what it mounts, and that the shipped
modules really run without the rest of the project."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from components.ops.watcher import WatchPlan, plan_document
from components.platform.kubernetes.watcher_objects import WATCHER_SOURCES, watcher_names, watcher_objects

ROOT = Path(__file__).resolve().parents[4]
PLAN = plan_document(WatchPlan(group="mm2", url="http://mm2-connect-api.mm2.svc:8083", connectors={"c-source": 3}))


def sources() -> dict[str, str]:
    return {p: (ROOT / p).read_text() for p in WATCHER_SOURCES}


def test_one_replica_recreated_running_the_plan_with_the_password_from_a_secret() -> None:
    objects = watcher_objects("mm2", "mm2", PLAN, sources(), rest_username="mm2-admin")
    deployment, _, secret = watcher_names("mm2")
    spec = objects.deployment["spec"]
    assert objects.deployment["metadata"]["name"] == deployment
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    container = spec["template"]["spec"]["containers"][0]
    assert container["command"][-1].endswith("python -m components.ops.watcher --plan /opt/mm2-watcher/plan.json")
    env = {e["name"]: e for e in container["env"]}
    assert env["MM2_WATCHER_REST_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": secret, "key": "password"}
    assert objects.secret_name == secret
    assert json.loads(objects.config_map["data"]["plan.json"])["connectors"] == {"c-source": {"maxRestarts": 3}}
    mounted = {i["path"] for i in spec["template"]["spec"]["volumes"][0]["configMap"]["items"]}
    assert set(WATCHER_SOURCES) | {"plan.json", "components/__init__.py"} <= mounted


def test_without_rest_auth_no_secret_is_referenced() -> None:
    objects = watcher_objects("mm2", "mm2", PLAN, sources(), rest_username=None)
    assert objects.secret_name is None
    assert "secretKeyRef" not in json.dumps(objects.deployment)


def test_a_missing_source_file_is_an_error_naming_it() -> None:
    partial = sources()
    partial.pop("components/ops/restart_backoff.py")
    with pytest.raises(ValueError, match=r"restart_backoff\.py"):
        watcher_objects("mm2", "mm2", PLAN, partial, rest_username=None)


def test_the_shipped_files_run_without_pulumi(tmp_path: Path) -> None:
    """Lay the ConfigMap out as the pod does and start the watcher's CLI there."""
    objects = watcher_objects("mm2", "mm2", PLAN, sources(), rest_username=None)
    data = objects.config_map["data"]
    for item in objects.deployment["spec"]["template"]["spec"]["volumes"][0]["configMap"]["items"]:
        target = tmp_path / item["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(data[item["key"]])
    code = (
        "import sys, runpy; sys.argv = ['w', '--help']\n"
        "try:\n    runpy.run_module('components.ops.watcher', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('PULUMI' if any(m.startswith('pulumi') for m in sys.modules) else 'CLEAN')"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert "--plan" in out.stdout and out.stdout.strip().endswith("CLEAN"), out.stdout + out.stderr
