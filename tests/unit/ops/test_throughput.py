"""components/ops/throughput.py: a flow's copy rate is MM2's byte-rate summed over its partitions
and workers, only its own beans count, and it is read against the flow's link."""

from __future__ import annotations

import dataclasses

import pytest

from components.monitoring.jmx_exporter import BYTE_RATE
from components.ops.throughput import Throughput, bits_text, flow_throughput, throughput_line
from components.outputs.contract import LinkExport
from tests.unit.ops.helpers import outputs

LINK = LinkExport("dc1<->dc2", 20.0, 4e6)
FLOW = dataclasses.replace(outputs().flows["primary->dr"], link=LINK)


def rate(value: float, partition: int = 0, source: str = "primary", target: str = "dr", topic: str = "") -> str:
    topic = topic or FLOW.topics["orders"]
    labels = f'partition="{partition}",source="{source}",target="{target}",topic="{topic}"'
    return f"{BYTE_RATE}{{{labels}}} {value}"


def test_the_rate_sums_partitions_and_workers_of_the_flow_only() -> None:
    worker0 = "\n".join(["# HELP x", rate(100_000.0, 0), rate(50_000.0, 1), rate(9e9, 0, source="other", target="x")])
    worker1 = "\n".join([rate(100_000.0, 2), "kafka_connect_mirror_source_connector_byte_count{} 7"])
    view = flow_throughput(FLOW, [worker0, worker1, None])
    assert view.bytes_per_s == pytest.approx(250_000.0)
    assert view.link_share == pytest.approx(250_000.0 * 8 / 4e6)  # 0.5
    assert not view.link_bound


def test_beans_without_a_source_tag_count_by_remote_topic() -> None:
    text = "\n".join([rate(10.0, source=""), rate(99.0, source="", topic="elsewhere.orders")])
    assert flow_throughput(FLOW, [text]).bytes_per_s == pytest.approx(10.0)


def test_unmeasured_says_why() -> None:
    assert flow_throughput(FLOW, [None, None]).why == "no worker's metrics answered"
    assert "no byte-rate for it yet" in flow_throughput(FLOW, ["up 1"]).why
    assert throughput_line(flow_throughput(FLOW, [None])) == "  throughput - (no worker's metrics answered)"
    assert throughput_line(None) is None


def test_near_the_links_bandwidth_the_link_binds() -> None:
    view = flow_throughput(FLOW, [rate(0.7 * 4e6 / 8)])
    assert view.link_bound
    line = throughput_line(view) or ""
    assert line.startswith("  throughput 2.8 Mbit/s over the workers' last minute (MM2 byte-rate)")
    assert line.endswith(", 70% of the link dc1<->dc2 (4 Mbit/s, rtt 20 ms)")
    assert not Throughput(1e9).link_bound  # without a link nothing binds


@pytest.mark.parametrize(
    ("bytes_per_s", "text"), [(0.5, "4 bit/s"), (1250.0, "10 kbit/s"), (452_500.0, "3.62 Mbit/s"), (2.5e8, "2 Gbit/s")]
)
def test_rates_read_in_bits_per_second(bytes_per_s: float, text: str) -> None:
    assert bits_text(bytes_per_s) == text
