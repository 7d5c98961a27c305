"""components/replication_flow.py: what the preview says on a flow (its WAN link's derived settings,
a peakRate the link cannot carry, an RPO its signals cannot measure)."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from components.replication_flow import _preview_notes, flow_export
from components.topology import parse_topology
from components.topology.connectors import flow_connectors
from tests.unit.topology.helpers import wan_config


def recorder(lines: list[str]) -> Any:
    def record(message: str, resource: Any = None, **_: Any) -> None:
        assert resource is not None, "a preview note is shown on its resource"
        lines.append(message)

    return record


def logged(monkeypatch: pytest.MonkeyPatch, config: dict[str, Any]) -> dict[str, list[str]]:
    """The preview notes of the config's only flow, by log level."""
    out: dict[str, list[str]] = {"warn": [], "info": []}
    for level, lines in out.items():
        monkeypatch.setattr(pulumi.log, level, recorder(lines))
    topology = parse_topology(config)
    _preview_notes(object(), topology.flows[0], topology)  # type: ignore[arg-type]
    return out


def test_derived_settings_are_info_and_the_peak_rate_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    config = wan_config("dc2")
    config["flows"]["primary->dr"].update({"peakRate": "300Mbit", "rpo": "30s"})
    out = logged(monkeypatch, config)
    assert [line.split(" ")[3] for line in out["info"]] == [
        "source.consumer.receive.buffer.bytes",
        "source.consumer.fetch.max.bytes",
        "source.consumer.max.partition.fetch.bytes",
    ]
    assert all(line.startswith("ReplicationFlow flow primary->dr: ") for line in out["info"] + out["warn"])
    assert len(out["warn"]) == 2
    assert "rpo 30s is shorter than" in out["warn"][0]
    assert "peakRate 300Mbit exceeds link dc1<->dc2's bandwidth 200Mbit" in out["warn"][1]


def test_nothing_is_said_without_a_link(monkeypatch: pytest.MonkeyPatch) -> None:
    config = wan_config("dc2")
    del config["links"]
    config["flows"]["primary->dr"]["peakRate"] = "300Mbit"
    assert logged(monkeypatch, config) == {"warn": [], "info": []}


def test_the_flow_export_carries_the_link_its_records_cross() -> None:
    topology = parse_topology(wan_config("dc2"))
    flow = topology.flows[0]
    exported = flow_export(flow, topology, flow_connectors(topology, flow), {})
    assert exported["link"] == {"name": "dc1<->dc2", "rttMs": 50.0, "bandwidthBps": 200e6}
    unlinked = wan_config("dc2")
    del unlinked["links"]
    same_dc = parse_topology(unlinked)
    assert flow_export(same_dc.flows[0], same_dc, flow_connectors(same_dc, same_dc.flows[0]), {})["link"] is None
