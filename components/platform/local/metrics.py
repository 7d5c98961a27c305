"""The Prometheus JMX exporter agent on local brokers and workers (opt-in: `metricsPort`).

Process i of a cluster or worker group serves /metrics on <host>:<metricsPort + i> (its cluster's
or group's host, components/topology/emulation.py), with the
shared exporter rules (`components/monitoring/jmx_exporter.py`) in its run directory. The agent
jar is the one bin/bootstrap resolves from Maven Central (MM2_JMX_AGENT in .mm2/env).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pulumi

from components.monitoring.jmx_exporter import jmx_exporter_text
from components.platform.errors import PlatformError
from components.platform.local.layout import CONFIG_DIR

EXPORTER_CONFIG = f"{CONFIG_DIR}/jmx-exporter.yaml"
AGENT_ENV = "MM2_JMX_AGENT"


def agent_options(run_dir: str, host: str, metrics_port: int | None, index: int, config_key: str) -> list[str]:
    """The `-javaagent` option of process `index`, or nothing when metrics are off."""
    if metrics_port is None:
        return []
    jar = os.environ.get(AGENT_ENV, "")
    if not jar or not Path(jar).is_file():
        raise PlatformError(
            f"{config_key} is set, but the Prometheus JMX exporter agent is missing ({AGENT_ENV}={jar or '(unset)'}). "
            "Next step: run bin/bootstrap (it resolves io.prometheus.jmx:jmx_prometheus_javaagent) and "
            "`source .mm2/env`, or remove the metricsPort."
        )
    return [f"-javaagent:{jar}={host}:{metrics_port + index}:{run_dir}/{EXPORTER_CONFIG}"]


def with_exporter_config(
    files: pulumi.Input[Mapping[str, str]] | None, metrics_port: int | None
) -> pulumi.Input[Mapping[str, str]] | None:
    """The process's files plus the exporter's config when metrics are on."""
    if metrics_port is None:
        return files
    extra = {EXPORTER_CONFIG: jmx_exporter_text()}
    return pulumi.Output.from_input(files or {}).apply(lambda given: {**given, **extra})
