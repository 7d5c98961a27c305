"""The emulated network of a local stack, as data: its datacenters' namespaces and addresses and
the links between them. Laid out by components/topology/emulation.py, built by
components/platform/local/network.py. Pure: standard library only (the model refers to it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

INNER_VETH = "host0"  # the veth end inside each namespace


@dataclass(frozen=True)
class Datacenter:
    """One datacenter's namespace: `home` is where its processes listen; `outer_if` /
    `outer_address` the machine's end of its veth, `inner_address` the namespace's."""

    name: str
    namespace: str
    home: str
    outer_if: str
    outer_address: str
    inner_address: str


@dataclass(frozen=True)
class EmulatedLink:
    """A link between datacenters `a` and `b` (indexes into the plan's datacenters): the TAP
    device `tap` in each, at `a_address` and `b_address` (a /30), and the link's shape."""

    name: str
    a: int
    b: int
    tap: str
    a_address: str
    b_address: str
    rtt_ms: float
    bandwidth_bps: float
    loss_pct: float


@dataclass(frozen=True)
class NetworkPlan:
    block: str  # the /24, "198.18.7.0/24"
    datacenters: tuple[Datacenter, ...]
    links: tuple[EmulatedLink, ...]

    def namespace_of(self, host: str) -> str | None:
        """The namespace whose home address is `host`; None for loopback (the machine's own)."""
        return next((dc.namespace for dc in self.datacenters if dc.home == host), None)

    def to_inputs(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @staticmethod
    def from_inputs(raw: Mapping[str, Any]) -> NetworkPlan:
        return NetworkPlan(
            block=str(raw["block"]),
            datacenters=tuple(Datacenter(**dict(dc)) for dc in raw["datacenters"]),
            links=tuple(_link_from(dict(link)) for link in raw["links"]),
        )


def _link_from(raw: dict[str, Any]) -> EmulatedLink:
    # Pulumi carries numbers as floats: the indexes become ints again.
    return EmulatedLink(**{**raw, "a": int(raw["a"]), "b": int(raw["b"])})
