"""bin/pulumi: after a successful `destroy`, the stack's saved outputs (credentials) are gone.

The script runs from a copy of the repository layout whose `.mm2/env` puts a stand-in `pulumi`
first on PATH: it records its arguments and exits with the code the test asks for.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    (tmp_path / "bin").mkdir()
    shutil.copy(ROOT / "bin" / "pulumi", tmp_path / "bin" / "pulumi")
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "pulumi").write_text('#!/usr/bin/env bash\necho "$@" >> "$FAKE_LOG"\nexit "${FAKE_RC:-0}"\n')
    (fake / "pulumi").chmod(0o755)
    (tmp_path / ".mm2").mkdir()
    (tmp_path / ".mm2" / "env").write_text(f'export PATH="{fake}:$PATH"\n')
    for stack in ("dev", "prod"):
        (tmp_path / ".mm2" / f"{stack}-outputs.json").write_text('{"clusters": {}}')
    return tmp_path


def _run(layout: Path, *args: str, rc: int = 0) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FAKE_LOG": str(layout / "calls"), "FAKE_RC": str(rc), "PULUMI_CONFIG_PASSPHRASE": "x"}
    return subprocess.run(
        [str(layout / "bin" / "pulumi"), *args], env=env, capture_output=True, text=True, timeout=30, check=False
    )


def test_destroy_removes_that_stacks_outputs_file_only(layout: Path) -> None:
    assert _run(layout, "destroy", "--stack", "dev", "--yes").returncode == 0
    assert (layout / "calls").read_text().split() == ["destroy", "--stack", "dev", "--yes"]
    assert not (layout / ".mm2" / "dev-outputs.json").exists()
    assert (layout / ".mm2" / "prod-outputs.json").exists()


def test_stack_rm_removes_it_too(layout: Path) -> None:
    assert _run(layout, "stack", "rm", "prod", "--yes").returncode == 0
    assert not (layout / ".mm2" / "prod-outputs.json").exists()


def test_a_failed_destroy_keeps_the_file_and_its_exit_code(layout: Path) -> None:
    assert _run(layout, "destroy", "--stack=dev", "--yes", rc=255).returncode == 255
    assert (layout / ".mm2" / "dev-outputs.json").exists()


@pytest.mark.parametrize("args", [("destroy", "--stack", "dev", "--preview-only"), ("up", "--stack", "dev")])
def test_commands_that_destroy_nothing_keep_the_file(layout: Path, args: tuple[str, ...]) -> None:
    assert _run(layout, *args).returncode == 0
    assert (layout / ".mm2" / "dev-outputs.json").exists()
