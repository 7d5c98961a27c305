"""What the benchmarks read of /proc: a process's CPU time and memory, the machine's busy time."""

from __future__ import annotations

import os
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    """utime + stime of `pid` so far (all its threads), in seconds; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu() -> float:
    """Busy seconds of every core so far (guest time is already in user)."""
    parts = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    busy = sum(int(x) for i, x in enumerate(parts[:8]) if i not in (3, 4))  # all but idle, iowait
    return busy / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    """The resident memory (VmRSS) of `pid` now, in MiB; 0 once it is gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0.0
    return next((int(line.split()[1]) / 1024 for line in lines if line.startswith("VmRSS:")), 0.0)
