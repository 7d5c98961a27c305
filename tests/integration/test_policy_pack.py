"""The CrossGuard pack through the real engine: `pulumi preview --policy-pack policies`.

Previews only: a mandatory violation must stop the preview before anything is deployed, so the
stacks here never start a process.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.harness import ROOT, TestStack, dev_config_with_free_ports, example_config_with_free_ports

pytestmark = pytest.mark.integration

LOOP_RULE = "no-name-preserving-replication-on-cycles"


def identity(cfg: dict[str, Any]) -> dict[str, Any]:
    cfg = copy.deepcopy(cfg)
    for flow in cfg["config"]["mm2:flows"].values():
        flow["replicationPolicy"] = {"class": "identity"}
    cfg["config"].get("mm2:defaults", {}).pop("replicationPolicy", None)
    return cfg


def three_cluster_ring() -> dict[str, Any]:
    clusters = {
        name: {"platform": "local", "brokers": 1, "port": port, "topics": {"orders": {"partitions": 1}}}
        for name, port in (("a", 21092), ("b", 21192), ("c", 21292))
    }
    groups = {f"on-{n}": {"cluster": n, "restPort": p} for n, p in (("a", 21083), ("b", 21183), ("c", 21283))}
    flows = {
        f"{s}->{t}": {"workerGroup": f"on-{t}", "topics": ["orders"], "replicationPolicy": {"class": "identity"}}
        for s, t in (("a", "b"), ("b", "c"), ("c", "a"))
    }
    return {"config": {"mm2:clusters": clusters, "mm2:workerGroups": groups, "mm2:flows": flows}}


def preview_with_pack(tmp: Path, config: dict[str, Any], *extra: str, dev: bool = True) -> tuple[TestStack, Any]:
    """`pulumi preview` with the pack. `dev`: the test stack is a throwaway copy on this machine, so
    the pack treats it as a dev stack, like `dev`; without it, the stack is held to every rule."""
    stack = TestStack(tmp, config)
    stack.init()
    dev_stacks = {"devStacks": ["dev", stack.name] if dev else ["dev"]}
    pack_config = tmp / "policy-config.json"
    pack_config.write_text(
        json.dumps({"connect-rest-requires-auth": dev_stacks, "source-connector-min-tasks": dev_stacks})
    )
    out = stack.pulumi(
        "preview",
        "--policy-pack",
        str(ROOT / "policies"),
        "--policy-pack-config",
        str(pack_config),
        *extra,
        check=False,
    )
    return stack, out


def assert_nothing_deployed(stack: TestStack) -> None:
    exported = stack.pulumi("stack", "export").stdout
    state = yaml.safe_load(exported)  # JSON is YAML
    assert not state["deployment"].get("resources"), "a blocked preview must leave the stack empty"


def test_dev_stack_passes_the_pack(tmp_path: Path) -> None:
    stack, out = preview_with_pack(tmp_path, dev_config_with_free_ports())
    try:
        assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
        assert "mandatory" not in out.stdout.lower(), out.stdout[-4000:]
    finally:
        stack.destroy()


def test_identity_active_active_is_blocked(tmp_path: Path) -> None:
    cfg = identity(yaml.safe_load((ROOT / "examples" / "active-active.yaml").read_text()))
    stack, out = preview_with_pack(tmp_path, cfg)
    try:
        text = out.stdout + out.stderr
        assert out.returncode != 0, text[-4000:]
        assert LOOP_RULE in text, text[-4000:]
        assert "east -> west -> east" in text or "west -> east -> west" in text, text[-4000:]
        assert_nothing_deployed(stack)
    finally:
        stack.destroy()


def test_identity_three_cluster_ring_is_blocked(tmp_path: Path) -> None:
    stack, out = preview_with_pack(tmp_path, three_cluster_ring())
    try:
        text = out.stdout + out.stderr
        assert out.returncode != 0, text[-4000:]
        assert LOOP_RULE in text, text[-4000:]
        assert any(c in text for c in ("a -> b -> c -> a", "b -> c -> a -> b", "c -> a -> b -> c")), text[-4000:]
        assert_nothing_deployed(stack)
    finally:
        stack.destroy()


def test_default_policy_active_active_passes_the_loop_rule(tmp_path: Path) -> None:
    cfg = yaml.safe_load((ROOT / "examples" / "active-active.yaml").read_text())
    stack, out = preview_with_pack(tmp_path, cfg)
    try:
        text = out.stdout + out.stderr
        assert LOOP_RULE not in text, text[-4000:]
        assert out.returncode == 0, text[-4000:]
    finally:
        stack.destroy()


def test_up_with_the_pack_creates_nothing_for_an_identity_cycle(tmp_path: Path) -> None:
    cfg = identity(yaml.safe_load((ROOT / "examples" / "active-active.yaml").read_text()))
    stack = TestStack(tmp_path, cfg)
    stack.init()
    try:
        pack_config = tmp_path / "policy-config.json"
        pack_config.write_text(json.dumps({"connect-rest-requires-auth": {"devStacks": ["dev", stack.name]}}))
        out = stack.pulumi(
            "up",
            "--yes",
            "--policy-pack",
            str(ROOT / "policies"),
            "--policy-pack-config",
            str(pack_config),
            check=False,
        )
        text = out.stdout + out.stderr
        assert out.returncode != 0, text[-4000:]
        assert LOOP_RULE in text, text[-4000:]
        assert_nothing_deployed(stack)
        assert stack.markers() == [], "no process may have been started"
    finally:
        stack.destroy()


# kube-node previews only against a running Kubernetes (its context is asked at preview): the
# Kubernetes lane previews it with the pack (tests/integration/test_kube_stack.py).
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.yaml") if p.stem != "kube-node")


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_passes_the_pack_on_a_non_dev_stack(tmp_path: Path, example: str) -> None:
    """A new user copies an example into a stack of their own (any name but `dev`): no mandatory
    rule of the project's own pack stops its preview. (Advisories may remain: the plain-text
    examples warn that their cross-datacenter flows do not use TLS.)"""
    stack, out = preview_with_pack(tmp_path, example_config_with_free_ports(example), dev=False)
    try:
        text = out.stdout + out.stderr
        assert out.returncode == 0, text[-4000:]
        assert "[mandatory]" not in text.lower(), text[-4000:]
    finally:
        stack.destroy()


def test_six_cluster_mesh_previews_every_connector_with_the_pack(tmp_path: Path) -> None:
    """The full mesh (six clusters, three datacenters, twelve flows) is previewed, never deployed:
    the pack passes it and the plan holds three connectors per flow on the flow's worker group."""
    cfg = example_config_with_free_ports("six-cluster-mesh")
    flows = cfg["config"]["mm2:flows"]
    stack, out = preview_with_pack(tmp_path, cfg, "--json", dev=False)
    try:
        assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
        preview = json.loads(out.stdout)
        mandatory = [d for d in preview.get("diagnostics", []) if d.get("severity") == "error"]
        assert mandatory == [], mandatory
        connectors = sorted(
            s["urn"].rsplit("::", 1)[-1]
            for s in preview["steps"]
            if s["op"] == "create" and s["urn"].split("::")[2].endswith("connect:Connector")
        )
        expected = sorted(
            f"mm2-{name.replace('->', '-to-')}-{role}"
            for name in flows
            for role in ("source", "checkpoint", "heartbeat")
        )
        assert len(flows) == 12 and connectors == expected
        assert_nothing_deployed(stack)
        assert stack.markers() == []
    finally:
        stack.destroy()
