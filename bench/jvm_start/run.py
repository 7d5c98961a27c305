"""JVM start benchmark: the local platform's class-data-sharing (CDS) archive against none.

    source .mm2/env && python bench/jvm_start/run.py [--repeats 3] [--out-dir bench/results]

For each local JVM, with the platform's flags (process.JVM_FLAGS; heap 256m for the format tool as
process.format_storage, else 512m): `format` (StorageTool on a fresh log dir, timed to exit),
`broker` (one combined broker+controller, timed until its listener accepts TCP) and `connect` (a
distributed worker on a broker the bench started, timed until `GET /` answers 200); wall and CPU
(utime+stime) seconds at ready, in two variants alternated over `--repeats`: `no archive` (the JVM's
default CDS only) and `archive` (what class_archive.archive_options returns once an archive exists).
Each archive is built by one untimed run with `-XX:ArchiveClassesAtExit` (SIGTERM stop) in the
bench's temp dir, not the shared cache, and checked to map (`-Xshare:on`). Writes medians and
archive/no-archive ratios to <out-dir>/jvm_start-<date>.{json,md}.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.deploy.run import machine  # noqa: E402
from bench.machine import hardware_text  # noqa: E402
from bench.validation.cluster import broker_properties  # noqa: E402
from components.platform.local import class_archive  # noqa: E402
from components.platform.local import process as proc  # noqa: E402
from components.topology.java_properties import render_properties  # noqa: E402
from tests.integration.harness import free_port_block  # noqa: E402

VARIANTS = ("no archive", "archive")
CLUSTER_ID = "YmVuY2hqdm1zdGFydDAwMA"
READY_TIMEOUT_S = 240.0
STOP_GRACE_S = 60.0  # SIGTERM to SIGKILL; a JVM writing its archive at exit needs a few seconds
POLL_S = 0.02
Figures = dict[str, float]


@dataclass(frozen=True)
class Jvm:
    name: str
    main_class: str
    heap: str
    ready_when: str


FORMAT = Jvm("format", "kafka.tools.StorageTool", "256m", "exit")  # as process.format_storage
BROKER = Jvm("broker", "kafka.Kafka", "512m", "listener accepts TCP")
CONNECT = Jvm("connect", "org.apache.kafka.connect.cli.ConnectDistributed", "512m", "GET / answers 200")


@dataclass(frozen=True)
class Bench:
    java: str
    libs: str
    work: Path

    def prepare(self, tag: str, properties: dict[str, str]) -> Path:
        run_dir = self.work / tag
        (run_dir / "logs").mkdir(parents=True)
        (run_dir / "log4j2.properties").write_text(proc.LOG4J2_PROPERTIES)
        (run_dir / "server.properties").write_text(render_properties(sorted(properties.items())))
        return run_dir

    def command(self, jvm: Jvm, cds: tuple[str, ...], run_dir: Path, args: list[str]) -> list[str]:
        """The platform's command line (process._jvm_command) with `cds` in place of archive_options."""
        logs = [f"-Dkafka.logs.dir={run_dir / 'logs'}", f"-Dlog4j2.configurationFile={run_dir / 'log4j2.properties'}"]
        base = [self.java, f"-Xms{jvm.heap}", f"-Xmx{jvm.heap}", *proc.JVM_FLAGS, *logs]
        return [*base, *cds, "-cp", f"{self.libs}/*", jvm.main_class, *args]


@contextlib.contextmanager
def launched(cmd: list[str], run_dir: Path) -> Iterator[tuple[subprocess.Popen[bytes], float]]:
    """The JVM in its own session and its start time; SIGTERM, then SIGKILL, on the way out."""
    with open(run_dir / "logs" / "stdout.log", "wb") as out:
        t0 = time.monotonic()
        p = subprocess.Popen(
            cmd, cwd=run_dir, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield p, t0
    finally:
        for sig, grace in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 10.0)):
            if p.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(grace)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)  # nothing of its session outlives the run


def failure(what: str, run_dir: Path) -> RuntimeError:
    log = run_dir / "logs" / "stdout.log"
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:]) if log.exists() else "(no output)"
    return RuntimeError(f"{what}; last lines of {log}:\n{tail}")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def until_ready(p: subprocess.Popen[bytes], t0: float, ready: Callable[[], bool], run_dir: Path) -> Figures:
    """Poll `ready` until true; wall and CPU seconds of the JVM at that moment."""
    while not ready():
        if p.poll() is not None:
            raise failure(f"exited ({p.returncode}) before it was ready", run_dir)
        if time.monotonic() - t0 > READY_TIMEOUT_S:
            raise failure(f"not ready after {READY_TIMEOUT_S:.0f}s", run_dir)
        time.sleep(POLL_S)
    return {"wall_s": time.monotonic() - t0, "cpu_s": cpu_s(p.pid)}


def until_exit(p: subprocess.Popen[bytes], t0: float, run_dir: Path) -> Figures:
    """Reap the JVM ourselves (wait4) for its CPU seconds; it must exit 0."""
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            wall = time.monotonic() - t0
            p.returncode = os.waitstatus_to_exitcode(status)
            if p.returncode != 0:
                raise failure(f"exited {p.returncode}", run_dir)
            return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime}
        if time.monotonic() - t0 > READY_TIMEOUT_S:
            raise failure(f"still running after {READY_TIMEOUT_S:.0f}s", run_dir)
        time.sleep(POLL_S)


def port_open(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy


def rest_ok(port: int) -> bool:
    try:
        with _HTTP.open(f"http://127.0.0.1:{port}/", timeout=2) as response:
            return bool(response.status == 200)
    except (OSError, http.client.HTTPException):
        return False


def format_args(run_dir: Path) -> list[str]:
    return ["format", f"--cluster-id={CLUSTER_ID}", "-c", str(run_dir / "server.properties"), "--ignore-formatted"]


def run_format(b: Bench, cds: tuple[str, ...], tag: str) -> Figures:
    run_dir = b.prepare(tag, broker_properties(free_port_block(2), str(b.work / tag / "data")))
    with launched(b.command(FORMAT, cds, run_dir, format_args(run_dir)), run_dir) as (p, t0):
        return until_exit(p, t0, run_dir)


@contextlib.contextmanager
def broker(b: Bench, cds: tuple[str, ...], tag: str) -> Iterator[tuple[str, Figures]]:
    """A formatted (untimed), started broker: its bootstrap and figures to ready; stopped after."""
    port = free_port_block(2)
    run_dir = b.prepare(tag, broker_properties(port, str(b.work / tag / "data")))
    with launched(b.command(FORMAT, (), run_dir, format_args(run_dir)), run_dir) as (p, t0):
        until_exit(p, t0, run_dir)
    with launched(b.command(BROKER, cds, run_dir, [str(run_dir / "server.properties")]), run_dir) as (p, t0):
        yield f"127.0.0.1:{port}", until_ready(p, t0, lambda: port_open(port), run_dir)


def run_broker(b: Bench, cds: tuple[str, ...], tag: str) -> Figures:
    with broker(b, cds, tag) as (_, figures):
        return figures


def worker_properties(bootstrap: str, port: int, tag: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-{tag}",  # its own group and topics: every run does the same work
        **{f"{k}.storage.topic": f"bench-{tag}-{k}" for k in ("config", "offset", "status")},
        **{f"{k}.storage.replication.factor": "1" for k in ("config", "offset", "status")},
        **{f"{k}.converter": "org.apache.kafka.connect.json.JsonConverter" for k in ("key", "value")},
        **{f"{k}.converter.schemas.enable": "false" for k in ("key", "value")},
        "listeners": f"http://127.0.0.1:{port}",
        "plugin.discovery": "service_load",
    }


def run_connect(b: Bench, bootstrap: str, cds: tuple[str, ...], tag: str) -> Figures:
    port = free_port_block(1)
    run_dir = b.prepare(tag, worker_properties(bootstrap, port, tag))
    with launched(b.command(CONNECT, cds, run_dir, [str(run_dir / "server.properties")]), run_dir) as (p, t0):
        return until_ready(p, t0, lambda: rest_ok(port), run_dir)


def build_archive(b: Bench, jvm: Jvm, run: Callable[[tuple[str, ...], str], Figures]) -> tuple[str, ...]:
    """One untimed run writing the archive at exit; checked complete and mappable. Its options."""
    archive = b.work / "archives" / f"{jvm.name}.jsa"
    archive.parent.mkdir(exist_ok=True)
    figures = run(class_archive.writing_options(archive), f"{jvm.name}-build")
    if not class_archive.is_complete(archive):
        raise RuntimeError(f"{jvm.name}: no complete archive at {archive} after a clean stop")
    probe = b.work / f"{jvm.name}-probe"
    (probe / "logs").mkdir(parents=True)
    check = b.command(jvm, (f"-XX:SharedArchiveFile={archive}", "-Xshare:on"), probe, [])
    check[check.index(jvm.main_class)] = "-version"  # same flags and classpath, no Kafka code run
    with launched(check, probe) as (p, t0):
        until_exit(p, t0, probe)  # -Xshare:on: exits non-zero if the archive does not map
    print(f"  {jvm.name}: archive {archive.stat().st_size / 2**20:.1f} MiB, built in {figures['wall_s']:.1f}s")
    return class_archive.sharing_options(archive)


def bench_jvm(b: Bench, jvm: Jvm, run: Callable[[tuple[str, ...], str], Figures], repeats: int) -> dict[str, Any]:
    options = {"no archive": (), "archive": build_archive(b, jvm, run)}
    runs: dict[str, list[Figures]] = {v: [] for v in VARIANTS}
    for rep in range(repeats):
        for variant in VARIANTS:  # A B A B ...: machine noise hits both alike
            tag = f"{jvm.name}-{variant.replace(' ', '-')}-{rep}"
            figures = run(options[variant], tag)
            shutil.rmtree(b.work / tag, ignore_errors=True)
            runs[variant].append({k: round(v, 3) for k, v in figures.items()})
            wall, cpu = figures["wall_s"], figures["cpu_s"]
            print(f"  [{rep + 1}/{repeats}] {jvm.name:7} {variant:10} wall {wall:6.2f}s  cpu {cpu:6.2f}s", flush=True)
    medians = {v: {k: statistics.median(r[k] for r in runs[v]) for k in ("wall_s", "cpu_s")} for v in VARIANTS}
    ratio = {k: medians["archive"][k] / medians["no archive"][k] for k in ("wall_s", "cpu_s")}
    size = Path(options["archive"][0].split("=", 1)[1]).stat().st_size
    return {**asdict(jvm), "archive_bytes": size, "runs": runs, "medians": medians, "ratio_archive_vs_none": ratio}


def bench_all(b: Bench, repeats: int) -> dict[str, Any]:
    results = {
        "format": bench_jvm(b, FORMAT, lambda cds, tag: run_format(b, cds, tag), repeats),
        "broker": bench_jvm(b, BROKER, lambda cds, tag: run_broker(b, cds, tag), repeats),
    }
    with broker(b, (), "connect-backing-broker") as (bootstrap, _):
        results["connect"] = bench_jvm(b, CONNECT, lambda cds, tag: run_connect(b, bootstrap, cds, tag), repeats)
    return results


def markdown(info: dict[str, Any], results: dict[str, Any], command: str, repeats: int) -> str:
    load = ", ".join(f"{x:.1f}" for x in info["load_avg_at_start"])
    end = ", ".join(f"{x:.1f}" for x in info["load_avg_at_end"])
    lines = [
        f"# JVM start benchmark ({datetime.now(timezone.utc):%Y-%m-%d})",
        "",
        f"Machine: {hardware_text(info)}; Kafka {info['kafka']}, "
        f"{info['java']}; load average {load} at start, {end} at end. Command: `{command}`. "
        f"Medians of {repeats} run(s) per variant, alternated (no archive, archive, ...). Wall = start to ready; "
        "CPU = the JVM's utime+stime at ready. `archive` = a dynamic CDS archive built by one untimed run "
        "(`-XX:ArchiveClassesAtExit`, SIGTERM) and mapped with `-XX:SharedArchiveFile`, as class_archive.py does.",
        "",
        "| JVM | ready when | archive (MiB) | wall, no archive (s) | wall, archive (s) | wall archive/none "
        "| CPU, no archive (s) | CPU, archive (s) | CPU archive/none |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in results.items():
        m, ratio = r["medians"], r["ratio_archive_vs_none"]
        lines.append(
            f"| {name} | {r['ready_when']} | {r['archive_bytes'] / 2**20:.1f} "
            f"| {m['no archive']['wall_s']:.2f} | {m['archive']['wall_s']:.2f} | {ratio['wall_s']:.2f}x "
            f"| {m['no archive']['cpu_s']:.2f} | {m['archive']['cpu_s']:.2f} | {ratio['cpu_s']:.2f}x |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out-dir", default=str(ROOT / "bench" / "results"), help="where results are written")
    parser.add_argument("--name", default="jvm_start", help="results file prefix")
    args = parser.parse_args()
    libs, java = os.environ.get("MM2_KAFKA_LIBS"), shutil.which("java")
    if not libs or not Path(libs).is_dir() or not java:
        raise SystemExit("MM2_KAFKA_LIBS not set or java not on PATH: run `source .mm2/env` first")
    command = "python bench/jvm_start/run.py " + " ".join(sys.argv[1:])
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # unwinds like Ctrl-C: every `finally` stops its JVM
    info = machine()
    print(f"machine: {json.dumps(info)}", flush=True)
    with tempfile.TemporaryDirectory(prefix="mm2-bench-jvm-start-") as tmp:
        results = bench_all(Bench(java, libs, Path(tmp)), args.repeats)
    info["load_avg_at_end"] = os.getloadavg()
    text = markdown(info, results, command, args.repeats)
    print("\n" + text)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stamp = f"{args.name}-{datetime.now(timezone.utc):%Y%m%d}"
    report = {"command": command, "machine": info, "repeats": args.repeats, "jvms": results}
    (out / f"{stamp}.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / f"{stamp}.md").write_text(text + "\n")
    print(f"written: {out / stamp}.md and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
