"""`mm2:links`: the WAN between datacenters, as it is.

    mm2:links:
      dc1<->dc2: {rtt: 50ms, bandwidth: 200Mbit, loss: 0.01%}

A link joins two datacenters that clusters name (`mm2:clusters.<alias>.datacenter`); the flows
between them get client settings derived from it (components/topology/links.py). `rtt` and
`bandwidth` are required, `loss` defaults to 0%. One link per pair of datacenters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.topology.links import LOSS_UNITS, RATE_UNITS, RTT_UNITS
from components.topology.model import PAIR_SEPARATOR, Cluster, Link
from components.topology.parse.problems import Problems
from components.topology.parse.values import as_quantity, pair_entries, unknown_fields

LINK_FIELDS = ("rtt", "bandwidth", "loss")
RTT_FIX = 'Write a number above 0 and ms or s: the measured round trip between the datacenters, e.g. "50ms".'
# Shared with a flow's `peakRate`.
RATE_FIX = (
    f"Write a number above 0 and one of {', '.join(RATE_UNITS)} (per second, decimal, as tc counts them), "
    'e.g. "200Mbit"; a rate in bytes per second is 8 times as many bits ("5MB/s" is "40Mbit").'
)
LOSS_FIX = 'Write a percentage from 0% to below 100%: the share of packets lost, e.g. "0.01%".'


def parse_links(problems: Problems, raw: Any, clusters: Mapping[str, Cluster]) -> tuple[Link, ...]:
    """Every declared link; a problem for each key, value or datacenter no cluster names."""
    datacenters = {c.datacenter for c in clusters.values() if c.datacenter}
    entries = pair_entries(
        problems,
        raw,
        "links",
        lambda key, where: _ends(problems, key, where, datacenters),
        "one network runs between two datacenters.",
    )
    links = (_link(problems, ends, body, where) for where, ends, body in entries)
    return tuple(link for link in links if link is not None)


def _ends(problems: Problems, key: str, where: str, datacenters: set[str]) -> tuple[str, str] | None:
    parts = [part.strip() for part in key.split(PAIR_SEPARATOR)]
    if len(parts) != 2 or not all(parts):
        problems.add(
            where,
            f'"{key}" is not a pair of datacenters.',
            f'Name the two datacenters the link joins, e.g. "dc1{PAIR_SEPARATOR}dc2".',
        )
        return None
    if parts[0] == parts[1]:
        problems.add(
            where,
            f"a link joins two datacenters, this one {parts[0]} with itself.",
            "Remove it: clusters in one datacenter share its network; name two different datacenters.",
        )
        return None
    unknown = [p for p in parts if p not in datacenters]
    if unknown:
        problems.add(
            where,
            f"no cluster is in datacenter(s) {', '.join(unknown)}.",
            "Use datacenters named by mm2:clusters.<alias>.datacenter: "
            f"{', '.join(sorted(datacenters)) or '(none yet: set datacenter on the clusters)'}.",
        )
        return None
    return parts[0], parts[1]


def _link(problems: Problems, ends: tuple[str, str], body: Mapping[str, Any], where: str) -> Link | None:
    unknown_fields(problems, body, LINK_FIELDS, where)
    before = len(problems.found)
    rtt = _required(problems, body, f"{where}.rtt", RTT_UNITS, RTT_FIX)
    bandwidth = _required(problems, body, f"{where}.bandwidth", RATE_UNITS, RATE_FIX)
    loss = as_quantity(problems, body.get("loss", "0%"), f"{where}.loss", LOSS_UNITS, LOSS_FIX, zero=True)
    if loss is not None and loss >= 100:
        problems.add(f"{where}.loss", f"a loss of {body['loss']} lets no packet through.", LOSS_FIX)
    if len(problems.found) > before or rtt is None or bandwidth is None or loss is None:
        return None
    return Link(ends[0], ends[1], rtt, bandwidth, loss)


def _required(
    problems: Problems, body: Mapping[str, Any], key: str, units: Mapping[str, int], fix: str
) -> float | None:
    name = key.rsplit(".", 1)[-1]
    if body.get(name) is None:
        problems.add(key, f"the link has no {name}: the settings derived from it need it.", fix)
        return None
    return as_quantity(problems, body[name], key, units, fix)


def parse_peak_rate(problems: Problems, flow: Mapping[str, Any], where: str) -> tuple[float | None, bool]:
    """A flow's optional `peakRate` in bits per second (None when not declared); whether it was valid."""
    if "peakRate" not in flow:
        return None, True
    rate = as_quantity(problems, flow["peakRate"], f"{where}.peakRate", RATE_UNITS, RATE_FIX)
    return rate, rate is not None
