"""The programs the tests run that `bin/bootstrap --test-tools` installs (Debian's prometheus with
promtool, chromium, docker.io): bin/test runs that bootstrap first, so one missing here is a
broken setup, not a machine the test does not apply to. The test fails naming the program and the
fix, with or without CI; it never skips (tests/unit/test_required_tools.py keeps it so)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

TEST_TOOLS_FIX = "run `bin/bootstrap --test-tools` (bin/test does)"


def required_tool(name: str, package: str) -> str:
    """The path of `name` on PATH, or a failed test saying which Debian package brings it."""
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} not found on PATH (Debian's {package} package). Fix: {TEST_TOOLS_FIX}.", pytrace=False)
    return found


def promtool_check_config(path: Path) -> str:
    """`promtool check config` of the Prometheus config at `path` and the rule files it lists
    passed (asserted): its report."""
    out = subprocess.run(
        [required_tool("promtool", "prometheus"), "check", "config", path.name],
        cwd=path.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, f"promtool check config {path}:\n{out.stdout}{out.stderr}"
    return out.stdout + out.stderr
