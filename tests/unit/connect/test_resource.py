"""The Connector resource as the engine sees it, through Pulumi's mock monitor."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pulumi
import pytest
from pulumi.runtime import rpc

from components.connect.inputs import DEFAULT_TIMEOUT_S
from components.connect.provider import TYPE_TOKEN, Connector
from tests.unit.mocks import RecordingMonitor, mocked

from .fakes import URL

CONFIG = {"connector.class": "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"}


@pytest.fixture
def monitor() -> Iterator[RecordingMonitor]:
    # The SDK's own defaults for project and stack.
    with mocked(project="project", stack="stack") as recording:
        yield recording


def registered(monitor: RecordingMonitor) -> list[Any]:
    return [r for r in monitor.requests if r.type != "pulumi:pulumi:Stack"]


def test_connector_has_its_own_type_and_keeps_auth_secret(monitor: RecordingMonitor) -> None:
    @pulumi.runtime.test
    def program() -> pulumi.Output[str]:
        connector = Connector(
            "hb",
            {
                "connect_url": URL,
                "name": "mm2-primary-to-dr-heartbeat",
                "config": CONFIG,
                "auth": {"username": "admin", "password": "pw"},
            },
        )
        return connector.urn

    program()
    (request,) = registered(monitor)
    assert request.type == TYPE_TOKEN == "pulumi-python:dynamic/connect:Connector"
    assert list(request.additionalSecretOutputs) == ["auth", "access_check"]
    inputs = rpc.deserialize_properties(request.object)
    assert rpc.is_rpc_secret(inputs["auth"])
    assert rpc.unwrap_rpc_secret(inputs["auth"]) == {"username": "admin", "password": "pw"}
    assert inputs["name"] == "mm2-primary-to-dr-heartbeat"
    assert inputs["config"] == CONFIG
    assert inputs["timeout_seconds"] == DEFAULT_TIMEOUT_S
    assert "__provider" in inputs


def test_connector_accepts_keyword_inputs(monitor: RecordingMonitor) -> None:
    @pulumi.runtime.test
    def program() -> pulumi.Output[str]:
        return Connector("hb", connect_url=URL, connector_name="c1", config=CONFIG, timeout_seconds=30).urn

    program()
    (request,) = registered(monitor)
    inputs = rpc.deserialize_properties(request.object)
    assert (inputs["name"], inputs["timeout_seconds"]) == ("c1", 30)
    assert "auth" not in inputs


def test_connector_needs_its_inputs() -> None:
    with pytest.raises(TypeError, match="connect_url, connector_name and config"):
        Connector("hb", connect_url=URL)
