"""JVM flags benchmark: the CPU a test module's local brokers and Connect workers spend with
Kafka's own flags (C1 and C2 JIT) against the client compiler only (`-XX:TieredStopAtLevel=1`,
what tests/conftest.py sets for the suite through KAFKA_JVM_PERFORMANCE_OPTS).

    source .mm2/env && python bench/jvm_flags/run.py [--module tests/integration/test_security.py]
        [--repeats 2] [--out-dir bench/results]

Runs the module with pytest in this process's environment, once per variant per repeat,
alternated. While it runs, /proc is read every 0.2 s; each JVM of the local platform (its command
line carries `-Dmm2.process=`) that started during the run is counted with the CPU (utime+stime)
it had when last seen, by main class. Reports medians of wall time, broker CPU and worker CPU,
and their C1-only / defaults ratios, in <out-dir>/jvm_flags-<date>.{json,md}. Run it on an
otherwise idle machine: it measures CPU, but the module's own bounds assume nothing else runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.deploy.run import machine  # noqa: E402
from components.platform.local.process import JVM_FLAGS, MARKER_FLAG, PERFORMANCE_OPTS_ENV  # noqa: E402

VARIANTS = {
    "Kafka's flags": " ".join(JVM_FLAGS),
    "C1 only": " ".join((*JVM_FLAGS, "-XX:TieredStopAtLevel=1")),
}
ROLES = {"kafka.Kafka": "broker", "ConnectDistributed": "worker"}
POLL_S = 0.2
TICK = os.sysconf("SC_CLK_TCK")


def jvms() -> dict[tuple[str, str], tuple[str, float]]:
    """Every local-platform JVM now: (pid, start tick) -> (role, CPU seconds so far)."""
    found: dict[tuple[str, str], tuple[str, float]] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            if MARKER_FLAG not in cmdline:
                continue
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        role = next((r for main, r in ROLES.items() if main in cmdline), "other")
        found[(pid, fields[19])] = (role, (int(fields[11]) + int(fields[12])) / TICK)
    return found


def run_module(module: str, flags: str) -> dict[str, float]:
    """Wall seconds of one pytest run of `module` and the CPU seconds its JVMs spent, by role."""
    before = set(jvms())
    env = {**os.environ, PERFORMANCE_OPTS_ENV: flags}
    env.pop("MM2_TEST_PHASE", None)
    t0 = time.monotonic()
    p = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", module],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen: dict[tuple[str, str], tuple[str, float]] = {}
    while p.poll() is None:
        seen.update({k: v for k, v in jvms().items() if k not in before})
        time.sleep(POLL_S)
    wall = time.monotonic() - t0
    out = p.stdout.read() if p.stdout else ""
    if p.returncode != 0:
        raise RuntimeError(f"{module} failed (exit {p.returncode}):\n{out[-3000:]}")
    cpu = {role: sum(c for r, c in seen.values() if r == role) for role in (*ROLES.values(), "other")}
    return {"wall_s": round(wall, 1), **{f"{r}_cpu_s": round(c, 1) for r, c in cpu.items()}, "jvms": len(seen)}


def summary(runs: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, float]]:
    return {v: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for v, rs in runs.items()}


def markdown(info: dict[str, Any], med: dict[str, dict[str, float]], module: str, repeats: int) -> str:
    base, c1 = med["Kafka's flags"], med["C1 only"]
    rows = [
        "| variant | wall (s) | broker CPU (s) | worker CPU (s) | JVMs |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {v} | {m['wall_s']:.1f} | {m['broker_cpu_s']:.1f} | {m['worker_cpu_s']:.1f} | {m['jvms']:.0f} |"
            for v, m in med.items()
        ),
        f"| C1 only / Kafka's flags | {c1['wall_s'] / base['wall_s']:.2f}x | "
        f"{c1['broker_cpu_s'] / base['broker_cpu_s']:.2f}x | {c1['worker_cpu_s'] / base['worker_cpu_s']:.2f}x | |",
    ]
    return "\n".join(
        [
            f"# JVM flags benchmark ({info['date']})",
            "",
            f"Machine: {info['cores']} cores, {info['memory_gib']} GiB, {info['cpu']}; Kafka {info['kafka']}, "
            f"{info['java']}; load average {info['load_avg_at_start']} at start. Command: "
            f"`python bench/jvm_flags/run.py --module {module} --repeats {repeats}`. Medians of {repeats} run(s) "
            "per variant, alternated. CPU = utime+stime of the local platform's JVMs that the run started.",
            "",
            *rows,
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--module", default="tests/integration/test_security.py")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out-dir", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    info = {**machine(), "date": datetime.now(timezone.utc).strftime("%Y-%m-%d")}
    print(f"machine: {json.dumps(info)}", flush=True)
    runs: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
    for i in range(args.repeats):
        for variant, flags in VARIANTS.items():
            print(f"run {i + 1}/{args.repeats}, {variant}: {args.module} ...", flush=True)
            runs[variant].append(run_module(args.module, flags))
            print(f"  {runs[variant][-1]}", flush=True)
    med = summary(runs)
    text = markdown(info, med, args.module, args.repeats)
    print(text)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stamp = f"jvm_flags-{datetime.now(timezone.utc):%Y%m%d}"
    report = {"machine": info, "module": args.module, "runs": runs, "medians": med}
    (out / f"{stamp}.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / f"{stamp}.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
