"""The DR drill's settings, figures and report, pure: what each side saw becomes lost / re-read counts."""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


def max_in_window(times: Sequence[float], window_s: float) -> int:
    """Most events inside any window of `window_s` seconds (times need not be sorted)."""
    ordered = sorted(times)
    best = 0
    for i, start in enumerate(ordered):
        best = max(best, bisect_right(ordered, start + window_s) - i)
    return best


@dataclass(frozen=True)
class DrillFigures:
    produced: int  # acknowledged by the source cluster
    unacknowledged: int  # sent but not acknowledged when the source stopped
    consumed_on_source: int
    replicated: int  # acknowledged records present on the remote topic after the failure
    not_replicated: int  # acknowledged, not on DR: replication lag at the failure
    consumed_on_dr: int  # distinct drill records the group consumed on DR
    lost: int  # replicated, consumed neither on the source nor on DR
    reread: int  # consumed on the source, then again on DR
    reread_bound: int
    produced_per_checkpoint_interval: int
    checkpoint_interval_s: float
    offset_lag_max: int
    partitions: int
    duplicates_in_remote_topic: int  # copies MM2 wrote twice (at-least-once replication)
    time_to_first_record_s: float | None
    failover_s: float
    lost_sample: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.reread <= self.reread_bound


def compute_figures(
    *,
    acked: Mapping[bytes, float],
    sent: int,
    consumed_on_source: Iterable[bytes],
    remote: Iterable[bytes],
    consumed_on_dr: Iterable[bytes],
    checkpoint_interval_s: float,
    offset_lag_max: int,
    partitions: int,
    time_to_first_record_s: float | None,
    failover_s: float,
) -> DrillFigures:
    """The drill's figures from the keys each side saw. `acked` maps key -> acknowledgement time."""
    on_source = set(consumed_on_source)
    remote_counts = Counter(remote)
    on_dr = set(consumed_on_dr)
    produced = set(acked)
    replicated = produced & set(remote_counts)
    lost = sorted(replicated - on_source - on_dr)
    window = max_in_window(list(acked.values()), checkpoint_interval_s)
    return DrillFigures(
        produced=len(produced),
        unacknowledged=max(0, sent - len(produced)),
        consumed_on_source=len(on_source & produced),
        replicated=len(replicated),
        not_replicated=len(produced - replicated),
        consumed_on_dr=len(on_dr & produced),
        lost=len(lost),
        reread=len(on_source & on_dr),
        reread_bound=window + partitions * offset_lag_max,
        produced_per_checkpoint_interval=window,
        checkpoint_interval_s=checkpoint_interval_s,
        offset_lag_max=offset_lag_max,
        partitions=partitions,
        duplicates_in_remote_topic=sum(n - 1 for k, n in remote_counts.items() if n > 1 and k in produced),
        time_to_first_record_s=time_to_first_record_s,
        failover_s=failover_s,
        lost_sample=tuple(k.decode(errors="replace") for k in lost[:5]),
    )


@dataclass(frozen=True)
class DrillReport:
    stack: str
    flow: str
    source: str
    target: str
    topic: str
    remote_topic: str
    group: str
    signal: str
    figures: DrillFigures
    settings: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ok"] = self.figures.ok
        return data


def render_report(r: DrillReport) -> str:
    f = r.figures
    first = "none consumed" if f.time_to_first_record_s is None else f"{f.time_to_first_record_s:.1f}s"
    rows = [
        (f"produced (acknowledged by {r.source})", f.produced, f"+{f.unacknowledged} unacknowledged at the failure"),
        (f"consumed on {r.source} before the failure", f.consumed_on_source, ""),
        (f"replicated to {r.target} before the failure", f.replicated, f"{f.duplicates_in_remote_topic} written twice"),
        ("not replicated (lag at the failure)", f.not_replicated, f"stay on {r.source} until failback"),
        (f"consumed on {r.target} after failover", f.consumed_on_dr, ""),
        ("LOST (replicated, never consumed)", f.lost, ", ".join(f.lost_sample)),
        (
            f"re-read on {r.target} (duplicates)",
            f.reread,
            f"bound {f.reread_bound} = {f.produced_per_checkpoint_interval} produced in one checkpoint interval "
            f"({f.checkpoint_interval_s:g}s) + {f.partitions} x offset.lag.max {f.offset_lag_max}",
        ),
    ]
    lines = [
        f"DR drill on stack {r.stack}: flow {r.flow}, {r.topic} -> {r.remote_topic}, group {r.group}, "
        f"source stopped with SIG{r.signal}"
    ]
    lines += [f"  {label:<44} {value:>8}   {note}".rstrip() for label, value, note in rows]
    lines.append(
        f"  time from {r.source} stopping to the first record consumed on {r.target}: {first} "
        f"(failover command {f.failover_s:.1f}s)"
    )
    lines.append("  result: " + ("OK" if f.ok else "FAILED (records lost or re-read beyond the bound)"))
    return "\n".join(lines)


@dataclass(frozen=True)
class DrillSettings:
    records: int = 30_000
    rate: int = 2_000  # records per second
    consume_fraction: float = 0.4
    fail_at: float = 0.9
    signal: str = "KILL"  # KILL or TERM
    value_bytes: int = 100
    warmup_records: int = 300
    checkpoint_wait_s: float = 180.0
    consume_timeout_s: float = 300.0

    def problems(self) -> list[str]:
        out = []
        if self.records < 1000:
            out.append(f"--records {self.records}: use at least 1000")
        if self.rate <= 0:
            out.append(f"--rate {self.rate}: must be positive")
        if not 0 < self.consume_fraction < self.fail_at <= 1:
            out.append(
                f"--consume-fraction {self.consume_fraction} and --fail-at {self.fail_at}: need 0 < consume-fraction "
                "< fail-at <= 1 (the group consumes part of the records, the failure comes later)"
            )
        if self.signal not in ("KILL", "TERM"):
            out.append(f"--signal {self.signal}: KILL or TERM")
        return out
