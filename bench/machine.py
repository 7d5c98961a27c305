"""The machine a benchmark ran on, as each records it beside its figures, and the one line its
report opens with. Read from /proc and the tools on PATH; nothing is started."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any


def _first(path: str, prefix: str) -> str | None:
    """The value of the first `prefix: value` line of a /proc file."""
    for line in Path(path).read_text().splitlines():
        if line.startswith(prefix):
            return line.split(":", 1)[1].strip()
    return None


def hardware() -> dict[str, Any]:
    """Cores, memory, CPU model, kernel, Python, Java and Kafka, and the load average at start."""
    mem_kb = int((_first("/proc/meminfo", "MemTotal") or "0 kB").split()[0])
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr.splitlines()
    return {
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kb / 1024 / 1024, 1),
        "cpu": _first("/proc/cpuinfo", "model name") or platform.processor(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "java": java[0] if java else "unknown",
        "kafka": os.environ.get("MM2_KAFKA_VERSION", "unknown"),
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def hardware_text(info: dict[str, Any]) -> str:
    """`2 cores, 23.5 GiB, AMD EPYC`: how every report names the machine first."""
    return f"{info['cores']} cores, {info['memory_gib']} GiB, {info['cpu']}"
