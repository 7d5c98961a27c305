"""The README's main job, `bin/deploy-dev`, run for real by the suite.

It runs in a copy of this checkout: the working tree's tracked and untracked files (ignored ones
left out) with `.venv` linked, so the dev stack it deploys has the copy's own state
(`.pulumi-state`), outputs file and run directory (`.mm2/run/dev`), and a developer's own dev stack
in the checkout is never touched. It keeps the dev stack's fixed ports (Pulumi.dev.yaml), which the
harness hands to no other test (`harness.DEV_PORTS`), and it is torn down as the README says:
`bin/pulumi destroy --stack dev --yes`, after which no JVM, port or run directory may be left.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.platform.local import process as proc
from components.platform.local.layout import process_marker, run_root
from tests.integration.harness import DEV_PORTS, LIVE_STACKS, ROOT, TestStack

DEV = "dev"
DEV_PASSPHRASE = "mm2-dev-only-passphrase"  # the documented dev-only value bin/pulumi sets
DEPLOY_TIMEOUT_S = 1500  # a bootstrap with a warm cache, `up`, the smoke check and the Spark stage


def copy_checkout(dest: Path) -> Path:
    """The working tree's files (tracked, and untracked but not ignored) copied to `dest`, with
    `.venv` linked: what a fresh clone of this state would hold, plus the installed packages."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is left out
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    (dest / ".venv").symlink_to(ROOT / ".venv")
    return dest


def dev_stack_in_the_way() -> str:
    """Why the main job cannot run here now (a dev stack is running on this machine), or ""."""
    markers = proc.running_markers(process_marker(DEV, ""))
    taken = sorted(p for p in DEV_PORTS if proc.port_in_use(p))
    if not markers and not taken:
        return ""
    return (
        f"the README's main job (bin/deploy-dev) needs the dev stack's fixed ports {sorted(DEV_PORTS)}, "
        f"but {'processes ' + ', '.join(markers) if markers else 'ports ' + str(taken)} are in use: "
        "a dev stack is running on this machine. Fix: bin/pulumi destroy --stack dev --yes in its checkout."
    )


class DevStack(TestStack):
    """The `dev` stack the main job deployed in checkout copy `root`, driven like a TestStack."""

    def __init__(self, root: Path) -> None:
        self.name = DEV
        self.root = root
        self.tmp = root
        self.backend = root / ".pulumi-state"
        self.config_file = root / "Pulumi.dev.yaml"
        self.config = yaml.safe_load(self.config_file.read_text())
        self.run_dir = Path(run_root(root, DEV))
        clean = {k: v for k, v in os.environ.items() if not k.startswith("PULUMI_CONFIG_PASSPHRASE")}
        self.env = {**clean, "PULUMI_BACKEND_URL": f"file://{self.backend}", "PULUMI_CONFIG_PASSPHRASE": DEV_PASSPHRASE}

    def bin(self, script: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        """One of the copy's bin/ scripts, as a user runs it (its own environment from .mm2/env)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "MM2_KUBE"))}
        return subprocess.run(
            [str(self.root / "bin" / script), *args],
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def destroy(self) -> None:
        """The README's teardown, then the harness's safety net for whatever it could not stop."""
        try:
            out = self.bin("pulumi", "destroy", "--stack", DEV, "--yes", timeout=900)
            assert out.returncode == 0, f"bin/pulumi destroy failed:\n{out.stdout[-4000:]}\n{out.stderr[-2000:]}"
        finally:
            self.stop_what_is_left()


@contextmanager
def main_job(tmp: Path) -> Iterator[tuple[DevStack, subprocess.CompletedProcess[str]]]:
    """`bin/deploy-dev` run to its end in a copy of the checkout; yields the deployed stack and what
    the job printed. Destroyed afterwards (also on failure) with nothing left behind."""
    if reason := dev_stack_in_the_way():
        pytest.fail(reason)
    stack = DevStack(copy_checkout(tmp))
    LIVE_STACKS.append(stack)
    try:
        job = stack.bin("deploy-dev", timeout=DEPLOY_TIMEOUT_S)
        printed = f"{job.stdout[-6000:]}\n{job.stderr[-3000:]}"
        assert job.returncode == 0, f"bin/deploy-dev exited {job.returncode}:\n{printed}"
        yield stack, job
    finally:
        LIVE_STACKS.remove(stack)
        stack.destroy()
    left: dict[str, Any] = {
        "processes": stack.markers(),
        "ports": sorted(p for p in DEV_PORTS if proc.port_in_use(p)),
        "run directory": stack.run_dir.exists(),
        "outputs file": (tmp / ".mm2" / "dev-outputs.json").exists(),
    }
    assert not any(left.values()), f"bin/pulumi destroy --stack dev left behind: {left}"
