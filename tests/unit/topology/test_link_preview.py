"""components/topology/link_preview.py: the preview's lines about the links flows cross."""

from __future__ import annotations

from components.topology import parse_topology
from components.topology.link_preview import derived_lines, link_lines, peak_rate_warning
from tests.unit.topology.helpers import BDP, wan, wan_config

FLOW = "flow primary->dr"


def test_one_line_per_derived_setting_with_its_reason() -> None:
    assert link_lines(wan("dc2")) == [
        f"{FLOW}: source.consumer.receive.buffer.bytes 2555904 = 2 x {BDP}, rounded up to a multiple of 65536",
        f"{FLOW}: source.consumer.fetch.max.bytes 52428800 = Kafka's default 52428800, already at least 2 x {BDP}",
        f"{FLOW}: source.consumer.max.partition.fetch.bytes 2097152 = the stack's tuned default 2097152, "
        f"already at least {BDP}",
    ]


def test_a_setting_the_stack_sets_explicitly_is_named_with_the_value_it_gets() -> None:
    config = wan_config("dc1")
    config["flows"]["primary->dr"]["settings"] = {"producer.override.linger.ms": "25"}
    config["clusters"]["dr"]["client"] = {"producer.send.buffer.bytes": "-1"}
    lines = {line.split(" ")[2]: line for line in link_lines(parse_topology(config))}
    assert lines["producer.override.linger.ms"].endswith("; overridden by the stack's settings (25)")
    assert lines["producer.override.send.buffer.bytes"] == (
        f"{FLOW}: producer.override.send.buffer.bytes 2555904 = 2 x {BDP}, rounded up to a multiple of 65536; "
        "overridden by the stack's settings (-1)"
    )
    assert "overridden" not in lines["producer.override.batch.size"]


def test_a_peak_rate_above_the_bandwidth_is_a_warning() -> None:
    config = wan_config("dc2")
    config["flows"]["primary->dr"]["peakRate"] = "300Mbit"
    topology = parse_topology(config)
    warning = (
        f"{FLOW}: peakRate 300Mbit exceeds link dc1<->dc2's bandwidth 200Mbit: lag will grow without bound while "
        "it lasts."
    )
    assert peak_rate_warning(topology, topology.flows[0]) == warning
    assert link_lines(topology)[-1] == warning
    for fits in ("200Mbit", "40Mbit"):
        config["flows"]["primary->dr"]["peakRate"] = fits
        topology = parse_topology(config)
        assert peak_rate_warning(topology, topology.flows[0]) is None


def test_no_lines_without_a_link_or_for_a_disabled_flow() -> None:
    config = wan_config("dc2")
    config["flows"]["primary->dr"]["peakRate"] = "1Gbit"
    config["flows"]["primary->dr"]["enabled"] = False
    assert link_lines(parse_topology(config)) == []
    del config["links"]
    config["flows"]["primary->dr"]["enabled"] = True
    topology = parse_topology(config)
    assert link_lines(topology) == []
    assert derived_lines(topology, topology.flows[0]) == ()
