"""The watcher's Kubernetes objects: what the pod runs, what it mounts, and that the shipped
modules really run without the rest of the project."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from components.platform.kubernetes.watcher_objects import WATCHER_SOURCES, watcher_names, watcher_objects
from components.watch.plan import WatchPlan, plan_document

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
    assert container["command"][-2:] == ["--plan", "/opt/mm2-watcher/plan.json"]
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
    partial.pop("components/watch/backoff.py")
    with pytest.raises(ValueError, match=r"backoff\.py"):
        watcher_objects("mm2", "mm2", PLAN, partial, rest_username=None)


def _lay_out(objects: Any, root: Path) -> None:
    """Write the ConfigMap's files where the pod mounts them."""
    data = objects.config_map["data"]
    for item in objects.deployment["spec"]["template"]["spec"]["volumes"][0]["configMap"]["items"]:
        target = root / item["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(data[item["key"]])


def test_the_pod_installs_nothing_at_start() -> None:
    objects = watcher_objects("mm2", "mm2", PLAN, sources(), rest_username=None)
    (container,) = objects.deployment["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["python", "-m", "components.ops.watcher", "--plan", "/opt/mm2-watcher/plan.json"]
    assert "initContainers" not in objects.deployment["spec"]["template"]["spec"]
    assert not any("pip" in json.dumps(c) or "PYTHONPATH" in json.dumps(c) for c in [container])


def test_the_shipped_files_poll_connect_with_the_standard_library_alone(tmp_path: Path) -> None:
    """Lay the ConfigMap out as the pod does and run one poll there with `python -S` (no
    site-packages: no httpx, no pulumi), against a worker that refuses: the watcher must report it
    unreachable, not fail on an import."""
    objects = watcher_objects("mm2", "mm2", PLAN, sources(), rest_username=None)
    _lay_out(objects, tmp_path)
    code = (
        "import dataclasses, json, sys\n"
        "from components.ops import watcher\n"
        "plan = dataclasses.replace(watcher.read_plan('plan.json'), url='http://127.0.0.1:1', status_file='s.json')\n"
        "lines = []\n"
        "watcher.Watcher(plan, watcher._client_factory(plan), log=lines.append).tick()\n"
        "status = json.load(open('s.json'))\n"
        "ours = {'components', '__main__'}\n"
        "third = sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names) - ours)\n"
        "print(json.dumps({'reachable': status['reachable'], 'lines': lines, 'third': third}))\n"
    )
    run = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["third"] == [], f"the pod would need {out['third']}"
    assert out["reachable"] is False and "cannot reach Kafka Connect at http://127.0.0.1:1" in out["lines"][0]


def test_the_shipped_files_start_the_cli(tmp_path: Path) -> None:
    objects = watcher_objects("mm2", "mm2", PLAN, sources(), rest_username=None)
    _lay_out(objects, tmp_path)
    run = subprocess.run(
        [sys.executable, "-S", "-m", "components.ops.watcher", "--help"], cwd=tmp_path, capture_output=True, text=True
    )
    assert run.returncode == 0 and "--plan" in run.stdout, run.stderr[-2000:]
