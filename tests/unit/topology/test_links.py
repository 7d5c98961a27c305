"""components/topology/links.py: the link a flow crosses, which of its clients cross it, the settings
derived from it (50ms / 200Mbit: BDP 1250000 bytes), and where they land in the source connector."""

from __future__ import annotations

import pytest

from components.topology import flow_connectors, parse_topology
from components.topology.link_preview import broker_lines
from components.topology.links import (
    RATE_UNITS,
    RTT_UNITS,
    Derived,
    bdp_bytes,
    crossing,
    derived_broker_settings,
    derived_link_settings,
    format_quantity,
    link_of,
    parse_quantity,
    with_link_broker_settings,
)
from components.topology.model import Link
from tests.unit.topology.helpers import BDP, dev_config, external_cluster, wan, wan_config

CONSUMER = (
    Derived(
        "source.consumer.receive.buffer.bytes",
        "2555904",
        f"2 x {BDP}, rounded up to a multiple of 65536",
    ),
    Derived(
        "source.consumer.fetch.max.bytes",
        "52428800",
        f"Kafka's default 52428800, already at least 2 x {BDP}",
    ),
    Derived(
        "source.consumer.max.partition.fetch.bytes",
        "2097152",
        f"the stack's tuned default 2097152, already at least {BDP}",
    ),
)
PRODUCER = (
    Derived(
        "producer.override.send.buffer.bytes",
        "2555904",
        f"2 x {BDP}, rounded up to a multiple of 65536",
    ),
    Derived(
        "producer.override.batch.size",
        "1048576",
        f"{BDP}, capped at 1048576: one batch must fit the brokers' message.max.bytes",
    ),
    Derived(
        "producer.override.linger.ms",
        "10",
        "a tenth of dc1<->dc2's rtt (50ms / 10 = 5 ms), raised to the stack's tuned default 10",
    ),
)


def test_the_bdp_of_50ms_at_200mbit() -> None:
    assert bdp_bytes(Link("dc1", "dc2", 50.0, 200e6, 0.0)) == 1_250_000
    # Rounded up, and exact for decimal inputs (0.1Mbit x 3ms = 37.5 bytes).
    assert bdp_bytes(Link("dc1", "dc2", 3.0, 100_000.0, 0.0)) == 38


def test_workers_beside_the_target_derive_the_consumer_settings() -> None:
    topology = wan("dc2")
    assert crossing(topology, topology.flows[0]) == (True, False)
    assert derived_link_settings(topology, topology.flows[0]) == CONSUMER


def test_workers_beside_the_source_derive_the_producer_settings() -> None:
    topology = wan("dc1")
    assert crossing(topology, topology.flows[0]) == (False, True)
    assert derived_link_settings(topology, topology.flows[0]) == PRODUCER


def test_workers_elsewhere_derive_both() -> None:
    topology = wan("dc3")
    assert crossing(topology, topology.flows[0]) == (True, True)
    assert derived_link_settings(topology, topology.flows[0]) == CONSUMER + PRODUCER


def test_a_link_declared_the_other_way_round_is_the_same_link() -> None:
    config = wan_config()
    config["links"] = {"dc2<->dc1": config["links"].pop("dc1<->dc2")}
    topology = parse_topology(config)
    link = link_of(topology, topology.flows[0])
    assert link is not None and link.name == "dc2<->dc1"
    assert [d.value for d in derived_link_settings(topology, topology.flows[0])] == [d.value for d in CONSUMER]


def test_no_link_when_one_datacenter_no_datacenter_or_none_declared() -> None:
    same = dev_config()  # primary and dr both in dc1
    undeclared = wan_config()
    del undeclared["links"]
    unlabelled = wan_config()
    del unlabelled["clusters"]["dr"]["datacenter"]
    del unlabelled["links"]
    for config in (same, undeclared, unlabelled):
        topology = parse_topology(config)
        assert link_of(topology, topology.flows[0]) is None
        assert derived_link_settings(topology, topology.flows[0]) == ()


def test_a_long_fat_link_raises_every_value_within_its_bounds() -> None:
    # 1Gbit x 100ms = 12500000 bytes of BDP.
    topology = wan("dc3", rtt="100ms", bandwidth="1Gbit")
    values = {d.key: d.value for d in derived_link_settings(topology, topology.flows[0])}
    assert values == {
        "source.consumer.receive.buffer.bytes": "25034752",  # 2 x BDP = 25000000, to 382 x 65536
        "source.consumer.fetch.max.bytes": "52428800",  # 2 x BDP is still under 50 MiB
        "source.consumer.max.partition.fetch.bytes": "12500000",
        "producer.override.send.buffer.bytes": "25034752",
        "producer.override.batch.size": "1048576",
        "producer.override.linger.ms": "10",
    }


def test_a_huge_bdp_is_counted_at_32_mib_and_linger_at_most_50_ms() -> None:
    # 10Gbit x 600ms = 750000000 bytes of BDP.
    topology = wan("dc3", rtt="600ms", bandwidth="10Gbit")
    derived = {d.key: d for d in derived_link_settings(topology, topology.flows[0])}
    assert derived["source.consumer.receive.buffer.bytes"].value == str(64 * 1024 * 1024)
    assert derived["source.consumer.fetch.max.bytes"].value == str(64 * 1024 * 1024)
    assert derived["source.consumer.max.partition.fetch.bytes"].value == str(32 * 1024 * 1024)
    assert "750000000 bytes, counted as 33554432" in derived["source.consumer.fetch.max.bytes"].reason
    assert derived["producer.override.linger.ms"].value == "50"
    assert derived["producer.override.linger.ms"].reason.endswith("(600ms / 10 = 60 ms), capped at 50")


def test_a_short_thin_link_keeps_the_defaults() -> None:
    # 10Mbit x 10ms = 12500 bytes: every value stays at its floor, and says so.
    topology = wan("dc3", rtt="10ms", bandwidth="10Mbit")
    derived = {d.key: d for d in derived_link_settings(topology, topology.flows[0])}
    assert {k: d.value for k, d in derived.items()} == {
        "source.consumer.receive.buffer.bytes": "65536",
        "source.consumer.fetch.max.bytes": "52428800",
        "source.consumer.max.partition.fetch.bytes": "2097152",
        "producer.override.send.buffer.bytes": "131072",
        "producer.override.batch.size": "262144",
        "producer.override.linger.ms": "10",
    }
    assert derived["producer.override.send.buffer.bytes"].reason == (
        "Kafka's default 131072, already at least 2 x BDP of dc1<->dc2 (10Mbit x 10ms = 12500 bytes)"
    )


def test_derived_settings_land_on_the_source_connector_over_the_tuning() -> None:
    topology = wan("dc3")
    connectors = flow_connectors(topology, topology.flows[0])
    source = connectors.source.config
    assert {d.key: source[d.key] for d in CONSUMER + PRODUCER} == {d.key: d.value for d in CONSUMER + PRODUCER}
    assert source["producer.override.compression.type"] == "lz4"  # the rest of the tuning stays
    for spec in (connectors.checkpoint, connectors.heartbeat):
        assert "producer.override.send.buffer.bytes" not in spec.config
        assert "source.consumer.receive.buffer.bytes" not in spec.config


def test_explicit_settings_win_over_derived_ones() -> None:
    config = wan_config("dc3")
    config["clusters"]["primary"]["client"] = {"consumer.receive.buffer.bytes": "-1"}
    config["clusters"]["dr"]["client"] = {"producer.send.buffer.bytes": "-1"}
    config["flows"]["primary->dr"]["settings"] = {"producer.override.batch.size": "524288"}
    config["clusters"]["primary"]["settings"] = {"source.consumer.max.partition.fetch.bytes": "4194304"}
    topology = parse_topology(config)
    source = flow_connectors(topology, topology.flows[0]).source.config
    assert source["source.consumer.receive.buffer.bytes"] == "-1"
    assert source["producer.override.send.buffer.bytes"] == "-1"
    assert source["producer.override.batch.size"] == "524288"
    assert source["source.consumer.max.partition.fetch.bytes"] == "4194304"
    # What nothing set explicitly is still derived.
    assert source["source.consumer.fetch.max.bytes"] == "52428800"


@pytest.mark.parametrize(
    ("text", "units", "amount"),
    [
        ("200Mbit", RATE_UNITS, 200e6),
        (" 1.5 Gbit ", RATE_UNITS, 1.5e9),
        ("0.1Mbit", RATE_UNITS, 100_000.0),
        ("50ms", RTT_UNITS, 50.0),
        ("0.25s", RTT_UNITS, 250.0),
        ("200MBit", RATE_UNITS, None),
        ("200", RATE_UNITS, None),
        ("-5ms", RTT_UNITS, None),
        ("1e3ms", RTT_UNITS, None),
    ],
)
def test_quantities(text: str, units: dict[str, int], amount: float | None) -> None:
    assert parse_quantity(text, units) == amount


def test_quantities_are_written_in_their_largest_whole_unit() -> None:
    assert format_quantity(200e6, RATE_UNITS) == "200Mbit"
    assert format_quantity(1.5e9, RATE_UNITS) == "1.5Gbit"
    assert format_quantity(800.0, RATE_UNITS) == "800bit"
    assert format_quantity(50.0, RTT_UNITS) == "50ms"
    assert format_quantity(1500.0, RTT_UNITS) == "1.5s"


def test_the_brokers_a_crossing_client_talks_to_get_socket_buffers_for_the_link() -> None:
    # Workers beside the target: the source consumer fetches across, so the source brokers send.
    beside_target = wan("dc2")
    [send] = derived_broker_settings(beside_target, "primary")
    assert (send.key, send.value) == ("socket.send.buffer.bytes", "2555904")
    assert send.reason == f"2 x {BDP}, rounded up to a multiple of 65536"
    assert derived_broker_settings(beside_target, "dr") == ()
    # Workers beside the source: the producer writes across, so the target brokers receive.
    [receive] = derived_broker_settings(wan("dc1"), "dr")
    assert (receive.key, receive.value) == ("socket.receive.buffer.bytes", "2555904")
    # A short link never goes below Kafka's default.
    [short] = derived_broker_settings(wan("dc2", rtt="1ms", bandwidth="10Mbit"), "primary")
    assert short.value == "131072" and short.reason.startswith("Kafka's default 102400")


def test_derived_broker_settings_go_under_an_explicit_broker_config_and_skip_external_clusters() -> None:
    config = wan_config()
    config["clusters"]["primary"]["brokerConfig"] = {"socket.send.buffer.bytes": "-1"}
    explicit = with_link_broker_settings(parse_topology(config))
    assert explicit.clusters["primary"].broker_config["socket.send.buffer.bytes"] == "-1"
    [line], [] = broker_lines(explicit, "primary")
    assert line.endswith("overridden by the stack's brokerConfig (-1)")
    derived = with_link_broker_settings(wan())
    assert derived.clusters["primary"].broker_config["socket.send.buffer.bytes"] == "2555904"
    config = wan_config()
    config["clusters"]["primary"] = external_cluster("dc1", "primary.example.com")
    external = with_link_broker_settings(parse_topology(config))
    assert dict(external.clusters["primary"].broker_config) == {}
    [], [warning] = broker_lines(external, "primary")
    assert warning.startswith("cluster primary (external): set socket.send.buffer.bytes to at least 2555904")
