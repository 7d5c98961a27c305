"""Per-process peak memory and CPU time from /proc, plus the JVM heap from `jstat`.

Peak memory is the kernel's own high-water mark (`VmHWM` in /proc/<pid>/status), so it misses no
short peak; it is read every `interval` seconds and the last reading before a process exits is
kept (growth in the final interval can be missed). CPU time is utime+stime from /proc/<pid>/stat,
as a difference from the first sighting of the process (processes started before the monitor,
the brokers, count only from then on). Whole-machine CPU comes from /proc/stat.

The JVM heap is sampled once a second by one `jstat -gc <pid> 1000` attached to the Spark driver
JVM (with local[*] the executors run inside it): used = survivor + eden + old generation.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def _status_kib(pid: int, key: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14 and 15)


def machine_cpu_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot."""
    vals = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = vals[3] + vals[4]
    return (sum(vals) - idle) / _TICK, sum(vals) / _TICK


def children(pid: int) -> list[int]:
    """Every live descendant of `pid`."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for c in parents.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


@dataclass
class ProcStats:
    role: str
    pid: int
    peak_rss_kib: int = 0
    cpu_first: float | None = None
    cpu_last: float | None = None

    @property
    def cpu_s(self) -> float:
        if self.cpu_first is None or self.cpu_last is None:
            return 0.0
        return self.cpu_last - self.cpu_first


@dataclass
class HeapStats:
    samples: int = 0
    peak_used_mib: float = 0.0
    peak_old_mib: float = 0.0
    peak_committed_mib: float = 0.0
    young_gcs: int = 0
    full_gcs: int = 0
    gc_seconds: float = 0.0


@dataclass
class Monitor:
    """Samples the processes `roles()` names (role -> pids) until stopped."""

    roles: Callable[[], dict[str, list[int]]]
    interval: float = 0.5
    procs: dict[int, ProcStats] = field(default_factory=dict)
    heap: HeapStats = field(default_factory=HeapStats)
    jstat_pid: int | None = None  # attach jstat to this JVM once known (set by `want_heap`)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _jstat: subprocess.Popen[str] | None = None
    _jstat_thread: threading.Thread | None = None
    _jstat_tries: int = 0
    machine_start: tuple[float, float] = (0.0, 0.0)
    machine_end: tuple[float, float] = (0.0, 0.0)
    heap_role: str | None = None
    notes: dict[str, str] = field(default_factory=dict)  # facts the role functions pick up on the way

    def start(self) -> Monitor:
        self.machine_start = machine_cpu_seconds()
        self._sample()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(10)
        self.machine_end = machine_cpu_seconds()
        if self._jstat is not None:
            if self._jstat.poll() is None:
                self._jstat.terminate()
            try:
                self._jstat.wait(10)
            except subprocess.TimeoutExpired:
                self._jstat.kill()
                self._jstat.wait(10)
        if self._jstat_thread:
            self._jstat_thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        for role, pids in self.roles().items():
            for pid in pids:
                st = self.procs.setdefault(pid, ProcStats(role, pid))
                st.role = role  # a pid can change roles: spark-submit's shell execs the JVM
                hwm = _status_kib(pid, "VmHWM")
                cpu = cpu_seconds(pid)
                if hwm is None or cpu is None:
                    continue
                st.peak_rss_kib = max(st.peak_rss_kib, hwm)
                if st.cpu_first is None:
                    st.cpu_first = 0.0 if role not in ("broker",) else cpu
                st.cpu_last = cpu
                if role == self.heap_role and self._jstat_retry():
                    self._attach_jstat(pid)

    def _jstat_retry(self) -> bool:
        """True when jstat is not attached yet, or exited before its first sample (it cannot
        attach to a JVM that has not yet published its performance counters)."""
        if self._jstat is None:
            return True
        if self._jstat.poll() is not None and self.heap.samples == 0 and self._jstat_tries < 20:
            if self._jstat_thread:
                self._jstat_thread.join(1)
            return True
        return False

    def _attach_jstat(self, pid: int) -> None:
        self._jstat_tries += 1
        self._jstat = subprocess.Popen(
            ["jstat", "-gc", str(pid), "1000"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        self._jstat_thread = threading.Thread(target=self._read_jstat, daemon=True)
        self._jstat_thread.start()

    def _read_jstat(self) -> None:
        assert self._jstat is not None and self._jstat.stdout is not None
        header: list[str] = []
        for line in self._jstat.stdout:
            cols = line.split()
            if not cols:
                continue
            if cols[0] == "S0C":
                header = cols
                continue
            try:
                row = dict(zip(header, (float(c) for c in cols), strict=True))
            except ValueError:
                continue
            used = (row["S0U"] + row["S1U"] + row["EU"] + row["OU"]) / 1024
            committed = (row["S0C"] + row["S1C"] + row["EC"] + row["OC"]) / 1024
            h = self.heap
            h.samples += 1
            h.peak_used_mib = max(h.peak_used_mib, used)
            h.peak_old_mib = max(h.peak_old_mib, row["OU"] / 1024)
            h.peak_committed_mib = max(h.peak_committed_mib, committed)
            h.young_gcs, h.full_gcs, h.gc_seconds = int(row["YGC"]), int(row["FGC"]), row["GCT"]

    def by_role(self) -> dict[str, dict[str, float]]:
        """{role: {peak_rss_mib (largest single process), cpu_s (sum), processes}}."""
        out: dict[str, dict[str, float]] = {}
        for st in self.procs.values():
            r = out.setdefault(st.role, {"peak_rss_mib": 0.0, "cpu_s": 0.0, "processes": 0})
            r["peak_rss_mib"] = max(r["peak_rss_mib"], round(st.peak_rss_kib / 1024, 1))
            r["cpu_s"] = round(r["cpu_s"] + st.cpu_s, 1)
            r["processes"] += 1
        busy = self.machine_end[0] - self.machine_start[0]
        total = self.machine_end[1] - self.machine_start[1]
        out["machine"] = {"busy_cpu_s": round(busy, 1), "capacity_cpu_s": round(total, 1)}
        return out
