"""What the promtool tests of the alert rules share: test_rules.py runs them with the short
thresholds the integration tests use, test_rules_defaults.py with the defaults every stack gets.

A `RuleFile` is a rendered rule file: the alert promtool must report for one of its rules, and
`promtool test rules` / `promtool check rules` on it. promtool comes with Debian's prometheus
package, which `bin/bootstrap --test-tools` installs: without it these tests fail with the fix
(tests/tools.py), with or without CI.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.tools import required_tool

W = 'mm2_worker_group="mm2"'
HEARTBEAT_WRITES = f'kafka_connect_source_task_records_written{{{W},connector="mm2-primary-to-dr-heartbeat",task="0"}}'
RECORDS = 'kafka_connect_mirror_source_connector_record_count{{{w},target="dr",topic="{topic}",partition="0"}}'
MESSAGES_IN = 'kafka_server_brokertopicmetrics_messagesin_count{{mm2_cluster="primary",topic="{topic}"}}'
# The lag exporter's series as a scrape labels them (job and instance included: the rules drop them).
LAG = 'mm2_lag_exporter="mm2",job="mm2-lag-mm2",instance="127.0.0.1:41234"'
FLOW = 'flow="primary->dr",source="primary",target="dr"'
FLOW_LAG = f"mm2_flow_lag_seconds{{{LAG},{FLOW}}}"
EXPIRED = 'mm2_expired_records_total{{{lag},{flow},topic="orders",partition="{p}",reason="{reason}"}}'
RECREATIONS = f'mm2_source_topic_recreations_total{{{LAG},{FLOW},topic="orders"}}'
LAST_READ = f"mm2_lag_last_read_timestamp_seconds{{{LAG},{FLOW}}}"
READ_ERRORS = f"mm2_lag_read_errors_total{{{LAG},{FLOW}}}"
# Every test file's rules are evaluated this often (a Prometheus's evaluation_interval).
EVALUATION_INTERVAL = "15s"


def promtool() -> str:
    return required_tool("promtool", "prometheus")


def case(series: dict[str, str], checks: list[dict[str, Any]], interval: str = "15s") -> dict[str, Any]:
    """One promtool test: input series sampled every `interval`, and the alerts expected when."""
    return {
        "interval": interval,
        "input_series": [{"series": s, "values": v} for s, v in series.items()],
        "alert_rule_test": checks,
    }


@dataclass(frozen=True)
class RuleFile:
    """Rendered rule groups (the `groups:` of a Prometheus rule file)."""

    groups: list[dict[str, Any]]

    def rule(self, name: str, **labels: str) -> dict[str, Any]:
        """The one rule of alert `name` whose labels include `labels`."""
        found = [
            r
            for group in self.groups
            for r in group["rules"]
            if r["alert"] == name and all(r["labels"].get(k) == v for k, v in labels.items())
        ]
        assert len(found) == 1, (name, labels)
        return found[0]

    def expected(
        self, name: str, value: str = "", match: dict[str, str] | None = None, **labels: str
    ) -> dict[str, Any]:
        """What promtool reports for alert `name` (the rule whose labels include `match`) firing
        with the rule's labels plus `labels`, its annotations rendered."""
        r = self.rule(name, **(match or {}))
        all_labels = {**r["labels"], **labels}

        def render(text: str) -> str:
            text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: all_labels[m.group(1)], text)
            return text.replace("{{ $value }}", value)

        return {"exp_labels": all_labels, "exp_annotations": {k: render(v) for k, v in r["annotations"].items()}}

    def write(self, directory: Path) -> Path:
        path = directory / "rules.yml"
        path.write_text(yaml.safe_dump({"groups": self.groups}, sort_keys=False))
        return path

    def test(self, tmp_path: Path, tests: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
        """`promtool test rules` of `tests` against these rules."""
        self.write(tmp_path)
        unit = {"rule_files": ["rules.yml"], "evaluation_interval": EVALUATION_INTERVAL, "tests": tests}
        (tmp_path / "tests.yml").write_text(yaml.safe_dump(unit, sort_keys=False))
        return subprocess.run(
            [promtool(), "test", "rules", "tests.yml"], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )

    def assert_tests(self, tmp_path: Path, tests: list[dict[str, Any]]) -> None:
        out = self.test(tmp_path, tests)
        assert out.returncode == 0, out.stdout + out.stderr

    def check(self, tmp_path: Path) -> subprocess.CompletedProcess[str]:
        """`promtool check rules` of these rules."""
        self.write(tmp_path)
        return subprocess.run(
            [promtool(), "check", "rules", "rules.yml"], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
