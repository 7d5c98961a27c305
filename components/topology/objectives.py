"""A flow's declared objectives: its RPO and its outage budget, as durations.

The RPO is the longest replication delay the flow accepts; the outage budget is the longest
outage (Connect down, flow paused, target unreachable) it must survive without losing records,
which the source topics' retention has to outlast (the `retention-outlasts-outage-budget`
policy checks that). Later consumers (a lag exporter, alert rules) read both in seconds from the
flow's stack outputs.

Durations are written as a whole number and one unit: `30s`, `5m`, `2h`, `7d`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from components.topology.model import Flow, Pair, Platform, Topology

DEFAULT_RPO = "5m"
DEFAULT_OUTAGE_BUDGET = "1d"

# MM2's defaults for the intervals that bound what the flow's own signals can measure.
CHECKPOINT_INTERVAL_KEY = "emit.checkpoints.interval.seconds"
HEARTBEAT_INTERVAL_KEY = "emit.heartbeats.interval.seconds"
MM2_INTERVAL_DEFAULTS = {CHECKPOINT_INTERVAL_KEY: 60, HEARTBEAT_INTERVAL_KEY: 1}

# How often Connect commits a source task's position (`offset.flush.interval.ms`): the workers
# the stack runs (components/topology/runtime_config.py), and Connect's default for a group it
# does not run. A switchover's drain that the records cannot prove waits for that commit.
OFFSET_FLUSH_MS = 5000
CONNECT_DEFAULT_OFFSET_FLUSH_MS = 60000

# Kafka's `log.retention.hours` default (168): what a topic keeps without any retention setting.
KAFKA_DEFAULT_RETENTION_MS = 7 * 86400 * 1000
# Broker keys for the default retention, most precise first: Kafka reads the first one set.
_BROKER_RETENTION_KEYS = (
    ("log.retention.ms", 1),
    ("log.retention.minutes", 60_000),
    ("log.retention.hours", 3_600_000),
)

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"^\s*(\d+)\s*([smhd])\s*$")


def parse_duration(value: object) -> int | None:
    """Seconds in a duration such as "30s", "5m", "2h" or "7d"; None when `value` is not one
    (numbers without a unit, other units, negative or fractional values)."""
    if not isinstance(value, str):
        return None
    match = _DURATION.match(value.lower())
    if match is None:
        return None
    return int(match[1]) * _UNITS[match[2]]


def format_duration(seconds: int) -> str:
    """The largest unit that writes `seconds` exactly: 86400 -> "1d", 90 -> "90s"."""
    for unit, size in sorted(_UNITS.items(), key=lambda item: -item[1]):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


DEFAULT_RPO_SECONDS = parse_duration(DEFAULT_RPO) or 0
DEFAULT_OUTAGE_BUDGET_SECONDS = parse_duration(DEFAULT_OUTAGE_BUDGET) or 0


def cluster_retention_ms(broker_config: Mapping[str, str]) -> int | None:
    """How long a cluster's topics keep records unless they set `retention.ms`: its brokerConfig's
    `log.retention.ms`, `.minutes` or `.hours` (the first set), else Kafka's 7 days. -1 (any
    negative value) is unlimited; None when the value set is not a whole number."""
    for key, scale in _BROKER_RETENTION_KEYS:
        if key in broker_config:
            text = broker_config[key].strip()
            if not re.fullmatch(r"-?\d+", text):
                return None
            value = int(text)
            return -1 if value < 0 else value * scale
    return KAFKA_DEFAULT_RETENTION_MS


def rpo_warnings(flow: Flow) -> tuple[str, ...]:
    """Why the flow's own checkpoints or heartbeats cannot show a breach of its RPO.

    A checkpoint is emitted every `emit.checkpoints.interval.seconds`, a heartbeat every
    `emit.heartbeats.interval.seconds`: a delay shorter than the interval is invisible in them.
    """
    warnings: list[str] = []
    for key, enabled_key in (
        (CHECKPOINT_INTERVAL_KEY, "emit.checkpoints.enabled"),
        (HEARTBEAT_INTERVAL_KEY, "emit.heartbeats.enabled"),
    ):
        if flow.settings.get(enabled_key, "true").strip().lower() == "false":
            continue
        raw = flow.settings.get(key)
        interval = MM2_INTERVAL_DEFAULTS[key] if raw is None else _whole_number(raw)
        if interval is None or flow.rpo_seconds >= interval:
            continue
        how = f"{key}={raw}" if raw is not None else f"{key} is MM2's default {interval}"
        warnings.append(
            f"flow {flow.name}: rpo {format_duration(flow.rpo_seconds)} is shorter than its {how} "
            f"({format_duration(interval)}): a delay below that interval does not show in the flow's "
            f"{'checkpoints' if key == CHECKPOINT_INTERVAL_KEY else 'heartbeats'}. Fix: raise "
            f"mm2:flows.{flow.name}.rpo to at least {format_duration(interval)}, or set {key} to at most "
            f"{flow.rpo_seconds} in the flow's settings."
        )
    return tuple(warnings)


def _whole_number(raw: str) -> int | None:
    text = raw.strip()
    return int(text) if text.isdigit() else None


def drain_warnings(pair: Pair, topology: Topology) -> tuple[str, ...]:
    """Why a switchover of `pair` may stop at its drain with nothing wrong: a drain the records
    cannot prove (components/ops/drain.py) waits for the old flow's commit, which comes every
    `offset.flush.interval.ms` of its worker group; a bound under two of those can pass between
    two commits. Measured (bench/switchover; bench/results/switchover-20261127.md): proven by the
    records in 0.6 s at 1k and 10k records/s, by the commit in 3.9 s at 5 s."""
    if pair.unplanned:  # nothing is drained
        return ()
    group = topology.worker_groups[topology.flow(pair.active_flow).worker_group]
    default = CONNECT_DEFAULT_OFFSET_FLUSH_MS if group.platform is Platform.EXTERNAL else OFFSET_FLUSH_MS
    raw = group.worker_config.get("offset.flush.interval.ms")
    declared = _whole_number(raw) if raw is not None else None
    flush_ms = default if declared is None else declared
    if pair.drain_timeout_s * 1000 >= 2 * flush_ms:
        return ()
    return (
        f"failover {pair.name}: drainTimeout {format_duration(pair.drain_timeout_s)} is shorter than two offset "
        f"commits of worker group {group.name} (offset.flush.interval.ms {flush_ms}): a drain the records cannot "
        "prove waits for the next commit (measured 3.9 s at 5000; 0.6 s when the records prove it), so a "
        f"switchover may stop at its drain with nothing wrong. Fix: set mm2:failover.{pair.name}.drainTimeout to "
        f"at least {format_duration(-(-2 * flush_ms // 1000))}.",
    )
