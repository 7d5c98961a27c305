"""The one loader: a saved file, or `bin/pulumi stack output` run in exactly one place."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from components.outputs import loader
from components.outputs.contract import OutputsError

OUTPUTS = {
    "clusters": {"primary": {"bootstrap": "h:1"}, "dr": {"bootstrap": "h:2"}},
    "flows": {
        "primary->dr": {
            "source": "primary",
            "target": "dr",
            "topics": {"orders": "primary.orders"},
            "checkpointsTopic": "primary.checkpoints.internal",
            "offsetSyncsTopic": "mm2-offset-syncs.dr.internal",
            "heartbeatsTopic": "heartbeats",
        }
    },
}


def test_reads_a_saved_file(tmp_path: Path) -> None:
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(OUTPUTS))
    assert loader.load_exports(None, str(path)).flows["primary->dr"].topics == {"orders": "primary.orders"}


def test_unreadable_file_names_the_next_step(tmp_path: Path) -> None:
    with pytest.raises(OutputsError, match=r"cannot read .*missing.json.*--show-secrets > outputs.json"):
        loader.read_exports_file(tmp_path / "missing.json")


def test_neither_stack_nor_file() -> None:
    with pytest.raises(OutputsError, match="give --stack NAME or --outputs FILE"):
        loader.load_exports(None, None)


def test_stack_outputs_come_from_bin_pulumi_with_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def run(cmd: list[str], **_kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, json.dumps(OUTPUTS), "")

    monkeypatch.setattr(loader.subprocess, "run", run)
    assert set(loader.read_stack_exports("dev").clusters) == {"primary", "dr"}
    loader.read_stack_exports("")
    assert calls[0][1:] == ["stack", "output", "--json", "--show-secrets", "--stack", "dev"]
    assert calls[0][0].endswith("bin/pulumi") and "--stack" not in calls[1]


def test_failed_or_empty_stack_output_is_an_outputs_error(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = [(255, "", "error: no stack named 'x'"), (0, "{}", "")]

    def run(cmd: list[str], **_kwargs: Any) -> subprocess.CompletedProcess[str]:
        code, out, err = answers.pop(0)
        return subprocess.CompletedProcess(cmd, code, out, err)

    monkeypatch.setattr(loader.subprocess, "run", run)
    with pytest.raises(OutputsError, match=r"failed \(255\): error: no stack named 'x'"):
        loader.read_stack_exports("x")
    with pytest.raises(OutputsError, match="has no outputs"):
        loader.read_stack_exports("x")


def test_contract_and_loader_need_no_pulumi() -> None:
    # The Spark stage runs where only the exported file exists: importing its outputs view must
    # not pull in the Pulumi SDK (nor anything that needs it).
    code = "import sys, spark.outputs, components.outputs.loader; sys.exit('pulumi' in sys.modules)"
    root = Path(__file__).resolve().parents[3]
    assert subprocess.run([sys.executable, "-c", code], cwd=root, check=False).returncode == 0
