"""components/topology/parse/links.py: `mm2:links`, the WAN between datacenters, and a flow's `peakRate`."""

from __future__ import annotations

from typing import Any

import pytest

from components.topology import parse_topology
from components.topology.model import Link
from tests.unit.topology.helpers import FLOW, dev_config, problem_at, problems, wan_config

LINK = "mm2:links.dc1<->dc2"


def link_config(**link: Any) -> dict[str, Any]:
    """The dev topology with dr in dc2 and one link dc1<->dc2 with the given fields only."""
    config = wan_config()
    config["links"] = {"dc1<->dc2": link}
    return config


def test_a_link_is_read_in_base_units() -> None:
    topology = parse_topology(link_config(rtt="50ms", bandwidth="200Mbit", loss="0.01%"))
    assert topology.links == (Link("dc1", "dc2", 50.0, 200_000_000.0, 0.01),)
    assert topology.links[0].name == "dc1<->dc2"


@pytest.mark.parametrize(
    ("rtt", "bandwidth", "expected"),
    [
        ("0.2s", "1.5Gbit", (200.0, 1_500_000_000.0)),
        ("1ms", "800kbit", (1.0, 800_000.0)),
        ("12.5ms", "64000bit", (12.5, 64_000.0)),
    ],
)
def test_every_unit_of_the_grammar(rtt: str, bandwidth: str, expected: tuple[float, float]) -> None:
    (link,) = parse_topology(link_config(rtt=rtt, bandwidth=bandwidth)).links
    assert (link.rtt_ms, link.bandwidth_bps) == expected


def test_loss_defaults_to_zero_and_may_be_zero() -> None:
    assert parse_topology(link_config(rtt="50ms", bandwidth="200Mbit")).links[0].loss_pct == 0.0
    assert parse_topology(link_config(rtt="50ms", bandwidth="200Mbit", loss="0%")).links[0].loss_pct == 0.0


def test_no_links_is_an_empty_tuple() -> None:
    assert parse_topology(dev_config()).links == ()


@pytest.mark.parametrize("key", ["dc1-dc2", "dc1<->", "<->dc2", "dc1<->dc2<->dc3"])
def test_a_key_that_is_not_a_pair_of_datacenters(key: str) -> None:
    config = link_config()
    config["links"] = {key: {"rtt": "50ms", "bandwidth": "200Mbit"}}
    problem = problem_at(config, f"mm2:links.{key}")
    assert "not a pair of datacenters" in problem.message and '"dc1<->dc2"' in problem.fix


def test_a_datacenter_no_cluster_names() -> None:
    config = link_config()
    config["links"] = {"dc1<->dc9": {"rtt": "50ms", "bandwidth": "200Mbit"}}
    problem = problem_at(config, "mm2:links.dc1<->dc9")
    assert "no cluster is in datacenter(s) dc9" in problem.message
    assert "mm2:clusters.<alias>.datacenter: dc1, dc2" in problem.fix


def test_a_self_link() -> None:
    config = link_config()
    config["links"] = {"dc1<->dc1": {"rtt": "50ms", "bandwidth": "200Mbit"}}
    problem = problem_at(config, "mm2:links.dc1<->dc1")
    assert "dc1 with itself" in problem.message and "two different datacenters" in problem.fix


def test_two_links_for_one_pair() -> None:
    config = link_config(rtt="50ms", bandwidth="200Mbit")
    config["links"]["dc2<->dc1"] = {"rtt": "60ms", "bandwidth": "100Mbit"}
    problem = problem_at(config, "mm2:links.dc2<->dc1")
    assert "dc2 and dc1 are already declared as dc1<->dc2: one network runs" in problem.message
    assert "Keep one of mm2:links.dc1<->dc2 and mm2:links.dc2<->dc1" in problem.fix


@pytest.mark.parametrize("rtt", ["50", 50, "0ms", "-5ms", "50us", "fast", "5 0ms"])
def test_rtt_must_be_a_positive_duration_in_ms_or_s(rtt: Any) -> None:
    problem = problem_at(link_config(rtt=rtt, bandwidth="200Mbit"), f"{LINK}.rtt")
    assert f"expected a positive quantity with a unit (ms, s), got {rtt!r}" in problem.message
    assert "ms or s" in problem.fix and '"50ms"' in problem.fix


@pytest.mark.parametrize("bandwidth", ["200", "200Mbps", "200mbit", "25MB/s", "0Mbit", "1Tbit", 200])
def test_bandwidth_must_be_a_positive_rate_in_bits(bandwidth: Any) -> None:
    problem = problem_at(link_config(rtt="50ms", bandwidth=bandwidth), f"{LINK}.bandwidth")
    assert "expected a positive quantity with a unit (bit, kbit, Mbit, Gbit)" in problem.message
    assert "bit, kbit, Mbit, Gbit (per second, decimal, as tc counts them)" in problem.fix
    assert '"5MB/s" is "40Mbit"' in problem.fix


@pytest.mark.parametrize("loss", ["0.01", 0, "-1%", "lots"])
def test_loss_must_be_a_percentage(loss: Any) -> None:
    problem = problem_at(link_config(rtt="50ms", bandwidth="200Mbit", loss=loss), f"{LINK}.loss")
    assert f"expected a quantity with a unit (%), got {loss!r}" in problem.message
    assert 'e.g. "0.01%"' in problem.fix


@pytest.mark.parametrize("loss", ["100%", "150%"])
def test_loss_of_all_packets(loss: str) -> None:
    problem = problem_at(link_config(rtt="50ms", bandwidth="200Mbit", loss=loss), f"{LINK}.loss")
    assert f"a loss of {loss} lets no packet through" in problem.message
    assert "below 100%" in problem.fix


@pytest.mark.parametrize("missing", ["rtt", "bandwidth"])
def test_rtt_and_bandwidth_are_required(missing: str) -> None:
    fields = {"rtt": "50ms", "bandwidth": "200Mbit"}
    del fields[missing]
    found = [p for p in problems(link_config(**fields)) if p.key == f"{LINK}.{missing}"]
    assert len(found) == 1, found
    assert f"the link has no {missing}" in found[0].message
    assert ("ms or s" if missing == "rtt" else "Mbit") in found[0].fix


def test_unknown_fields_are_named_with_a_suggestion() -> None:
    problem = problem_at(link_config(rtt="50ms", bandwidth="200Mbit", latency="5ms"), f"{LINK}.latency")
    assert 'unknown field "latency"' in problem.message and "Known fields: rtt, bandwidth, loss" in problem.fix


def test_a_link_that_is_not_a_map() -> None:
    config = link_config()
    config["links"] = {"dc1<->dc2": "50ms"}
    assert "expected a map" in problem_at(config, LINK).message


def test_links_is_a_known_top_level_key() -> None:
    config = link_config(rtt="50ms", bandwidth="200Mbit")
    config["link"] = config.pop("links")
    problem = problem_at(config, "mm2:link")
    assert 'Did you mean "links"' in problem.fix


def test_peak_rate_is_read_in_bits_per_second() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["peakRate"] = "40Mbit"
    assert parse_topology(config).flows[0].peak_rate_bps == 40_000_000.0
    assert parse_topology(dev_config()).flows[0].peak_rate_bps is None


@pytest.mark.parametrize("rate", ["5MB/s", "40", "0Mbit", "40 Mbps"])
def test_peak_rate_shares_the_bandwidth_grammar(rate: str) -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["peakRate"] = rate
    problem = problem_at(config, f"{FLOW}.peakRate")
    assert f"got {rate!r}" in problem.message
    assert '"5MB/s" is "40Mbit"' in problem.fix
