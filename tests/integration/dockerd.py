"""A private Docker engine for one test module: Debian's dockerd with its own data root, exec
root and socket, no bridge and no iptables (containers use the host's network, on loopback),
stopped and removed afterwards, also on failure. Images are loaded from the archives
`bin/bootstrap --images` built (`.mm2/images.json`); nothing is pulled.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.platform.docker.engine import DockerEngine, DockerEngineError
from components.platform.local.process import command_lines
from tests.integration.harness import ROOT, wait_until
from tests.tools import required_tool


def image_records() -> dict[str, dict[str, object]]:
    """The images this checkout built, by tag (`.mm2/images.json`, written by bin/bootstrap)."""
    index = Path(os.environ.get("MM2_IMAGES") or ROOT / ".mm2" / "images.json")
    if not index.is_file():
        pytest.fail(f"{index} missing: the container images were never built. Fix: run bin/bootstrap --images.")
    records: dict[str, dict[str, object]] = json.loads(index.read_text())
    return records


@contextlib.contextmanager
def running_dockerd(load: tuple[str, ...] = ()) -> Iterator[DockerEngine]:
    """Start dockerd, load the `load` images, yield a client; stop and clean up on the way out."""
    dockerd = required_tool("dockerd", "docker.io")
    # A short path: a unix socket's path must fit in 108 bytes.
    home = Path(tempfile.mkdtemp(prefix="mm2-dockerd-", dir="/tmp"))
    (home / "daemon.json").write_text("{}")  # the machine's /etc/docker/daemon.json must not apply
    socket = home / "docker.sock"
    cmd = [
        dockerd,
        "--bridge=none",
        "--iptables=false",
        "--ip-masq=false",
        "--userland-proxy=false",
        f"--config-file={home / 'daemon.json'}",
        f"--data-root={home / 'data'}",
        f"--exec-root={home / 'exec'}",
        f"--pidfile={home / 'dockerd.pid'}",
        f"--host=unix://{socket}",
    ]
    log = (home / "dockerd.log").open("wb")
    daemon = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    engine = DockerEngine(str(socket))
    try:
        wait_until(lambda: _answers(engine, daemon), 60, f"dockerd to answer on {socket}", poll_s=0.2)
        records = image_records()
        for tag in load:
            if tag not in records:
                pytest.fail(f"image {tag} is not in .mm2/images.json. Fix: run bin/bootstrap --images.")
            engine.load(Path(str(records[tag]["archive"])))
            assert engine.image_id(tag) == records[tag]["id"], f"{tag} loaded under another id"
        yield engine
    finally:
        with contextlib.suppress(DockerEngineError):
            engine.remove_all()  # before dockerd stops: their shims go with them
        engine.close()
        _stop(daemon, home)
        log.close()


def _answers(engine: DockerEngine, daemon: subprocess.Popen[bytes]) -> bool:
    if daemon.poll() is not None:
        raise AssertionError(f"dockerd exited with {daemon.returncode} before it answered; see its log")
    try:
        return bool(engine.version())
    except DockerEngineError:
        return False


def _stop(daemon: subprocess.Popen[bytes], home: Path) -> None:
    """SIGTERM (dockerd stops its containers and its containerd), bounded, then SIGKILL the
    whole session; unmount what is left under `home` and remove it."""
    if daemon.poll() is None:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(daemon.pid, signal.SIGKILL)
            daemon.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(daemon.pid, signal.SIGKILL)  # containerd, started in dockerd's session
    for pid in _processes_naming(home):  # container shims leave the session: found by their socket path
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while _mounts_under(home) and time.monotonic() < deadline:
        for mount in sorted(_mounts_under(home), key=len, reverse=True):
            subprocess.run(["umount", "-l", mount], capture_output=True, check=False)
    shutil.rmtree(home, ignore_errors=True)


def _processes_naming(home: Path) -> list[int]:
    return [pid for pid, args in command_lines() if str(home).encode() in b"\0".join(args)]


def _mounts_under(home: Path) -> list[str]:
    prefix = str(home) + "/"
    lines = Path("/proc/self/mounts").read_text().splitlines()
    return [m for line in lines if (m := line.split()[1]).startswith(prefix)]
