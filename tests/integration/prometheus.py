"""A real Prometheus (Debian's package) on loopback for the integration tests: given rule groups
and scrape jobs, queried over its HTTP API, always killed. Without Debian's prometheus package
(prometheus and promtool) the tests that start one fail with the fix: `bin/bootstrap --test-tools`."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml

from components.monitoring.prometheus import lag_targets, rule_groups, scrape_configs
from components.monitoring.rules import Thresholds
from tests.integration.harness import TestStack, free_port_block, wait_until
from tests.tools import promtool_check_config, required_tool


class Prometheus:
    """A real Prometheus on 127.0.0.1 with its own storage directory; always killed.

    `rules` are written into its own rules file; `rule_files` are more (written elsewhere: by
    bin/prometheus-config, say). Its config passes `promtool check config` before it starts."""

    def __init__(
        self,
        tmp: Path,
        rules: list[dict[str, Any]],
        scrape: list[dict[str, Any]],
        interval: str,
        rule_files: Sequence[Path] = (),
    ) -> None:
        binary = required_tool("prometheus", "prometheus")
        (tmp / "rules.yml").write_text(yaml.safe_dump({"groups": rules}, sort_keys=False))
        self.rule_files = [tmp / "rules.yml", *rule_files]
        config = {
            "global": {"scrape_interval": interval, "evaluation_interval": interval},
            "rule_files": [str(path) for path in self.rule_files],
            "scrape_configs": scrape,
        }
        (tmp / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
        promtool_check_config(tmp / "prometheus.yml")
        self.port = free_port_block(1)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (tmp / "prometheus.log").open("w")
        self.process = subprocess.Popen(
            [
                binary,
                f"--config.file={tmp / 'prometheus.yml'}",
                f"--storage.tsdb.path={tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        wait_until(self._ready, 60, "Prometheus to answer /-/ready", poll_s=0.5)

    def _ready(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"prometheus exited ({self.process.returncode}); see {self.log.name}")
        try:
            return httpx.get(f"{self.url}/-/ready", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def query(self, expr: str) -> list[dict[str, Any]]:
        answer = httpx.get(f"{self.url}/api/v1/query", params={"query": expr}, timeout=10).json()
        assert answer["status"] == "success", answer
        return list(answer["data"]["result"])

    def api(self, path: str) -> Any:
        """The `data` of a successful answer of /api/v1/`path`."""
        answer = httpx.get(f"{self.url}/api/v1/{path}", timeout=10).json()
        assert answer["status"] == "success", answer
        return answer["data"]

    def targets(self) -> list[dict[str, Any]]:
        """The active scrape targets: their `labels` (job included), `health` and `lastError`."""
        return list(self.api("targets?state=active")["activeTargets"])

    def rule_groups(self) -> list[dict[str, Any]]:
        """The rule groups it loaded: `name`, the `file` it read them from, and their `rules`."""
        return list(self.api("rules")["groups"])

    def firing(self) -> dict[str, list[dict[str, str]]]:
        alerts = httpx.get(f"{self.url}/api/v1/alerts", timeout=10).json()["data"]["alerts"]
        out: dict[str, list[dict[str, str]]] = {}
        for alert in alerts:
            if alert["state"] == "firing":
                out.setdefault(alert["labels"]["alertname"], []).append(alert["labels"])
        return out

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(timeout=30)
        self.log.close()


def stack_prometheus(stack: TestStack, lag_url: str, tmp: Path, thresholds: Thresholds, interval: str) -> Prometheus:
    """A Prometheus with the stack's alert rules (at `thresholds`) scraping its JMX targets and its
    worker group `mm2`'s lag exporter at `lag_url` (the stack output)."""
    topology = stack.topology()
    lag = lag_targets(topology, {"mm2": lag_url})
    assert lag.targets == {"mm2": lag_url.removeprefix("http://")}, lag.describe()
    scrape = scrape_configs(topology, interval, lag.targets)
    return Prometheus(tmp, rule_groups(topology, thresholds), scrape, interval)
