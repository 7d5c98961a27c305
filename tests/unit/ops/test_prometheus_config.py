"""bin/prometheus-config: the scrape jobs and rules written from a stack config file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from components.ops.prometheus_config import main

from ..topology.helpers import dev_config


def write_stack(tmp_path: Path, config: dict) -> Path:
    path = tmp_path / "Pulumi.test.yaml"
    path.write_text(yaml.safe_dump({"config": {f"mm2:{k}": v for k, v in config.items()}}))
    return path


def test_writes_jobs_and_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = dev_config()
    config["workerGroups"]["mm2"]["metricsPort"] = 19410
    assert main(["--config-file", str(write_stack(tmp_path, config)), "--out", str(tmp_path / "out")]) == 0
    jobs = yaml.safe_load((tmp_path / "out" / "mm2-scrape.yml").read_text())["scrape_configs"]
    assert [j["job_name"] for j in jobs] == ["mm2-workers-mm2"]
    rules = yaml.safe_load((tmp_path / "out" / "mm2-rules.yml").read_text())["groups"]
    assert {r["alert"] for r in rules[0]["rules"]} >= {"MM2HeartbeatStale", "MM2ConnectorTasksFailed"}
    assert "1 jobs, 2 targets" in capsys.readouterr().out


def test_bad_config_names_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = dev_config()
    config["workerGroups"]["mm2"]["metricsPort"] = 18083
    assert main(["--config-file", str(write_stack(tmp_path, config)), "--out", str(tmp_path / "out")]) == 1
    assert "mm2:workerGroups.mm2.metricsPort" in capsys.readouterr().err


def test_missing_stack_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config-file", str(tmp_path / "nope.yaml"), "--out", str(tmp_path)]) == 1
    assert "cannot read" in capsys.readouterr().err
