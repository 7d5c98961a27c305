"""Bad input fails with the component, the cause and the fix, and leaves nothing running.

Covers issue 2's list: invalid stack config, a port already in use, an unreachable Connect
endpoint, a connector config that Connect rejects, and missing Java or Go (or too old a Go) at
bootstrap.
"""

from __future__ import annotations

import copy
import json
import os
import re
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from components.connect.provider import RETRY_SECONDS_ENV
from components.platform.local import process as proc
from components.platform.local.layout import broker_path, process_marker
from tests.integration.harness import ROOT, TestStack, deployed, dev_config_with_free_ports, free_port_block

pytestmark = pytest.mark.integration
FLOW = "primary->dr"


def resources(stack: TestStack) -> list[dict[str, Any]]:
    state = json.loads(stack.pulumi("stack", "export").stdout)
    return [r for r in state["deployment"].get("resources") or [] if r["type"] != "pulumi:pulumi:Stack"]


def flow_connector_names() -> list[str]:
    """The Connect names of the flow's three connectors."""
    return [f"mm2-primary-to-dr-{role}" for role in ("source", "checkpoint", "heartbeat")]


def test_invalid_config_fails_preview_naming_every_key(tmp_path: Path) -> None:
    cfg = dev_config_with_free_ports()
    flows = cfg["config"]["mm2:flows"]
    flows[FLOW]["settings"]["offset.lag.max"] = "lots"
    flows["primary->nowhere"] = {"workerGroup": "mm2", "topics": ["orders"]}
    with deployed(tmp_path, cfg) as stack:
        out = stack.pulumi("up", "--yes", check=False)
        text = out.stdout + out.stderr
        assert out.returncode != 0
        assert 'mm2:flows.primary->dr.settings["offset.lag.max"]' in text, text[-3000:]
        assert "primary->nowhere" in text and "nowhere" in text, text[-3000:]
        assert text.count("Fix:") >= 2, "every problem carries its fix"
        assert resources(stack) == [], "nothing may be deployed when the config is invalid"
        assert stack.markers() == []


def test_port_in_use_names_component_port_and_fix(tmp_path: Path) -> None:
    cfg = dev_config_with_free_ports()
    port = cfg["config"]["mm2:clusters"]["primary"]["port"]
    with socket.socket() as squatter, deployed(tmp_path, cfg) as stack:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        out = stack.pulumi("up", "--yes", "--skip-preview", check=False)
        text = out.stdout + out.stderr
        assert out.returncode != 0
        assert "KafkaCluster 'primary', broker 0" in text, text[-3000:]
        assert f"{port}" in text and "already in use" in text and "Fix:" in text, text[-3000:]
        assert "mm2:clusters.primary.port" in text
        # The failed broker left no process and no directory behind.
        assert not proc.find_pids(process_marker(stack.name, broker_path("primary", 0)))
        assert not (stack.run_dir / "primary").exists()


def test_unreachable_connect_endpoint_names_url_and_fix(tmp_path: Path) -> None:
    cfg = dev_config_with_free_ports()
    dead = free_port_block(1)
    cfg["config"]["mm2:workerGroups"]["mm2"] = {"cluster": "dr", "url": f"http://127.0.0.1:{dead}"}
    with deployed(tmp_path, cfg) as stack:
        # The test is about the message: retrying a dead endpoint for the default 60 s adds nothing.
        stack.env[RETRY_SECONDS_ENV] = "3"
        out = stack.pulumi("up", "--yes", "--skip-preview", check=False, timeout=600)
        text = out.stdout + out.stderr
        assert out.returncode != 0
        assert f"127.0.0.1:{dead}" in text, text[-3000:]
        assert "cannot reach Kafka Connect" in text, text[-3000:]
        # The engine creates the flow's connectors concurrently and stops at the first failure:
        # which one it reports is not promised, only that the error names one of them.
        assert any(name in text for name in flow_connector_names()), text[-3000:]
        connectors = [r for r in resources(stack) if r["type"] == "pulumi-python:dynamic/connect:Connector"]
        assert connectors == [], "no connector may be recorded as created"


def test_connector_config_rejected_by_connect_fails_preview_and_changes_nothing(tmp_path: Path) -> None:
    with deployed(tmp_path) as stack:
        stack.up()
        good = copy.deepcopy(stack.config)
        stack.config["config"]["mm2:flows"][FLOW]["replicationPolicy"] = {"class": "com.example.NoSuchPolicy"}
        stack.write_config()
        try:
            out = stack.pulumi("up", "--yes", check=False)
        finally:
            stack.config = good
            stack.write_config()
        text = out.stdout + out.stderr
        assert out.returncode != 0
        assert "replication.policy.class" in text and "com.example.NoSuchPolicy" in text, text[-3000:]
        # Every connector of the flow carries the policy; the engine checks them in no promised
        # order and may stop at the first rejection, so the error names one of them.
        assert any(name in text for name in flow_connector_names()), text[-3000:]
        # Nothing changed: the running connectors kept their config.
        stack.up("--expect-no-changes")
        states = stack.outputs()["flows"][FLOW]["states"]
        assert set(states.values()) == {"RUNNING"}, states


def _shim_path(tmp: Path, tools: list[str]) -> str:
    shim = tmp / "shim"
    shim.mkdir()
    for tool in tools:
        found = subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        assert found, f"{tool} needed for this test"
        (shim / tool).symlink_to(found)
    return str(shim)


@pytest.mark.parametrize(
    ("missing", "expect"),
    [("java", "java not found"), ("go", "go not found")],
)
def test_bootstrap_names_a_missing_tool_and_the_fix(tmp_path: Path, missing: str, expect: str) -> None:
    base = ["python3", "dirname", "cat", "sha256sum", "cut", "mkdir", "sed", "java", "mvn", "go"]
    path = _shim_path(tmp_path, [t for t in base if t != missing])
    env = {"PATH": path, "HOME": os.environ["HOME"], "MM2_CACHE": str(tmp_path / "empty-cache")}
    out = subprocess.run(["/bin/bash", str(ROOT / "bin" / "bootstrap")], env=env, capture_output=True, text=True)
    assert out.returncode != 0
    assert expect in out.stderr, out.stderr
    assert "Install" in out.stderr, "the message says how to fix it"
    assert not (tmp_path / "empty-cache" / f"pulumi-{_pulumi_version()}" / "bin" / "pulumi").exists()


def _pulumi_version() -> str:
    env = (ROOT / "toolchain" / "versions.env").read_text()
    return next(line.split("=", 1)[1] for line in env.splitlines() if line.startswith("PULUMI_VERSION="))


def test_bootstrap_refuses_a_go_older_than_the_clis_go_mod_before_building(tmp_path: Path) -> None:
    needed = next(
        line.split()[1]
        for line in (ROOT / "toolchain" / "pulumi" / "go.mod").read_text().splitlines()
        if line.startswith("go ")
    )
    path = _shim_path(tmp_path, ["python3", "dirname", "cat", "sha256sum", "cut", "mkdir", "sed", "java", "mvn"])
    old_go = Path(path) / "go"  # answers like a Go 1.25.11 would
    old_go.write_text('#!/bin/sh\ncase "$*" in "env GOVERSION") echo go1.25.11 ;; *) exit 3 ;; esac\n')
    old_go.chmod(0o755)
    env = {"PATH": path, "HOME": os.environ["HOME"], "MM2_CACHE": str(tmp_path / "empty-cache")}
    out = subprocess.run(["/bin/bash", str(ROOT / "bin" / "bootstrap")], env=env, capture_output=True, text=True)
    assert out.returncode != 0
    assert f"Go 1.25.11 found ({old_go})" in out.stderr, out.stderr
    assert f"needs Go {needed}+" in out.stderr and f"Install Go {needed}+" in out.stderr, out.stderr
    assert "building" not in out.stderr and "installing" not in out.stderr, "it failed before any build"
    assert not (tmp_path / "empty-cache").exists()


def test_a_kubernetes_context_missing_or_not_answering_fails_preview_naming_it(tmp_path: Path) -> None:
    from tests.integration.kube import stack_config as kube_stack_config

    cfg = kube_stack_config()
    cfg["config"]["mm2-platform:kubernetes"]["workerGroups"]["to-us"]["context"] = "prod-nowhere"
    down = free_port_block(1)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "clusters": [{"name": "node", "cluster": {"server": f"https://127.0.0.1:{down}"}}],
                "contexts": [{"name": "mm2-kube", "context": {"cluster": "node", "user": "u"}}],
                "users": [{"name": "u", "user": {}}],
                "current-context": "mm2-kube",
            }
        )
    )
    with deployed(tmp_path / "stack", cfg) as stack:
        stack.env["KUBECONFIG"] = str(kubeconfig)
        out = stack.pulumi("preview", check=False, timeout=300)
        text = out.stdout + out.stderr
        assert out.returncode != 0
        # Named by the first key that uses the context (the config's order: either cluster).
        assert re.search(
            rf"mm2-platform:kubernetes\.clusters\.(us|eu)\.context: the Kubernetes API server of context "
            rf"'mm2-kube' \(https://127\.0\.0\.1:{down}\) does not answer",
            text,
        ), text[-3000:]
        assert "mm2-platform:kubernetes.workerGroups.to-us.context: the kubeconfig context 'prod-nowhere'" in text
        assert "bin/kube up" in text and "Traceback" not in text, text[-3000:]
        assert resources(stack) == []
