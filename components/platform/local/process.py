"""JVM processes of the `local` platform: start, probe, stop.

A process is identified by a marker system property (``-Dmm2.process=<marker>``) on its command
line, so a recycled pid is never mistaken for ours and ``pulumi destroy`` only ever signals the
JVMs this stack started. Processes run in their own session so they outlive the short-lived
provider process that started them.

Errors are :class:`ProcessError`: the message names the component, the cause, the fix, and ends
with the last lines of the process log.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from components.platform.errors import PlatformError
from components.platform.local.class_archive import archive_options
from components.platform.local.layout import CONFIG_DIR, LOG4J2_FILE, LOGS_DIR, PROCESS_PROPERTIES
from components.topology.java_properties import render_properties
from components.topology.model import LOOPBACK

LOG_TAIL_LINES = 25

# Log4j2 configuration for brokers and workers: everything to one file in the run directory, so a
# failed start can show its last lines; nothing to stdout (the provider's output is the engine's).
# Size-capped: a task failing in a tight retry loop once wrote 5.4 GB in four minutes.
LOG4J2_PROPERTIES = """\
status = warn
appender.file.type = RollingFile
appender.file.name = FILE
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.filePattern = ${sys:kafka.logs.dir}/server.log.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 64MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 2
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.reflections.name = org.reflections
logger.reflections.level = ERROR
logger.jetty.name = org.eclipse.jetty
logger.jetty.level = WARN
"""

# JVM flags from Kafka's own launch scripts (kafka-run-class.sh), sized down for a shared machine.
JVM_FLAGS = (
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)
# As in kafka-run-class.sh, KAFKA_JVM_PERFORMANCE_OPTS replaces those flags when it is set (in the
# environment of `pulumi up`, whose provider starts the JVMs). The test suite sets it to add
# -XX:TieredStopAtLevel=1: short-lived brokers and workers then spend about half the CPU
# (bench/jvm_flags).
PERFORMANCE_OPTS_ENV = "KAFKA_JVM_PERFORMANCE_OPTS"


def jvm_flags(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The performance flags every local JVM starts with: `environ`'s KAFKA_JVM_PERFORMANCE_OPTS,
    split as a shell would, else JVM_FLAGS."""
    given = environ.get(PERFORMANCE_OPTS_ENV, "").strip()
    return tuple(shlex.split(given)) if given else JVM_FLAGS


NETNS_DIR = "/run/netns"  # where `ip netns add` names its namespaces

# The system property every local JVM carries, so its process is found by marker, not by pid.
MARKER_FLAG = "-Dmm2.process="


class ProcessError(PlatformError):
    """A local process could not be started, probed or stopped."""


@dataclass(frozen=True)
class JvmSpec:
    """Everything needed to launch one JVM of the local platform."""

    component: str  # human name used in messages, e.g. "KafkaCluster primary, broker 0"
    marker: str  # unique per stack and process; put on the command line
    main_class: str
    classpath_dir: str
    run_dir: str
    properties: Mapping[str, str]
    heap: str = "512m"
    java: str = "java"
    # Extra JVM options, e.g. `-Djava.security.auth.login.config=<run_dir>/config/rest-jaas.conf`.
    # They are visible in `ps`: paths only, never a secret.
    jvm_options: tuple[str, ...] = ()
    # Files written under run_dir, owner-only (0600), before the process starts: the secrets the
    # process resolves through config providers or reads itself (a JAAS user file). Relative paths.
    secret_files: Mapping[str, str] = field(default_factory=dict)
    # The network namespace it runs in (its emulated datacenter's, components/topology/emulation.py).
    netns: str | None = None

    @property
    def properties_file(self) -> Path:
        return Path(self.run_dir) / PROCESS_PROPERTIES

    @property
    def logs_dir(self) -> Path:
        return Path(self.run_dir) / LOGS_DIR

    @property
    def log_file(self) -> Path:
        return self.logs_dir / "server.log"

    @property
    def stdout_file(self) -> Path:
        return self.logs_dir / "stdout.log"


def port_in_use(port: int, host: str = LOOPBACK) -> bool:
    """True when `port` on `host` is taken: bound on this machine's loopback, or, on an address
    this machine only routes to (an emulated datacenter's namespace), answered by a listener."""
    if host != LOOPBACK:
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=2):
            return True
        return False
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def check_ports_free(component: str, ports: Iterable[int], config_key: str, host: str = LOOPBACK) -> None:
    busy = [p for p in ports if port_in_use(p, host)]
    if busy:
        raise ProcessError(
            f"{component}: port(s) {', '.join(map(str, busy))} on {host} already in use. "
            f"Fix: stop whatever listens there (`ss -ltnp | grep :{busy[0]}`) or choose other ports "
            f"with `{config_key}` in the stack config."
        )


def find_java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise ProcessError("Java not found: install a JDK 17+ or set JAVA_HOME (Kafka 4 needs Java 17).")
    return found


def log_tail(spec: JvmSpec, lines: int = LOG_TAIL_LINES) -> str:
    chunks = []
    for path in (spec.log_file, spec.stdout_file):
        try:
            text = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        # ERROR lines are the most useful; show them first, then the plain tail.
        errors = [ln for ln in text if " ERROR " in ln or "Exception" in ln][-8:]
        tail = text[-lines:]
        chunks.append(f"--- {path} (last {len(tail)} lines) ---\n" + "\n".join([*errors, "...", *tail]))
    return "\n".join(chunks) or "(no log output)"


def prepare_run_dir(spec: JvmSpec) -> None:
    run = Path(spec.run_dir)
    (run / CONFIG_DIR).mkdir(parents=True, exist_ok=True)
    spec.logs_dir.mkdir(parents=True, exist_ok=True)
    (run / LOG4J2_FILE).write_text(LOG4J2_PROPERTIES)
    # Keys sorted so the file is stable across runs.
    spec.properties_file.write_text(render_properties(sorted((k, str(v)) for k, v in spec.properties.items())))
    # Configs can hold config-provider paths and, for brokers, listener settings: owner-only.
    spec.properties_file.chmod(0o600)
    write_secret_files(spec)


def write_secret_files(spec: JvmSpec) -> None:
    """Write `spec.secret_files` under the run directory, 0600 from the first byte."""
    run = Path(spec.run_dir).resolve()
    for relative, content in spec.secret_files.items():
        target = (run / relative).resolve()
        if run not in target.parents:
            raise ProcessError(f"{spec.component}: secret file {relative!r} is outside its run directory {run}")
        write_private(target, content)


def write_private(target: Path, content: str) -> None:
    """Atomically replace `target` with `content`, readable by the owner only.

    The temporary file is created 0600 (never world-readable, not even for a moment) and renamed
    over the old one, so a reader sees the old or the new secrets, never half a file.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # O_CREAT's mode does not apply to a file left over by a crash
    with os.fdopen(fd, "w") as fh:
        fh.write(content)
    os.replace(tmp, target)


def _jvm_command(spec: JvmSpec, main_class: str, args: list[str], heap: str) -> list[str]:
    return [
        spec.java,
        f"-Xms{heap}" if heap else "-Xms128m",
        f"-Xmx{heap}" if heap else "-Xmx512m",
        *jvm_flags(os.environ),
        f"{MARKER_FLAG}{spec.marker}",
        f"-Dkafka.logs.dir={spec.logs_dir}",
        f"-Dlog4j2.configurationFile={Path(spec.run_dir) / LOG4J2_FILE}",
        *spec.jvm_options,
        *archive_options(spec.classpath_dir, main_class, spec.java, writer=spec.marker),
        "-cp",
        f"{spec.classpath_dir}/*",
        main_class,
        *args,
    ]


def format_storage(spec: JvmSpec, cluster_id: str, timeout_s: float = 120.0) -> None:
    """Format a KRaft log directory; a directory already formatted with this id is kept as is."""
    cmd = _jvm_command(spec, "kafka.tools.StorageTool", [], "256m")
    # The marker must not be on the format tool's command line: it is not the long-lived process.
    cmd = [c for c in cmd if not c.startswith(MARKER_FLAG)]
    # `--cluster-id=<id>` in one argument: an id may begin with '-' (older stacks' ids did).
    cmd += ["format", f"--cluster-id={cluster_id}", "-c", str(spec.properties_file), "--ignore-formatted"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ProcessError(f"{spec.component}: formatting the log directory timed out after {timeout_s}s") from exc
    if out.returncode != 0:
        raise ProcessError(
            f"{spec.component}: `kafka-storage format` failed (exit {out.returncode}).\n"
            f"{(out.stderr or out.stdout)[-3000:]}\n"
            "Fix: if the data directory belongs to another cluster id, destroy the stack or remove it."
        )


def spawn(cmd: list[str], log_file: str | Path, cwd: str | Path) -> int:
    """Start `cmd` detached from the engine (its own session, no inherited fds or stdin), its
    output appended to `log_file`; returns its pid. Raises OSError when it cannot start."""
    with open(log_file, "ab") as log:
        child = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            cwd=cwd,
        )
    # Popen returns once the exec began, but the kernel sets the new command line up a moment
    # later: until then /proc/<pid>/cmdline is empty and find_pids cannot see the marker. Wait
    # for it (bounded), so a caller that looks for the process right away finds it.
    deadline = time.monotonic() + 5.0
    while child.poll() is None and time.monotonic() < deadline:
        try:
            if Path(f"/proc/{child.pid}/cmdline").read_bytes():
                break
        except OSError:
            break
        time.sleep(0.01)
    return child.pid


# How a process that dies is started again by the watcher (components/ops/watcher.py): its exact
# command line (paths only, never a secret: see JvmSpec.jvm_options), written when the stack
# starts it and removed before the stack stops it, so only a process that died on its own comes back.
COMMAND_FILE = "command.json"


def start(spec: JvmSpec) -> int:
    """Start the JVM in its own session; returns its pid. The caller waits for readiness."""
    cmd = _jvm_command(spec, spec.main_class, [str(spec.properties_file)], spec.heap)
    if spec.netns:
        # nsenter execs the JVM (the pid stays), in that namespace's network only.
        cmd = ["nsenter", f"--net={NETNS_DIR}/{spec.netns}", "--", *cmd]
    try:
        pid = spawn(cmd, spec.stdout_file, spec.run_dir)
    except OSError as exc:
        raise ProcessError(f"{spec.component}: could not start `{spec.java}`: {exc}") from exc
    (Path(spec.run_dir) / "pid").write_text(str(pid))
    command = {"cmd": cmd, "log": str(spec.stdout_file), "marker": spec.marker, "component": spec.component}
    (Path(spec.run_dir) / COMMAND_FILE).write_text(json.dumps(command, indent=2) + "\n")
    return pid


@contextlib.contextmanager
def held(run_dir: str, *, wait: bool = True) -> Iterator[bool]:
    """An exclusive flock on a process's own directory, held by the stack while it stops the
    process and by the watcher while it starts a dead one again, so neither acts on a state the
    other is changing. Yields False (without the lock) when `wait` is off and it is taken."""
    try:
        fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield False  # no directory: nothing to restart
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def stop_for_good(run_dir: str, marker: str, pid: int | None = None, grace_s: float = 30.0) -> None:
    """Stop a process the stack means to stop (update, delete): forget how to restart it first."""
    with held(run_dir):
        (Path(run_dir) / COMMAND_FILE).unlink(missing_ok=True)
        stop(marker, pid, grace_s)


def restart_dead(run_dir: str) -> int | None:
    """Start again, exactly as the stack last started it, the process of `run_dir` that died on
    its own; its pid, or None when there is nothing to do (alive, stopped by the stack, or the
    stack is acting on it right now)."""
    with held(run_dir, wait=False) as mine:
        command_file = Path(run_dir) / COMMAND_FILE
        if not mine or not command_file.exists():
            return None
        command = json.loads(command_file.read_text())
        if find_pids(command["marker"]):
            return None
        pid = spawn(list(command["cmd"]), command["log"], run_dir)
        (Path(run_dir) / "pid").write_text(str(pid))
        return pid


def is_alive(pid: int) -> bool:
    """True when `pid` exists and is not a zombie (exited but not reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def is_running(pid: int | None, marker: str) -> bool:
    """True when `pid` is alive and is the process carrying `marker` (not a recycled pid)."""
    if not pid:
        return False
    pid = int(pid)  # Pulumi hands dynamic providers numbers as floats: 28792.0
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return is_alive(pid) and f"{MARKER_FLAG}{marker}".encode() in cmdline


def command_lines() -> Iterator[tuple[int, list[bytes]]]:
    """(pid, arguments) of every live process whose command line can be read; one that ends while
    listed is left out."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        yield int(entry.name), args


def running_markers(prefix: str = "") -> list[str]:
    """The markers of every live process whose marker starts with `prefix`, sorted."""
    flag = MARKER_FLAG.encode()
    found: set[str] = set()
    for _pid, args in command_lines():
        found.update(a[len(flag) :].decode() for a in args if a.startswith(flag + prefix.encode()))
    return sorted(found)


def find_pids(marker: str) -> list[int]:
    """Every live process carrying `marker` (normally one)."""
    flag = f"{MARKER_FLAG}{marker}".encode()
    return [pid for pid, args in command_lines() if flag in args and is_alive(pid)]


def wait_ready(
    spec: JvmSpec,
    pid: int,
    probe: Callable[[], str | None],
    timeout_s: float,
    poll_s: float = 0.5,
) -> None:
    """Poll `probe` until it returns None (ready) or `timeout_s` passes.

    `probe` returns a short reason while the process is not ready. If the process dies meanwhile
    the error says so at once instead of waiting for the timeout.
    """
    deadline = time.monotonic() + timeout_s
    reason = "not probed yet"
    while True:
        # Liveness of the pid we spawned, not the marker: right after fork, before exec, the
        # child's command line is still the parent's.
        if not is_alive(pid):
            raise ProcessError(
                f"{spec.component}: the process exited during start-up.\n{log_tail(spec)}\n"
                "Fix: read the log above; common causes are a port taken by another program, "
                "a bad override in the stack config, or too little memory."
            )
        reason = probe() or ""
        if not reason:
            return
        if time.monotonic() >= deadline:
            raise ProcessError(
                f"{spec.component}: not ready after {timeout_s:.0f}s (last probe: {reason}).\n"
                f"{log_tail(spec)}\n"
                "Fix: read the log above; raise the start-up timeout if the machine is slow."
            )
        time.sleep(poll_s)


def stop(marker: str, pid: int | None = None, grace_s: float = 30.0) -> None:
    """SIGTERM every process carrying `marker` (and its process group), SIGKILL after `grace_s`."""
    pids = set(find_pids(marker))
    if pid and is_running(pid, marker):
        pids.add(int(pid))
    for p in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while pids and time.monotonic() < deadline:
        pids = {p for p in pids if is_running(p, marker)}
        if pids:
            time.sleep(0.2)
    for p in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(is_running(p, marker) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)


def remove_run_dir(run_dir: str) -> None:
    shutil.rmtree(run_dir, ignore_errors=True)
    # Remove now-empty parents up to the stack's data root, so destroy leaves no directory behind.
    parent = Path(run_dir).parent
    for _ in range(3):
        try:
            parent.rmdir()
        except OSError:
            break
        parent = parent.parent


@contextlib.contextmanager
def restart_turn(group_dir: str, component: str, timeout_s: float, poll_s: float = 0.5) -> Iterator[None]:
    """Hold the restart turn of the group whose processes live under `group_dir` (a worker group's
    or a cluster's directory): at most one process of the group restarts at a time.

    An exclusive flock on the directory itself (no lock file is left behind for destroy to trip
    on); flock, not lockf, so two threads of one provider process exclude each other too. The
    wait is bounded: a turn not given within `timeout_s` fails naming the component."""
    Path(group_dir).mkdir(parents=True, exist_ok=True)
    fd = os.open(group_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError as exc:
                if time.monotonic() >= deadline:
                    raise ProcessError(
                        f"{component}: another process of its group was still restarting after {timeout_s:.0f}s, "
                        "so this one was not restarted. Fix: see why the other restart hangs (its log), "
                        "then run `pulumi up` again."
                    ) from exc
                time.sleep(poll_s)
        yield
    finally:
        os.close(fd)  # releases the lock
