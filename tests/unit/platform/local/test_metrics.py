"""The JMX exporter agent option and config file of local brokers and workers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pytest

from components.monitoring.jmx_exporter import jmx_exporter_text
from components.platform.errors import PlatformError
from components.platform.local.metrics import EXPORTER_CONFIG, agent_options, with_exporter_config


def test_no_metrics_port_no_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MM2_JMX_AGENT", raising=False)
    assert agent_options("/run/w0", "127.0.0.1", None, 0, "mm2:workerGroups.mm2.metricsPort") == []
    assert with_exporter_config({"a": "b"}, None) == {"a": "b"}


def test_agent_binds_loopback_at_port_plus_index(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    jar = tmp_path / "agent.jar"
    jar.write_bytes(b"jar")
    monkeypatch.setenv("MM2_JMX_AGENT", str(jar))
    [option] = agent_options("/run/w1", "127.0.0.1", 19410, 1, "mm2:workerGroups.mm2.metricsPort")
    assert option == f"-javaagent:{jar}=127.0.0.1:19411:/run/w1/{EXPORTER_CONFIG}"


def test_missing_agent_names_the_key_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MM2_JMX_AGENT", "/nonexistent/agent.jar")
    with pytest.raises(PlatformError, match=r"mm2:clusters\.primary\.metricsPort.*bin/bootstrap"):
        agent_options("/run/b0", "127.0.0.1", 19400, 0, "mm2:clusters.primary.metricsPort")


@pulumi.runtime.test
def test_exporter_config_joins_the_process_files() -> Any:
    merged = with_exporter_config(pulumi.Output.from_input({"config/secrets.properties": "x=y"}), 19400)

    def check(files: dict[str, str]) -> None:
        assert files == {"config/secrets.properties": "x=y", EXPORTER_CONFIG: jmx_exporter_text()}

    return pulumi.Output.from_input(merged).apply(check)
