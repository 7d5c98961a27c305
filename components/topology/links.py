"""WAN links between datacenters (`mm2:links`) and the MM2 client settings derived from them.

A link is the network as it is between two datacenters: its round-trip time, its bandwidth and
its packet loss. A flow whose source and target clusters sit in the two datacenters of a declared
link moves its records over it, and the client that talks across it needs socket buffers and
fetches sized to the link's bandwidth-delay product (BDP: the bytes in flight when the link is
full, bandwidth x rtt). Which client crosses depends on where the flow's workers run, the
datacenter of their worker group's cluster:

- beside the target: the source consumer fetches across the link (`source.consumer.*`);
- beside the source: the Connect framework producer writes across it (`producer.override.*`);
- anywhere else (or unknown): both do.

The values are a starting point, sized from the declared link alone; the project benchmarks them
later. They go on the source connector after the tuned defaults (settings.TUNED_SOURCE_CLIENT)
and before every explicit level (cluster client overrides, `settings`), so explicit ones win.

Quantities are written as a number and a unit: rtt in `ms` or `s`; bandwidth and rates in `bit`,
`kbit`, `Mbit` or `Gbit` per second (decimal, as tc counts them); loss as a percentage (`0.01%`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from components.topology.model import Flow, Link, Platform, Topology, frozen_map
from components.topology.settings import TUNED_SOURCE_CLIENT

# Unit -> its size in the base unit (bits per second, milliseconds, percent).
RATE_UNITS: Mapping[str, int] = {"bit": 1, "kbit": 10**3, "Mbit": 10**6, "Gbit": 10**9}
RTT_UNITS: Mapping[str, int] = {"ms": 1, "s": 1000}
LOSS_UNITS: Mapping[str, int] = {"%": 1}
_QUANTITY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z%]+)\s*$")

KIB = 1024
MIB = 1024 * KIB
# Kafka's client defaults, which the derived values never go below.
KAFKA_RECEIVE_BUFFER = 64 * KIB  # consumer receive.buffer.bytes
KAFKA_FETCH_MAX = 50 * MIB  # consumer fetch.max.bytes
KAFKA_SEND_BUFFER = 128 * KIB  # producer send.buffer.bytes
# Socket buffers are set in whole multiples of this.
BUFFER_STEP = 64 * KIB
# The largest batch worth building: one batch must fit the brokers' message.max.bytes (default
# 1048588) and the producer's max.request.size (default 1048576).
MAX_BATCH = 1 * MIB
# The BDP the formulas count at most (10Gbit at 27ms, 1Gbit at 268ms). Beyond it client settings
# stop helping: the kernel clamps socket buffers to net.core.rmem_max / wmem_max (ESnet's tuning
# for 10G hosts goes to 64 MiB) and brokers cap a fetch response at their own fetch.max.bytes
# (55 MiB by default); a fuller link needs more connections (tasks), not bigger buffers.
MAX_COUNTED_BDP = 32 * MIB
# The framework producer's linger (ms): a tenth of the rtt, at most this.
MAX_LINGER_MS = 50

CONSUMER_PREFIX = "source.consumer."
PRODUCER_PREFIX = "producer.override."


@dataclass(frozen=True)
class Derived:
    """One connector-config key derived from a link, its value, and why (a human sentence)."""

    key: str
    value: str
    reason: str


def parse_quantity(value: object, units: Mapping[str, int]) -> float | None:
    """A number and one of `units` ("50ms", "200Mbit", "0.01%") in the base unit; None when
    `value` is not one (no unit, another unit, a negative number, not a string)."""
    if not isinstance(value, str):
        return None
    match = _QUANTITY.match(value)
    if match is None or match[2] not in units:
        return None
    return float(Decimal(match[1]) * units[match[2]])


def format_quantity(amount: float, units: Mapping[str, int]) -> str:
    """`amount` (in the base unit) in the largest of `units` it is at least one of: 2e8 bits per
    second -> "200Mbit", 50 ms -> "50ms", 1500 ms -> "1.5s"."""
    unit, size = min(units.items(), key=lambda item: item[1])
    for name, scale in units.items():
        if amount >= scale > size:
            unit, size = name, scale
    return f"{float(Decimal(repr(amount)) / size):.12g}{unit}"


def link_of(topology: Topology, flow: Flow) -> Link | None:
    """The declared link between the datacenters of the flow's source and target clusters; None
    when either has no datacenter, both are in the same one, or no link joins them."""
    source = topology.clusters[flow.source].datacenter
    target = topology.clusters[flow.target].datacenter
    if source is None or target is None or source == target:
        return None
    return next((link for link in topology.links if link.joins(source, target)), None)


def bdp_bytes(link: Link) -> int:
    """The link's bandwidth-delay product in bytes, rounded up: bandwidth / 8 x rtt."""
    return math.ceil(round(link.bandwidth_bps / 8 * link.rtt_ms / 1000, 6))


def crossing(topology: Topology, flow: Flow) -> tuple[bool, bool]:
    """(whether the source consumer, whether the framework producer crosses the flow's link):
    each does unless the workers run in the datacenter of the cluster it talks to."""
    workers = topology.clusters[topology.worker_groups[flow.worker_group].cluster].datacenter
    return (
        workers != topology.clusters[flow.source].datacenter,
        workers != topology.clusters[flow.target].datacenter,
    )


def derived_link_settings(topology: Topology, flow: Flow) -> tuple[Derived, ...]:
    """The source connector's client settings derived from the link the flow's records cross
    (empty when they cross none): the consumer's when it crosses, then the producer's."""
    link = link_of(topology, flow)
    if link is None:
        return ()
    consumer, producer = crossing(topology, flow)
    bdp = _Bdp(link)
    return (*(_consumer_settings(bdp) if consumer else ()), *(_producer_settings(bdp) if producer else ()))


@dataclass(frozen=True)
class _Bdp:
    link: Link

    @property
    def counted(self) -> int:
        return min(bdp_bytes(self.link), MAX_COUNTED_BDP)

    def text(self, times: int = 1) -> str:
        """As the reasons write it: 2 x BDP of dc1<->dc2 (200Mbit x 50ms = 1250000 bytes)."""
        full = bdp_bytes(self.link)
        capped = f", counted as {MAX_COUNTED_BDP}: socket and fetch limits bound more" if full > self.counted else ""
        rate, rtt = format_quantity(self.link.bandwidth_bps, RATE_UNITS), format_quantity(self.link.rtt_ms, RTT_UNITS)
        return f"{f'{times} x ' if times > 1 else ''}BDP of {self.link.name} ({rate} x {rtt} = {full} bytes{capped})"


def _at_least(key: str, floor: int, floor_text: str, wanted: int, wanted_text: str, step: int = 1) -> Derived:
    """`wanted`, or `floor` when that is more, rounded up to a multiple of `step`."""
    value = -(-max(floor, wanted) // step) * step
    if wanted <= floor:
        return Derived(key, str(value), f"{floor_text} {floor}, already at least {wanted_text}")
    rounded = f", rounded up to a multiple of {step}" if value != wanted else ""
    return Derived(key, str(value), f"{wanted_text}{rounded}")


def _consumer_settings(bdp: _Bdp) -> tuple[Derived, ...]:
    tuned_partition_fetch = int(TUNED_SOURCE_CLIENT[f"{CONSUMER_PREFIX}max.partition.fetch.bytes"])
    return (
        # The socket's receive window bounds what one fetch connection carries to window / rtt:
        # twice the BDP keeps the link full while the consumer is busy handing records on. Linux
        # clamps an explicit buffer to net.core.rmem_max (often 208 KiB) and stops autotuning that
        # socket, so hosts on a long link need rmem_max / wmem_max raised to match (a client
        # override of -1 on the cluster gives the socket back to autotuning).
        _at_least(
            f"{CONSUMER_PREFIX}receive.buffer.bytes",
            KAFKA_RECEIVE_BUFFER,
            "Kafka's default",
            2 * bdp.counted,
            bdp.text(2),
            BUFFER_STEP,
        ),
        # The consumer has one fetch in flight per broker, so a fetch response must hold a BDP for
        # the link to stay busy between round trips; twice it, as the socket above.
        _at_least(
            f"{CONSUMER_PREFIX}fetch.max.bytes", KAFKA_FETCH_MAX, "Kafka's default", 2 * bdp.counted, bdp.text(2)
        ),
        # A single busy partition can fill one fetch: let it bring a BDP per round trip.
        _at_least(
            f"{CONSUMER_PREFIX}max.partition.fetch.bytes",
            tuned_partition_fetch,
            "the stack's tuned default",
            bdp.counted,
            bdp.text(),
        ),
    )


def _producer_settings(bdp: _Bdp) -> tuple[Derived, ...]:
    tuned_batch = int(TUNED_SOURCE_CLIENT[f"{PRODUCER_PREFIX}batch.size"])
    batch = min(bdp.counted, MAX_BATCH)
    batch_text = bdp.text()
    if batch < bdp.counted:
        batch_text += f", capped at {MAX_BATCH}: one batch must fit the brokers' message.max.bytes"
    return (
        # The send window bounds what the producer has in flight to window / rtt, as for the consumer.
        _at_least(
            f"{PRODUCER_PREFIX}send.buffer.bytes",
            KAFKA_SEND_BUFFER,
            "Kafka's default",
            2 * bdp.counted,
            bdp.text(2),
            BUFFER_STEP,
        ),
        # Five requests in flight (the tuned default) of BDP-sized batches keep the link busy, and
        # bigger batches compress better; never smaller than the tuned default.
        _at_least(f"{PRODUCER_PREFIX}batch.size", tuned_batch, "the stack's tuned default", batch, batch_text),
        _linger(bdp.link),
    )


def _linger(link: Link) -> Derived:
    """Waiting a tenth of the rtt for a batch to fill costs little against the round trip a fuller
    batch saves: at least the tuned default (10 ms), at most MAX_LINGER_MS of added latency."""
    tuned = int(TUNED_SOURCE_CLIENT[f"{PRODUCER_PREFIX}linger.ms"])
    tenth = link.rtt_ms / 10
    value = max(tuned, min(MAX_LINGER_MS, int(tenth)))
    bound = f", raised to the stack's tuned default {tuned}" if tenth < tuned else ""
    bound += f", capped at {MAX_LINGER_MS}" if tenth > MAX_LINGER_MS else ""
    rtt = format_quantity(link.rtt_ms, RTT_UNITS)
    return Derived(
        f"{PRODUCER_PREFIX}linger.ms", str(value), f"a tenth of {link.name}'s rtt ({rtt} / 10 = {tenth:g} ms){bound}"
    )


# Kafka's broker default for socket.send.buffer.bytes and socket.receive.buffer.bytes.
KAFKA_BROKER_SOCKET_BUFFER = 100 * KIB
BROKER_SEND_BUFFER = "socket.send.buffer.bytes"
BROKER_RECEIVE_BUFFER = "socket.receive.buffer.bytes"


def derived_broker_settings(topology: Topology, alias: str) -> tuple[Derived, ...]:
    """The broker settings of cluster `alias` derived from the links its records cross to or from
    a flow's workers: its send buffer when a flow's source consumer fetches from it across a link
    (the brokers write the fetch responses into that window), its receive buffer when a flow's
    producer writes to it across one; for each, the largest link's. Measured on the emulated
    link (bench/wan): at 100 ms the source brokers' default 100 KiB send buffer held the
    connections back ("sndbuf_limited") while the consumers' derived windows stood open."""
    wanted: dict[str, tuple[int, _Bdp]] = {}
    for flow in topology.enabled_flows():
        link = link_of(topology, flow)
        if link is None:
            continue
        consumer, producer = crossing(topology, flow)
        bdp = _Bdp(link)
        for crosses, cluster, key in (
            (consumer, flow.source, BROKER_SEND_BUFFER),
            (producer, flow.target, BROKER_RECEIVE_BUFFER),
        ):
            if crosses and cluster == alias and (key not in wanted or wanted[key][0] < bdp.counted):
                wanted[key] = (bdp.counted, bdp)
    return tuple(
        _at_least(key, KAFKA_BROKER_SOCKET_BUFFER, "Kafka's default", 2 * bdp.counted, bdp.text(2), BUFFER_STEP)
        for key, (_, bdp) in sorted(wanted.items())
    )


def with_link_broker_settings(topology: Topology) -> Topology:
    """Every cluster the stack runs with its derived broker settings under its own brokerConfig
    (an explicit value wins); external clusters are left as they are (the preview names what
    their operators should set)."""
    clusters = {}
    for alias, cluster in topology.clusters.items():
        derived = {d.key: d.value for d in derived_broker_settings(topology, alias)}
        if derived and cluster.platform is not Platform.EXTERNAL:
            cluster = dataclasses.replace(cluster, broker_config=frozen_map({**derived, **cluster.broker_config}))
        clusters[alias] = cluster
    return dataclasses.replace(topology, clusters=clusters)
