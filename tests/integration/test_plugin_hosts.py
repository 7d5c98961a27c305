"""The plugin hosts this project installs beside the CLI (toolchain/pulumi: the Python language
host and the dynamic-provider host) end with their engine: a `pulumi up` killed outright
(SIGKILL, as by the OOM killer) cannot stop its plugins, so each must notice by itself. Here the
real CLI runs a one-resource program whose provider is mid-create when the engine is killed;
every process started for that engine is gone within 10 s.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from components.platform.local import process as proc
from tests.integration.harness import PASSPHRASE, ROOT, wait_until

pytestmark = pytest.mark.integration

BOUND_S = 10  # the promise: orphans gone within 10 s of the engine

PROGRAM = """
import os
import threading

from pulumi.dynamic import CreateResult, Resource, ResourceProvider


class Blocking(ResourceProvider):
    def create(self, props):
        open(os.environ["MM2_TEST_CREATING"], "w").close()  # the test kills the engine now
        threading.Event().wait(600)
        return CreateResult("never", {})


class Held(Resource):
    def __init__(self, name):
        super().__init__(Blocking(), name, {})


Held("held")
"""


def started_for(address: str) -> dict[int, str]:
    """pid -> command line of every process whose arguments carry the engine's address."""
    return {
        pid: b" ".join(args).decode(errors="replace")[:200]
        for pid, args in proc.command_lines()
        if any(address.encode() in a for a in args)
    }


def engine_address(engine_pid: int) -> str | None:
    """The gRPC address the engine gave its first plugin (its last argument), once it started one."""
    for pid, argv in proc.command_lines():
        args = [a.decode() for a in argv if a]
        if not args or not args[-1].startswith("127.0.0.1:"):
            continue
        try:
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):  # ended while listed
            continue
        if ppid == engine_pid:
            return args[-1]
    return None


def test_a_killed_engine_leaves_no_plugin_host_behind(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text(
        f"name: engine-killed\nruntime:\n  name: python\n  options:\n    virtualenv: {ROOT / '.venv'}\n"
    )
    (project / "__main__.py").write_text(PROGRAM)
    creating = tmp_path / "creating"
    env = {
        **os.environ,
        "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
        "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        "MM2_TEST_CREATING": str(creating),
    }
    (tmp_path / "state").mkdir()
    init = ["pulumi", "stack", "init", "killed", "--non-interactive"]
    subprocess.run(init, cwd=project, env=env, check=True, capture_output=True)
    log = (tmp_path / "up.log").open("w")
    engine = subprocess.Popen(
        ["pulumi", "up", "--yes", "--skip-preview", "--stack", "killed", "--non-interactive"],
        cwd=project,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    address = ""
    try:
        wait_until(lambda: creating.exists() or engine.poll() is not None, 180, "the provider's create to start")
        assert engine.poll() is None, f"pulumi up ended early:\n{(tmp_path / 'up.log').read_text()[-3000:]}"
        address = wait_until(lambda: engine_address(engine.pid), 30, "the engine's address on its plugins")
        hosts = started_for(address)
        assert any("dynamic_provider_host.py" in c for c in hosts.values()), hosts
        assert any("pulumi-language-python " in c for c in hosts.values()), hosts
        engine.kill()  # SIGKILL: the engine cannot stop anything
        engine.wait(timeout=30)
        killed = time.monotonic()
        left: list[dict[int, str]] = []

        def ended() -> bool:
            left.append(started_for(address))
            return not left[-1]

        try:
            wait_until(ended, BOUND_S, "the killed engine's plugins to end", 0.2)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; still running: {left[-1]}") from None
        print(f"\nevery plugin of the killed engine ended {time.monotonic() - killed:.1f} s after it")
    finally:
        if engine.poll() is None:
            engine.kill()
            engine.wait(timeout=30)
        for pid in started_for(address) if address else {}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        log.close()
