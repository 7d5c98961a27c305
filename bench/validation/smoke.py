"""Smoke run of the validation benchmark end to end at a tiny size (starts Kafka and Spark):

    python -m bench.validation.smoke

Not part of the test suite (it is a check of the benchmark, minutes long, and needs the
toolchain from bin/bootstrap): the benchmark must run, leave no process behind and write its
results. Exit status 0 when it did. The comparator's own tests are in tests/unit/bench/.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def smoke(out_dir: Path) -> list[str]:
    """Problems found running the benchmark once at 2,000 records; empty when it worked."""
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "validation" / "run.py"),
            "--sizes",
            "2000",
            "--repeats",
            "1",
            "--partitions",
            "4",
            "--out-dir",
            str(out_dir),
            "--name",
            "smoke",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if out.returncode != 0:
        return [f"run.py exited {out.returncode}:\n{out.stdout[-4000:]}{out.stderr[-4000:]}"]
    results = list(out_dir.glob("smoke-*.json"))
    if len(results) != 1:
        return [f"expected one smoke-*.json result, found {[p.name for p in results]}"]
    summary = json.loads(results[0].read_text())["summary"]["2000"]
    problems = []
    if not (summary["all_passed"] and summary["runs"] == 1):
        problems.append(f"not all runs passed: {summary}")
    if not (summary["spark_driver_jvm_peak_rss_mib"] > 0 and summary["baseline_peak_rss_mib"] > 0):
        problems.append(f"peak memory not measured: {summary}")
    if not list(out_dir.glob("smoke-*.md")):
        problems.append("no smoke-*.md summary written")
    return problems


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="mm2-bench-smoke-") as tmp:
        problems = smoke(Path(tmp))
    for problem in problems:
        print(f"smoke: {problem}", file=sys.stderr)
    print("smoke: ok" if not problems else f"smoke: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
