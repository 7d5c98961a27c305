"""Running the Spark validation stage against a deployed test stack and reading its verdict: the
exit code plus every check's status from the JSON report. The one way tests run the stage: as a
user does (`bin/validate`, or any other command line: spark-submit, `python -m spark.validate`),
or in this process on a session the module already has (`run_stage_in_process`).

Either way the stack outputs go to the stage through `write_outputs` (0600 before anything is
written, since they carry passwords) and the file is removed once the stage is done.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.integration.harness import ROOT, TestStack, write_outputs

VALIDATE = str(ROOT / "bin" / "validate")
# A small local run: Spark's 200 shuffle partitions are 200 tasks per stage for a few hundred records.
LOCAL = ("--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=4", "--conf", "spark.ui.enabled=false")
# Statuses a check may have when nothing was lost: duplicates are a warning under at-least-once.
_STDERR = "\n--- stderr ---\n"
LOSS_CHECKS = {"completeness": {"pass"}, "duplicates": {"pass", "warn"}}


@dataclass(frozen=True)
class StageRun:
    code: int
    report: dict[str, Any]
    seconds: float
    output: str  # the stage's stdout (table), then its stderr (progress lines)

    def verdicts(self) -> dict[str, str]:
        """Every check by its full name (`flow: topic: check`, `flow: check`, `check`) -> status."""
        return verdicts(self.report)

    def losses(self) -> dict[str, str]:
        """The completeness and duplicates checks that say records were lost or doubled."""
        return {
            name: status
            for name, status in self.verdicts().items()
            if (check := name.rsplit(": ", 1)[-1]) in LOSS_CHECKS and status not in LOSS_CHECKS[check]
        }

    @property
    def stdout(self) -> str:
        return self.output.partition(_STDERR)[0]

    @property
    def stderr(self) -> str:
        return self.output.partition(_STDERR)[2]

    def summary(self) -> str:
        return (
            f"exit {self.code} in {self.seconds:.0f}s, failed {self.report.get('failedChecks')}\n"
            f"{self.stdout[-6000:]}{_STDERR}{self.stderr[-3000:]}"
        )


def verdicts(report: Mapping[str, Any]) -> dict[str, str]:
    out = {name: c["status"] for name, c in (report.get("checks") or {}).items()}
    for flow, f in (report.get("flows") or {}).items():
        out.update({f"{flow}: {name}": c["status"] for name, c in (f.get("checks") or {}).items()})
        for topic, t in (f.get("topics") or {}).items():
            out.update({f"{flow}: {topic}: {name}": c["status"] for name, c in (t.get("checks") or {}).items()})
    return out


def run_stage(
    outputs: Mapping[str, Any],
    report: Path,
    env: Mapping[str, str],
    *extra: str,
    command: tuple[str, ...] = (VALIDATE,),
    timeout_s: float = 900,
) -> StageRun:
    """Run the stage (`bin/validate` unless `command` says otherwise) on `outputs` and read its
    JSON report (written to `report`)."""
    outputs_file = write_outputs(outputs, _outputs_path(report))
    cmd = [*command, "--outputs", str(outputs_file), "--report", str(report), *extra]
    started = time.monotonic()
    try:
        done = subprocess.run(
            cmd, cwd=ROOT, env=dict(env), capture_output=True, text=True, timeout=timeout_s, check=False
        )  # fmt: skip
    finally:
        outputs_file.unlink(missing_ok=True)
    output = done.stdout + _STDERR + done.stderr
    return _read(report, done.returncode, time.monotonic() - started, output)


def run_stage_in_process(spark: Any, outputs: Mapping[str, Any], report: Path, *extra: str) -> StageRun:
    """The stage (`spark.validate.run`, what bin/validate runs) on `outputs`, in this process on an
    existing Spark session: the module pays for one JVM start, not one per run."""
    from spark import validate as stage

    outputs_file = write_outputs(outputs, _outputs_path(report))
    started = time.monotonic()
    try:
        code = stage.run(
            stage.parse_args(["--outputs", str(outputs_file), "--report", str(report), *extra]), spark=spark
        )
    finally:
        outputs_file.unlink(missing_ok=True)
    return _read(report, code, time.monotonic() - started, "")


def run_validator(
    stack: TestStack, outputs: Mapping[str, Any], tmp: Path, *extra: str, expect_exit: int = 0
) -> dict[str, Any]:
    """bin/validate on the stack's outputs on a small local master, as a user runs it after
    `pulumi up`; asserts its exit code (0: every check passed) and returns the JSON report."""
    run = run_stage(outputs, tmp / "report.json", stack.env, *LOCAL, *extra, timeout_s=600)
    # Shown with `pytest -s`: where the stage spent its time (catch-up waits, per flow).
    print("\n".join(line for line in run.stderr.splitlines() if "caught up" in line or "behind after" in line))
    failed = run.report.get("failedChecks")
    assert run.code == expect_exit, f"bin/validate exit {run.code}, failed: {failed}\n{run.stdout[-3000:]}"
    return run.report


def _outputs_path(report: Path) -> Path:
    return report.with_name(f"{report.stem}-outputs.json")


def _read(report: Path, code: int, seconds: float, output: str) -> StageRun:
    assert report.exists(), f"the stage wrote no report (exit {code}):\n{output[-8000:]}"
    return StageRun(code, dict(json.loads(report.read_text())), seconds, output)
