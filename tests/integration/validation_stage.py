"""Running the Spark validation stage against a deployed test stack, as a user does, and reading
its verdict: the exit code plus every check's status from the JSON report.

The fault tests judge "nothing lost" with it, the TLS test asserts its exit code, and the Spark
cluster test compares its verdicts on a standalone cluster with those on local[*].
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.integration.harness import ROOT

VALIDATE = str(ROOT / "bin" / "validate")
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

    def summary(self) -> str:
        stdout, _, stderr = self.output.partition(_STDERR)
        return (
            f"exit {self.code} in {self.seconds:.0f}s, failed {self.report.get('failedChecks')}\n"
            f"{stdout[-6000:]}{_STDERR}{stderr[-3000:]}"
        )


def verdicts(report: Mapping[str, Any]) -> dict[str, str]:
    out = {name: c["status"] for name, c in (report.get("checks") or {}).items()}
    for flow, f in (report.get("flows") or {}).items():
        out.update({f"{flow}: {name}": c["status"] for name, c in (f.get("checks") or {}).items()})
        for topic, t in (f.get("topics") or {}).items():
            out.update({f"{flow}: {topic}: {name}": c["status"] for name, c in (t.get("checks") or {}).items()})
    return out


def run_stage(
    outputs_file: Path,
    report: Path,
    env: Mapping[str, str],
    *extra: str,
    command: tuple[str, ...] = (VALIDATE,),
    timeout_s: float = 900,
) -> StageRun:
    """Run the stage (`bin/validate` unless `command` says otherwise) and read its JSON report."""
    cmd = [*command, "--outputs", str(outputs_file), "--report", str(report), *extra]
    started = time.monotonic()
    done = subprocess.run(
        cmd, cwd=ROOT, env=dict(env), capture_output=True, text=True, timeout=timeout_s, check=False
    )  # fmt: skip
    seconds = time.monotonic() - started
    output = done.stdout + _STDERR + done.stderr
    assert report.exists(), f"the stage wrote no report (exit {done.returncode}):\n{output[-8000:]}"
    return StageRun(done.returncode, json.loads(report.read_text()), seconds, output)
