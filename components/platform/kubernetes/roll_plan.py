"""When a KRaft cluster's broker may restart in a roll, and in what order. Pure: the roll
(components/platform/kubernetes/broker_roll.py) reads the pods, the brokers' exporters and the
partitions, and asks these functions.

A roll restarts one broker at a time, the pods not yet on the StatefulSet's new revision, highest
ordinal first and the active controller last (it would otherwise hand leadership over more than
once). It does not start while a broker is down or a partition is under-replicated. Before each
restart:
- every other broker is up and RUNNING;
- no partition would fall below its `min.insync.replicas`: none of which this broker is in the
  ISR has only `min.insync.replicas` in sync (a single-replica partition is offline while its
  broker restarts whatever the roll does: said, not waited for);
- a majority of the quorum's voters stays caught up without it (each broker is a voter).
After it: the new pod RUNNING, no partition under-replicated, the broker caught up in the quorum.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from components.monitoring.jmx_exporter import ACTIVE_CONTROLLERS, BROKER_STATE, METADATA_LAG_MS

# A voter whose last applied metadata record is older than this is not caught up: the active
# controller appends a record at least every 500 ms (metadata.max.idle.interval.ms).
QUORUM_LAG_MS = 5_000.0
SHOWN = 5  # partitions named in one message


@dataclass(frozen=True)
class BrokerPod:
    """One broker's pod as the API server shows it."""

    ordinal: int
    name: str
    uid: str
    ready: bool
    current: bool  # runs the StatefulSet's update revision
    node: str = ""
    why: str = ""  # why it is not ready, when it is not
    stuck: str = ""  # a problem no waiting fixes (scheduling.py: unplaced, image, init container)


@dataclass(frozen=True)
class BrokerReading:
    """What a broker's exporter says; None where it did not answer or lacks the metric."""

    state: int | None = None
    active_controller: bool = False
    metadata_lag_ms: float | None = None


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})? (\S+)$")


def reading_of(text: str) -> BrokerReading:
    """A broker's reading from its exporter's answer (Prometheus text format)."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match and match.group(1) in (BROKER_STATE, ACTIVE_CONTROLLERS, METADATA_LAG_MS):
            try:
                values[match.group(1)] = float(match.group(2))
            except ValueError:
                continue
    state = values.get(BROKER_STATE)
    return BrokerReading(
        state=None if state is None else int(state),
        active_controller=values.get(ACTIVE_CONTROLLERS, 0.0) >= 1.0,
        metadata_lag_ms=values.get(METADATA_LAG_MS),
    )


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    min_isr: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition} (replicas {_ids(self.replicas)}, in sync {_ids(self.isr) or 'none'})"


def _ids(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in ids)


def roll_order(pods: Sequence[BrokerPod], readings: Mapping[int, BrokerReading]) -> list[int]:
    """The ordinals to restart: those not on the new revision, highest first, the active
    controller last."""
    stale = sorted((p.ordinal for p in pods if not p.current), reverse=True)
    active = [o for o in stale if readings.get(o, BrokerReading()).active_controller]
    return [o for o in stale if o not in active] + active


def down_brokers(pods: Sequence[BrokerPod], replicas: int, but: int | None = None) -> list[str]:
    """Each broker (but `but`) whose pod is missing or not ready, as a phrase."""
    by_ordinal = {p.ordinal: p for p in pods}
    out = []
    for ordinal in range(replicas):
        pod = by_ordinal.get(ordinal)
        if ordinal == but:
            continue
        if pod is None:
            out.append(f"broker {ordinal} has no pod")
        elif not pod.ready:
            where = f" on node {pod.node}" if pod.node else ""
            out.append(f"broker {ordinal} (pod {pod.name}{where}) is not ready" + (f": {pod.why}" if pod.why else ""))
    return out


def under_replicated(partitions: Iterable[PartitionState]) -> list[PartitionState]:
    return [p for p in partitions if len(p.isr) < len(p.replicas)]


def would_fall_below(ordinal: int, partitions: Iterable[PartitionState]) -> list[PartitionState]:
    """Partitions that restarting broker `ordinal` now would leave below min.insync.replicas."""
    return [p for p in partitions if ordinal in p.isr and len(p.replicas) > 1 and len(p.isr) <= p.min_isr]


def single_replica(ordinal: int, partitions: Iterable[PartitionState]) -> list[PartitionState]:
    """Partitions whose only replica is broker `ordinal`: offline while it restarts."""
    return [p for p in partitions if p.replicas == (ordinal,)]


def caught_up(reading: BrokerReading | None) -> bool:
    return reading is not None and reading.metadata_lag_ms is not None and reading.metadata_lag_ms < QUORUM_LAG_MS


def quorum_short(ordinal: int, voters: int, readings: Mapping[int, BrokerReading]) -> str | None:
    """Why the quorum would lose its majority without voter `ordinal`, None when it would not.
    A cluster of one voter has no majority to keep: its restart is its outage."""
    if voters < 2:
        return None
    majority = voters // 2 + 1
    others = [o for o in range(voters) if o != ordinal and caught_up(readings.get(o))]
    if len(others) >= majority:
        return None
    behind = [str(o) for o in range(voters) if o != ordinal and not caught_up(readings.get(o))]
    return (
        f"only {len(others)} of the other voters are caught up with the metadata log (broker(s) {', '.join(behind)} "
        f"behind by {QUORUM_LAG_MS / 1000:.0f}s or more, or not answering), and the quorum needs {majority} of {voters}"
    )


def named(partitions: Sequence[PartitionState]) -> str:
    """Up to SHOWN partitions, and how many more."""
    shown = ", ".join(str(p) for p in partitions[:SHOWN])
    more = len(partitions) - SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def preflight(pods: Sequence[BrokerPod], replicas: int, partitions: Sequence[PartitionState]) -> list[str]:
    """Why a roll may not start now (empty: it may)."""
    problems = down_brokers(pods, replicas)
    short = under_replicated(partitions)
    if short:
        problems.append(f"{len(short)} partition(s) under-replicated: {named(short)}")
    return problems


def step_blockers(
    ordinal: int,
    pods: Sequence[BrokerPod],
    replicas: int,
    partitions: Sequence[PartitionState],
    readings: Mapping[int, BrokerReading],
) -> list[str]:
    """What broker `ordinal`'s restart waits for (empty: it may restart now)."""
    problems = down_brokers(pods, replicas, but=ordinal)
    falling = would_fall_below(ordinal, partitions)
    if falling:
        problems.append(
            f"{len(falling)} partition(s) would fall below min.insync.replicas without it: {named(falling)}"
        )
    short = quorum_short(ordinal, replicas, readings)
    if short:
        problems.append(short)
    return problems


def back_blockers(
    pod: BrokerPod | None,
    old_uid: str,
    reading: BrokerReading | None,
    partitions: Sequence[PartitionState],
    in_sync: bool = True,
) -> list[str]:
    """What a restarted broker's turn still waits for (empty: it is back, the next may go).
    Not `in_sync` (the override): its new pod RUNNING is enough."""
    if pod is None or pod.uid == old_uid:
        return ["its new pod to be created"]
    if not pod.current:
        return [f"pod {pod.name} to run the new revision"]
    if not pod.ready:
        return [f"pod {pod.name} to be ready (broker RUNNING)" + (f": {pod.why}" if pod.why else "")]
    if not in_sync:
        return []
    problems = []
    short = under_replicated(partitions)
    if short:
        problems.append(f"{len(short)} partition(s) to be in sync again: {named(short)}")
    if not caught_up(reading):
        problems.append(f"broker {pod.ordinal} to catch up with the metadata log")
    return problems


def refusal_text(alias: str, key: str, problems: Sequence[str], touched: Sequence[int]) -> str:
    """The error of a roll that may not start, or may not go on."""
    state = (
        f"the roll of {alias}'s brokers stopped after restarting broker(s) {_ids(touched)}"
        if touched
        else f"the roll of {alias}'s brokers did not start (no broker was restarted)"
    )
    return (
        f"{state}: " + "; ".join(problems) + ". A roll restarts one broker at a time, and only when every other "
        "broker is up and in sync, so that no partition falls below min.insync.replicas and the KRaft quorum keeps "
        f"its majority. Fix: bring the cluster back to health (`bin/status` names a down broker and its node) and "
        f"run `pulumi up` again: the roll goes on from where it stopped. In an emergency only, {key}: true rolls "
        "anyway, accepting unavailable partitions; remove it after that up."
    )
