"""An emulated WAN link between two network namespaces, at the packet level.

Each side is a network namespace with a TAP device (addresses in 198.18.0.0/15, the range
reserved for network benchmarks); each TAP is plugged into its own vde2 switch, and Debian's
`wirefilter` joins the two switches: every frame crossing it waits half the round trip, is
dropped with the link's loss and is paced at the link's rate. TCP sees a real round trip, so
window, socket-buffer and fetch-size effects show as on a real WAN (a proxy that terminates TCP
would hide them; the kernel here has no netem to delay packets itself).

The forwarders run at a real-time priority (`chrt -f`, FORWARDER_PRIORITY): they are the link, and
on a machine busy with brokers and workers a forwarder waiting for a core would add delay and
drop throughput that the declared link does not have (each uses a fifth of a core at 50 Mbit/s).

Needs root (network namespaces, TAP devices). Everything it creates is named after `tag` and
removed by `down`, also after a failed `up`: the namespaces, the switches' sockets and the
userspace forwarders (vde_switch, vde_plug2tap, wirefilter), which are found by their pid files.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from components.platform.errors import PlatformError

TOOLS = ("ip", "chrt", "vde_switch", "vde_plug2tap", "wirefilter")
FORWARDER_PRIORITY = "20"  # SCHED_FIFO, below the kernel's own threads (50)
_READY_S = 10.0  # how long a forwarder may take to write its pid file and socket
_TAP = "wan0"
REALTIME = ("chrt", "-f", FORWARDER_PRIORITY)  # how the forwarders run, and a test's traffic beside them


class WanError(PlatformError):
    """The emulated link could not be made or removed: the step, the command's error, the fix."""


@dataclass(frozen=True)
class LinkShape:
    rtt_ms: float
    bandwidth_bps: float | None = None  # None: as fast as the forwarder goes
    loss_pct: float = 0.0

    def wirefilter_args(self) -> list[str]:
        """wirefilter's options: the delay each way, the loss each way, the rate in bytes/s."""
        args = ["-d", f"{self.rtt_ms / 2:g}"]
        if self.loss_pct:
            args += ["-l", f"{self.loss_pct:g}"]
        if self.bandwidth_bps:
            args += ["-b", str(int(self.bandwidth_bps / 8))]
        return args


@dataclass(frozen=True)
class Side:
    namespace: str
    address: str  # on the link's /24

    def run(self, *command: str) -> list[str]:
        """`command` run inside this side's namespace."""
        return ["ip", "netns", "exec", self.namespace, *command]


def missing_tools() -> list[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def _run(step: str, command: Sequence[str]) -> None:
    done = subprocess.run(list(command), capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise WanError(f"emulated link: {step} failed: `{' '.join(command)}`: {done.stderr.strip() or done.stdout}")


class Wan:
    """The namespaces and forwarders of one emulated network; `run_dir` holds the switches'
    sockets and every forwarder's pid file, which is how `down` finds them."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir

    def namespace(self, name: str) -> None:
        """A new network namespace with its loopback up."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        _run(f"creating namespace {name}", ["ip", "netns", "add", name])
        _run(f"loopback up in {name}", ["ip", "-n", name, "link", "set", "lo", "up"])

    def link(self, name: str, ends: tuple[Side, Side], tap: str, prefix_len: int, shape: LinkShape) -> None:
        """A TAP device `tap` in each end's namespace, at its address, plugged into a vde switch
        of its own; `wirefilter` joins the two switches with the link's shape."""
        for end in ends:
            ns = end.namespace
            _run(f"TAP device in {ns}", ["ip", "-n", ns, "tuntap", "add", "dev", tap, "mode", "tap"])
            _run(f"address in {ns}", ["ip", "-n", ns, "addr", "add", f"{end.address}/{prefix_len}", "dev", tap])
            _run(f"TAP up in {ns}", ["ip", "-n", ns, "link", "set", tap, "up"])
        self.forwarders(name, ends, tap, shape)

    def forwarders(self, name: str, ends: tuple[Side, Side], tap: str, shape: LinkShape) -> None:
        """The link's userspace half on its TAP devices: a switch and a plug per end, the filter
        between; any of them still running from before is stopped first (a repair)."""
        self._stop(f"{name}switch-", f"{name}plug-", f"{name}wirefilter")
        for end, switch in zip(ends, ("a", "b"), strict=True):
            sock, pid = self._switch(name, switch), self._pidfile(f"{name}switch-{switch}")
            shutil.rmtree(sock, ignore_errors=True)  # a dead switch's directory
            self._daemon(pid, [*REALTIME, "vde_switch", "-s", sock, "-d", "-p", pid], f"switch {name}{switch}")
            pid = self._pidfile(f"{name}plug-{switch}")
            plug = end.run(*REALTIME, "vde_plug2tap", "-s", sock, "-d", "-P", pid, tap)
            self._daemon(pid, plug, f"the plug in {end.namespace}")
        self._filter(name, shape)

    def alive(self, name: str) -> bool:
        """Every forwarder of link `name` runs (two switches, two plugs, the filter)."""
        pids = [_pid(f) for f in self._pidfiles(f"{name}switch-", f"{name}plug-", f"{name}wirefilter")]
        return len(pids) == 5 and all(pid and Path(f"/proc/{pid}").exists() for pid in pids)

    def cut(self, name: str) -> None:
        """Link `name` down: its filter stopped, so no frame crosses (as a cut fibre; `reshape`
        brings it back)."""
        self._stop(f"{name}wirefilter")

    def _pidfiles(self, *prefixes: str) -> list[Path]:
        found = sorted(self.run_dir.glob("*.pid")) if self.run_dir.exists() else []
        return [f for f in found if f.name.startswith(prefixes)]

    def _stop(self, *prefixes: str) -> None:
        """Stop the forwarders whose pid files start with one of `prefixes` ("" for all): all
        signalled first, then each waited for (SIGKILL after a bound); their pid files removed."""
        pidfiles = self._pidfiles(*prefixes)
        pids = [pid for pid in map(_pid, pidfiles) if pid]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        for pid in pids:
            _gone(pid)
        for pidfile in pidfiles:
            pidfile.unlink(missing_ok=True)

    def reshape(self, name: str, shape: LinkShape) -> None:
        """Link `name` with a new shape: its wirefilter restarted (connections see a short gap)."""
        self._stop(f"{name}wirefilter")
        self._filter(name, shape)

    def _filter(self, name: str, shape: LinkShape) -> None:
        pid = self._pidfile(f"{name}wirefilter")
        between = f"{self._switch(name, 'a')}:{self._switch(name, 'b')}"
        wirefilter = [*REALTIME, "wirefilter", "-v", between, *shape.wirefilter_args(), "--daemon", "--pidfile", pid]
        self._daemon(pid, wirefilter, f"wirefilter {name}".strip())

    def _switch(self, link: str, name: str) -> str:
        return str(self.run_dir / f"{link}switch-{name}")

    def _pidfile(self, name: str) -> str:
        return str(self.run_dir / f"{name}.pid")

    def _daemon(self, pid: str, command: list[str], what: str) -> None:
        """Start a forwarder that daemonizes and writes `pid` (`down` finds it there); wait for it."""
        _run(f"starting {what}", command)
        pidfile = Path(pid)
        deadline = time.monotonic() + _READY_S
        while not (pidfile.exists() and pidfile.read_text().strip()):
            if time.monotonic() > deadline:
                raise WanError(f"emulated link: {what} wrote no pid file within {_READY_S:.0f}s")
            time.sleep(0.05)

    def down(self, namespaces: Iterable[str], devices: Iterable[str] = ()) -> None:
        """Stop the forwarders, remove `devices` of the machine's namespace (veths into the
        namespaces), `namespaces` and the sockets (whatever of them exists).

        A namespace outlives its name while a socket in it waits for the other side (a connection
        closed as the link went away retransmits its FIN for minutes): its veth would keep its
        route on this machine that long, so the veths are deleted here, not left to it."""
        self._stop("")
        for device in devices:
            subprocess.run(["ip", "link", "delete", device], capture_output=True, check=False)
        for namespace in namespaces:
            subprocess.run(["ip", "netns", "delete", namespace], capture_output=True, check=False)
        shutil.rmtree(self.run_dir, ignore_errors=True)


def wait_reachable(source: Side, address: str) -> None:
    """Until a ping from `source` reaches `address` (the switches learn addresses on the first frames)."""
    deadline = time.monotonic() + _READY_S
    while True:
        ping = subprocess.run(source.run("ping", "-c", "1", "-W", "1", address), capture_output=True, check=False)
        if ping.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise WanError(f"emulated link: {source.namespace} cannot reach {address} within {_READY_S:.0f}s")


def check_can_emulate() -> None:
    """Root and the forwarders' commands, or a WanError naming the fix."""
    if os.geteuid() != 0:
        raise WanError("an emulated link needs root (network namespaces and TAP devices). Fix: run as root.")
    if missing := missing_tools():
        raise WanError(f"an emulated link needs {', '.join(missing)}. Fix: run bin/bootstrap --wan.")


class EmulatedLink:
    """Two namespaces `<tag>-a` and `<tag>-b` joined by the shaped link; `subnet` picks the /24
    (198.18.<subnet>.0), so several links can exist at once."""

    def __init__(self, tag: str, shape: LinkShape, run_dir: Path, subnet: int = 0) -> None:
        self.tag, self.shape, self.run_dir = tag, shape, run_dir
        self.sides = (Side(f"{tag}-a", f"198.18.{subnet}.1"), Side(f"{tag}-b", f"198.18.{subnet}.2"))
        self._wan = Wan(run_dir)

    def __enter__(self) -> EmulatedLink:
        self.up()
        return self

    def __exit__(self, *_: object) -> None:
        self.down()

    def up(self) -> None:
        check_can_emulate()
        try:
            for side in self.sides:
                self._wan.namespace(side.namespace)
            self._wan.link("", self.sides, _TAP, 24, self.shape)
            wait_reachable(self.sides[0], self.sides[1].address)
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        """Stop the forwarders and remove the namespaces and sockets (whatever of them exists)."""
        self._wan.down(side.namespace for side in self.sides)


def _pid(pidfile: Path) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int(pidfile.read_text().strip())
    return None


def _gone(pid: int, timeout_s: float = 5.0) -> None:
    """Until `pid` is gone; SIGKILL after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while pid and Path(f"/proc/{pid}").exists():
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.05)


def namespaces(prefix: str) -> Iterator[str]:
    """The network namespaces whose name starts with `prefix` (what a test checks is gone)."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    yield from (line.split()[0] for line in listed.splitlines() if line.startswith(prefix))
