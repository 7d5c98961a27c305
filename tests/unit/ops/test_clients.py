"""Kafka and Connect clients built from the stack outputs: security settings merged, REST verified."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from components.ops import clients
from components.outputs.contract import ConnectGroupExport, StackExports
from tests.unit.ops.helpers import outputs


def test_kafka_config_merges_the_cluster_client_settings() -> None:
    sasl = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "u"}
    conf = clients.kafka_config(outputs(client=sasl), "primary", **{"group.id": "g"})
    assert conf == {"bootstrap.servers": "127.0.0.1:19092", **sasl, "group.id": "g"}
    assert clients.kafka_config(outputs(), "dr") == {
        "bootstrap.servers": "127.0.0.1:19192",
        "security.protocol": "PLAINTEXT",
    }


def test_connect_client_verifies_https_against_the_stack_ca(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    class Spy:
        def __init__(self, url: str, **kwargs: Any) -> None:
            seen.update(url=url, **kwargs)

    import components.connect.client as client_module

    monkeypatch.setattr(client_module, "ConnectClient", Spy)
    group = ConnectGroupExport("mm2", "https://127.0.0.1:18083", ca_pem="PEM")
    out = StackExports(clusters={}, connect={"mm2": group}, flows={})
    clients.connect_client(out, "mm2")
    assert seen["ca_pem"] == "PEM"
    out = StackExports(clusters={}, connect={"mm2": replace(group, ca_pem=None)}, flows={})
    clients.connect_client(out, "mm2")
    assert seen["ca_pem"] is None
