"""`bin/test` needs every tool its bootstrap installs: a missing prometheus, promtool, chromium,
dockerd, Kafka jars, image archive or bin/kube node fails the test that needs it, naming it and
the `bin/bootstrap` flag that installs it, with or without `CI`; none of them skips.

The only skip left in tests/ (`ALLOWED_SKIPS`, checked on the source below) is the Kubernetes
lane's where the lane does not apply, both cases bin/test prints as "The Kubernetes lane was left
out": not root (bin/kube needs network and mount namespaces and cgroups), or MM2_KUBE_TEST=0.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from tests.integration import kube
from tests.integration.test_spark_validation import kafka_libs
from tests.tools import required_tool

ROOT = Path(__file__).resolve().parents[2]
# (file, call): the skips whose test does not apply here, not ones for a missing tool.
ALLOWED_SKIPS = {("tests/integration/kube.py", "skipif")}
SKIPS = ("skip", "skipif", "importorskip")


def skips(source: str) -> list[str]:
    """Every `pytest.skip(...)`, `pytest.importorskip(...)` and `pytest.mark.skip`/`skipif` in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in SKIPS:
            owner = ast.unparse(node.value)
            if owner in ("pytest", "pytest.mark", "mark"):
                found.append(node.attr)
    return found


def test_the_suite_skips_only_where_a_test_does_not_apply() -> None:
    sources = {str(path.relative_to(ROOT)): path.read_text(encoding="utf-8") for path in (ROOT / "tests").rglob("*.py")}
    found = {(name, call) for name, source in sources.items() if "skip" in source for call in skips(source)}
    assert found == ALLOWED_SKIPS, f"skips outside ALLOWED_SKIPS (a missing tool must fail): {found - ALLOWED_SKIPS}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('pytest.skip("no promtool")', ["skip"]),
        ('kv = pytest.importorskip("kubernetes_validate")', ["importorskip"]),
        ("@pytest.mark.skipif(True, reason='x')\ndef t(): pass", ["skipif"]),
        ("from pytest import mark\n@mark.skip\ndef t(): pass", ["skip"]),
        ('pytest.fail("promtool not found")\nx.skip()', []),
    ],
)
def test_the_skip_rule_can_fail(source: str, expected: list[str]) -> None:
    assert skips(source) == expected


@pytest.mark.parametrize("ci", ["true", None])
def test_a_missing_tool_fails_naming_the_bootstrap_flag_with_or_without_ci(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ci: str | None
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match=r"promtool not found on PATH .*bin/bootstrap --test-tools"):
        required_tool("promtool", "prometheus")
    (tmp_path / "promtool").write_text("#!/bin/sh\n")
    (tmp_path / "promtool").chmod(0o755)
    assert required_tool("promtool", "prometheus") == str(tmp_path / "promtool")


def test_missing_kafka_jars_fail_the_spark_fault_module(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MM2_KAFKA_LIBS", raising=False)
    with pytest.raises(pytest.fail.Exception, match=r"MM2_KAFKA_LIBS is not set.*bin/bootstrap"):
        kafka_libs()
    monkeypatch.setenv("MM2_KAFKA_LIBS", str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match=r"no Kafka jars in .*bin/bootstrap"):
        kafka_libs()
    (tmp_path / "kafka_2.13-4.1.0.jar").touch()
    assert kafka_libs() == str(tmp_path)


def test_a_missing_image_archive_fails(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MM2_IMAGES", str(tmp_path / "images.json"))
    monkeypatch.setenv("MM2_CACHE", str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match=r"no built .* image archive.*bin/bootstrap --images"):
        kube.image_archive(kube.WATCHER_TAG)


def test_a_node_not_built_fails_the_lane_instead_of_skipping_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MM2_KUBE_BIN", str(tmp_path / "bin"))
    monkeypatch.setenv("PULUMI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MM2_KUBE_TEST", "1")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert kube.lane_skip_reason() is None  # as root the lane applies: it runs, built or not
    missing = kube.node_missing()
    assert missing is not None and "kube-apiserver" in missing and "bin/bootstrap --kubernetes" in missing
    for binary in kube.NODE_BINARIES:
        (tmp_path / "bin").mkdir(exist_ok=True)
        (tmp_path / "bin" / binary).touch()
    plugin = tmp_path / "home" / kube.PROVIDER_PLUGIN
    plugin.parent.mkdir(parents=True)
    plugin.touch()
    assert kube.node_missing() is None


def test_the_lane_is_left_out_only_as_bin_test_leaves_it_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MM2_KUBE_TEST", "0")
    assert kube.lane_skip_reason() == "left out: MM2_KUBE_TEST=0"
    monkeypatch.setenv("MM2_KUBE_TEST", "1")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "needs root" in (kube.lane_skip_reason() or "")
