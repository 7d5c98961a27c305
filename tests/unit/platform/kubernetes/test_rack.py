"""The brokers' rack init container's script, run by bash against a stand-in `curl` that answers
as the API server would (components/platform/kubernetes/rack.py): the zone is written where the
start script reads it, and a node without the label fails naming the node, the label and the fix."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from components.platform.kubernetes import rack

SETTING = "mm2-platform:kubernetes.kafka.zoneLabel"


def run(tmp_path: Path, labels: dict[str, str], curl_exit: int = 0) -> tuple[subprocess.CompletedProcess[str], Path]:
    stub = tmp_path / "bin"
    stub.mkdir()
    node = {"kind": "Node", "metadata": {"name": "n2", "labels": labels}, "status": {"capacity": {"cpu": "2"}}}
    answer = tmp_path / "node.json"
    answer.write_text(json.dumps(node))
    curl = stub / "curl"
    curl.write_text(f"#!/bin/sh\ncat {answer}\nexit {curl_exit}\n")
    curl.chmod(0o755)
    runtime, token = tmp_path / "runtime", tmp_path / "sa"
    runtime.mkdir(), token.mkdir()
    (token / "token").write_text("t")
    script = rack.rack_script("topology.kubernetes.io/zone", SETTING)
    script = script.replace(rack.RACK_FILE, str(runtime / "rack")).replace(rack.TOKEN_DIR, str(token))
    script = script.replace("/dev/termination-log", str(tmp_path / "termination-log"))
    env = {
        **os.environ,
        "PATH": f"{stub}:{os.environ['PATH']}",
        "NODE_NAME": "n2",
        "KUBERNETES_SERVICE_HOST": "10.0.0.1",
        "KUBERNETES_SERVICE_PORT": "443",
    }
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=30)
    return done, runtime / "rack"


def test_the_nodes_zone_is_written_for_the_start_script(tmp_path: Path) -> None:
    done, written = run(tmp_path, {"kubernetes.io/hostname": "n2", "topology.kubernetes.io/zone": "zone-b"})
    assert done.returncode == 0, done.stderr
    assert written.read_text() == "zone-b\n"
    assert "rack: zone-b (node n2)" in done.stdout


@pytest.mark.parametrize("labels", [{"kubernetes.io/hostname": "n2"}, {"topology.kubernetes.io/zoneX": "z"}])
def test_a_node_without_the_label_fails_naming_node_label_and_fix(tmp_path: Path, labels: dict[str, str]) -> None:
    done, written = run(tmp_path, labels)
    assert done.returncode == 1 and not written.exists()
    message = (tmp_path / "termination-log").read_text()
    assert "rack: node n2 has no label topology.kubernetes.io/zone, so broker.rack cannot be its zone." in message
    assert "kubectl label node n2 topology.kubernetes.io/zone=<zone>" in message and SETTING in message


def test_an_api_server_that_refuses_fails_with_its_answer(tmp_path: Path) -> None:
    done, written = run(tmp_path, {"topology.kubernetes.io/zone": "zone-b"}, curl_exit=22)
    assert done.returncode == 1 and not written.exists()
    assert "rack: cannot read node n2 from the API server:" in done.stderr
