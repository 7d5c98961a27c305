"""A real Prometheus (Debian's package) on loopback for the integration tests: given rule groups
and scrape jobs, queried over its HTTP API, always killed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.integration.harness import free_port_block, wait_until


class Prometheus:
    """A real Prometheus on 127.0.0.1 with its own storage directory; always killed."""

    def __init__(self, tmp: Path, rules: list[dict[str, Any]], scrape: list[dict[str, Any]], interval: str) -> None:
        binary = shutil.which("prometheus")
        if binary is None:
            if os.environ.get("CI"):
                pytest.fail("prometheus is missing under CI: bin/bootstrap --test-tools installs Debian's package")
            pytest.skip("prometheus not on PATH: run `bin/bootstrap --test-tools` (Debian's prometheus package)")
        (tmp / "rules.yml").write_text(yaml.safe_dump({"groups": rules}, sort_keys=False))
        config = {
            "global": {"scrape_interval": interval, "evaluation_interval": interval},
            "rule_files": [str(tmp / "rules.yml")],
            "scrape_configs": scrape,
        }
        (tmp / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
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
