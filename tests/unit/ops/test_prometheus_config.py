"""bin/prometheus-config: the scrape jobs and rules written from a stack config file, and the lag
exporters' jobs from its outputs; the files pass `promtool check config` (a real Prometheus loads
them in tests/integration/test_metrics.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from components.ops.prometheus_config import main
from components.outputs.contract import StackExports
from tests.tools import promtool_check_config

from ..topology.helpers import dev_config
from .helpers import outputs


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


def write_outputs(tmp_path: Path, lag_url: str | None) -> Path:
    data = outputs().to_json()
    if lag_url is not None:
        data["connect"]["mm2"]["lagUrl"] = lag_url
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(data))
    return path


def scrape_jobs(out: Path) -> dict[str, dict]:
    return {j["job_name"]: j for j in yaml.safe_load((out / "mm2-scrape.yml").read_text())["scrape_configs"]}


def test_outputs_add_the_lag_exporters_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack = write_stack(tmp_path, dev_config())
    outputs_file = write_outputs(tmp_path, "http://127.0.0.1:41234")
    assert main(["--config-file", str(stack), "--outputs", str(outputs_file), "--out", str(tmp_path / "out")]) == 0
    jobs = scrape_jobs(tmp_path / "out")
    assert jobs["mm2-lag-mm2"]["static_configs"] == [
        {"targets": ["127.0.0.1:41234"], "labels": {"mm2_lag_exporter": "mm2"}}
    ]
    # The rules written beside it select what the job labels.
    [group] = yaml.safe_load((tmp_path / "out" / "mm2-rules.yml").read_text())["groups"]
    [down] = [r for r in group["rules"] if r["alert"] == "MM2LagExporterDown"]
    assert 'mm2_lag_exporter="mm2"' in down["expr"]
    assert "lag exporters: 1 job(s) (mm2 at 127.0.0.1:41234)" in capsys.readouterr().out


def test_without_outputs_it_says_no_lag_targets_were_written_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--config-file", str(write_stack(tmp_path, dev_config())), "--out", str(tmp_path / "out")]) == 0
    assert not [name for name in scrape_jobs(tmp_path / "out") if name.startswith("mm2-lag-")]
    out = capsys.readouterr().out
    assert "no lag targets written: the exporters of mm2 listen on ports chosen at deploy" in out
    assert "--outputs FILE, or --stack NAME --deployed" in out


def test_outputs_without_a_lag_url_say_which_group_lacks_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack = write_stack(tmp_path, dev_config())
    outputs_file = write_outputs(tmp_path, None)  # written before the exporter existed
    assert main(["--config-file", str(stack), "--outputs", str(outputs_file), "--out", str(tmp_path / "out")]) == 0
    assert "mm2-lag-mm2" not in scrape_jobs(tmp_path / "out")
    assert "no lag targets written: group mm2: the outputs have no connect.mm2.lagUrl" in capsys.readouterr().out


def test_deployed_reads_the_stacks_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import components.ops.prometheus_config as cli
    from components.outputs import loader

    write_stack(tmp_path, dev_config())
    monkeypatch.setattr(cli, "ROOT", tmp_path)  # Pulumi.test.yaml
    asked: list[str] = []
    exports = StackExports.from_json(json.loads(write_outputs(tmp_path, "http://127.0.0.1:40001").read_text()))
    monkeypatch.setattr(loader, "read_stack_exports", lambda stack: asked.append(stack) or exports)
    assert main(["--stack", "test", "--deployed", "--out", str(tmp_path / "out")]) == 0
    assert asked == ["test"]
    assert scrape_jobs(tmp_path / "out")["mm2-lag-mm2"]["static_configs"][0]["targets"] == ["127.0.0.1:40001"]


def test_deployed_needs_a_stack(tmp_path: Path) -> None:
    stack = write_stack(tmp_path, dev_config())
    with pytest.raises(SystemExit) as exit_:
        main(["--config-file", str(stack), "--deployed", "--out", str(tmp_path / "out")])
    assert exit_.value.code == 2


def test_unreadable_outputs_fail_before_writing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack = write_stack(tmp_path, dev_config())
    args = ["--config-file", str(stack), "--outputs", str(tmp_path / "nope.json"), "--out", str(tmp_path / "out")]
    assert main(args) == 1
    assert "cannot read" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_the_written_files_pass_promtool_check_config(tmp_path: Path) -> None:
    config = dev_config()
    config["workerGroups"]["mm2"]["metricsPort"] = 19410
    for port, cluster in zip((19400, 19420), config["clusters"].values(), strict=True):
        cluster["metricsPort"] = port
    stack, outputs_file = write_stack(tmp_path, config), write_outputs(tmp_path, "http://127.0.0.1:41234")
    out = tmp_path / "out"
    assert main(["--config-file", str(stack), "--outputs", str(outputs_file), "--out", str(out)]) == 0
    jobs = scrape_jobs(out)
    assert set(jobs) == {"mm2-cluster-primary", "mm2-cluster-dr", "mm2-workers-mm2", "mm2-lag-mm2"}
    # The scrape file alone is a Prometheus config (only `scrape_configs:`).
    assert "SUCCESS" in promtool_check_config(out / "mm2-scrape.yml")
    # As the README says to use them: the rules file under rule_files, the jobs under scrape_configs.
    main_config = {"rule_files": ["mm2-rules.yml"], "scrape_configs": list(jobs.values())}
    (out / "prometheus.yml").write_text(yaml.safe_dump(main_config, sort_keys=False))
    checked = promtool_check_config(out / "prometheus.yml")
    assert "SUCCESS: 1 rule files found" in checked and "mm2-rules.yml" in checked, checked


def test_promtool_check_config_can_fail(tmp_path: Path) -> None:
    (tmp_path / "mm2-rules.yml").write_text(yaml.safe_dump({"groups": [{"name": "g", "rules": [{"alert": "A"}]}]}))
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump({"rule_files": ["mm2-rules.yml"]}))
    with pytest.raises(AssertionError, match=r"mm2-rules\.yml"):
        promtool_check_config(tmp_path / "prometheus.yml")
