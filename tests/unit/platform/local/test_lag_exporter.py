"""The local lag exporter (components/platform/local/lag_exporter.py): the address its plan asks
for under Pulumi's mocks, and a lagPort another program holds refused before anything starts."""

from __future__ import annotations

import socket
import sys
import uuid
from pathlib import Path
from typing import Any

import pulumi
import pytest

from components.platform.local import process as proc
from components.platform.local.lag_exporter import LagExporterProvider, deploy_local_lag_exporter
from components.platform.local.layout import LocalPlatform
from components.rpc_values import plain
from components.topology import Topology, parse_topology
from tests.unit.mocks import RecordingMonitor
from tests.unit.topology.helpers import dev_config

from ..mocks import Parent, settle, urn_of

ROOT = Path(__file__).resolve().parents[4]


def topology(lag_port: int | None) -> Topology:
    config = dev_config()
    if lag_port is not None:
        config["workerGroups"]["mm2"]["lagPort"] = lag_port
    return parse_topology(config)


def deployed_listen(monitor: RecordingMonitor, lag_port: int | None) -> pulumi.Output[Any]:
    """The `listen` of the plan the exporter of group mm2 is handed (its `plan` input)."""
    local = LocalPlatform(stack="unit", run_root="/tmp/mm2-unit/run/unit", kafka_libs="/nonexistent")
    parent = Parent("mm2:index:ConnectWorkerGroup", "connect-mm2")
    clients = {alias: {"bootstrap.servers": f"127.0.0.1:{port}"} for alias, port in (("primary", 19092), ("dr", 19192))}
    exporter = deploy_local_lag_exporter(parent, "connect-mm2", topology(lag_port), "mm2", local, clients, [])

    def listen(_: Any) -> str:
        state = monitor.resources[urn_of(monitor, "connect-mm2-lag-exporter")].state
        return str(plain(state["plan"])["listen"])

    return settle([], [exporter]).apply(listen)


@pulumi.runtime.test
def test_a_lag_port_is_the_plans_listen_address(monitor: RecordingMonitor) -> Any:
    def check(listen: str) -> None:
        assert listen == "127.0.0.1:19420"

    return deployed_listen(monitor, 19420).apply(check)


@pulumi.runtime.test
def test_without_a_lag_port_the_exporter_takes_any_free_port(monitor: RecordingMonitor) -> Any:
    def check(listen: str) -> None:
        assert listen == "127.0.0.1:0"

    return deployed_listen(monitor, None).apply(check)


def test_a_lag_port_another_program_holds_fails_naming_the_key(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        marker = f"unit-{uuid.uuid4().hex[:8]}/lag-exporter-mm2"
        props = {
            "component": "ConnectWorkerGroup 'mm2', lag exporter",
            "marker": marker,
            "run_dir": str(tmp_path / "run" / "lag-exporter-mm2"),
            "plan": {"group": "mm2", "listen": f"127.0.0.1:{port}"},
            "auth": None,
            "python": sys.executable,
            "project_dir": str(ROOT),
        }
        with pytest.raises(proc.ProcessError) as failed:
            LagExporterProvider().create(props)
    text = str(failed.value)
    assert "ConnectWorkerGroup 'mm2', lag exporter" in text and f"{port}" in text and "already in use" in text
    assert "`mm2:workerGroups.mm2.lagPort`" in text and "Fix:" in text
    assert proc.find_pids(marker) == [], "nothing may be started on a port that is taken"
