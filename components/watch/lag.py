"""Replication lag and the data-loss sentinel: what the lag exporter (components/ops/lag_exporter.py)
computes from one reading of each source partition, and the metrics it serves. Pure: readings in,
values and text out; the exporter does the reading, the clock and the serving.

Per source partition of a flow, MM2's *next* offset is its committed source offset + 1 (Connect
commits the last record the MirrorSourceConnector processed, once the target acknowledged it;
components/mm2_records.py decode_source_offset), or the partition's log start when it has
committed nothing (it starts from the earliest record):

- **records behind**: the source's last stable offset (LSO, what a read_committed consumer can
  read) minus the next offset;
- **seconds behind**: the age of the record at the next offset, the oldest one not yet copied
  (0 when nothing is behind);
- **expired before replication** (the sentinel): when the partition's log start passes the next
  offset, the records in between were deleted from the source before MM2 copied them, by
  retention or by a delete-records call: a log start does not say which, so neither is claimed.
  Counted once per offset (the memory keeps how far it counted), with reason `deleted`;
- **recreated**: the topic's ID changed since the last reading (or, with no ID, its end offset
  went backwards): the topic was deleted and created again under the same name. The records of
  the old topic MM2 had not copied at the last reading are counted with reason `recreated` (a
  lower bound: whatever was written after that reading is unknown), and the partition starts
  over. MM2's committed offset of the old topic, until MM2 commits one for the new topic, is
  not used (it may lie past the new topic's end).

MM2's committed offset trails what it copied by at most one offset flush (5 s on the platforms'
workers), so a count can include records copied within that flush when a deletion reaches right
to MM2's position: never the other way round, nothing deleted uncopied goes uncounted.

Every finding carries the time the exporter found it: an expiry its `atMs`, a re-created topic
`lastAtMs` (when its last re-creation was found). A flow's loss acknowledgement
(`mm2:flows.<flow>.lossAcknowledged`, components/topology/acknowledgement.py) covers the findings
found at or before it (`flow_findings`); one whose time is not known is never covered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

DELETED = "deleted"  # the log start passed MM2's position: retention or a delete-records call
RECREATED = "recreated"
# What each reason means, in the words of every report (the exporter's log, bin/status, the stage).
CAUSE = {
    DELETED: "deleted from the source by retention or a delete-records call",
    RECREATED: "lost with the topic when it was created again",
}
# Exporters before `deleted` wrote `retention` for it, in their state files and /expired: read as `deleted`.
FORMER_REASONS = {"retention": DELETED}
# The state file's layout. `lastAtMs` of a re-creation came later within version 1 (an additive,
# optional field: an exporter without it ignores it); a state without it is read as re-created
# at or before the moment it is loaded (`state_from_document`).
STATE_VERSION = 1

# The exporter's metrics (docs/monitoring.md lists them): name -> (type, help).
METRICS: Mapping[str, tuple[str, str]] = {
    "mm2_partition_lag_records": (
        "gauge",
        "Source records MM2 has not copied yet (LSO - next offset).",
    ),
    "mm2_partition_lag_seconds": ("gauge", "Age in seconds of the oldest source record MM2 has not copied yet."),
    "mm2_flow_lag_records": ("gauge", "The flow's largest partition lag in records."),
    "mm2_flow_lag_seconds": ("gauge", "The flow's largest partition lag in seconds."),
    "mm2_flow_rpo_seconds": ("gauge", "The flow's declared RPO (mm2:flows.<flow>.rpo), in seconds."),
    "mm2_expired_records_total": (
        "counter",
        "Source records gone before MM2 copied them (reason: deleted, by retention or a delete-records call; "
        "or recreated, with a topic created again).",
    ),
    "mm2_source_topic_recreations_total": ("counter", "Times a replicated source topic was deleted and created again."),
    "mm2_lag_last_read_timestamp_seconds": ("gauge", "When the exporter last read the flow's offsets (Unix time)."),
    "mm2_lag_read_errors_total": ("counter", "Readings of the flow's offsets that failed."),
}


@dataclass(frozen=True)
class Reading:
    """One source partition as the exporter read it."""

    topic: str
    partition: int
    log_start: int  # the earliest offset still on the source
    end: int  # the last stable offset
    committed: int | None  # MM2's committed source offset (the last record it processed)
    topic_id: str | None = None
    oldest_ms: int | None = None  # timestamp of the record at the next offset, when one was read


@dataclass(frozen=True)
class Memory:
    """What the sentinel remembers of a partition between readings (and exporter restarts)."""

    topic_id: str | None
    end: int
    committed: int | None
    counted_to: int = 0  # expired records are counted below this offset already
    stale_committed: int | None = None  # the old topic's committed offset, ignored after a re-creation


@dataclass(frozen=True)
class Expiry:
    """Records of one partition that were deleted before MM2 copied them: offsets [first, end)."""

    flow: str
    topic: str
    partition: int
    first: int
    end: int
    reason: str
    at_ms: int

    @property
    def count(self) -> int:
        return self.end - self.first

    def to_json(self) -> dict[str, Any]:
        return {
            "flow": self.flow,
            "topic": self.topic,
            "partition": self.partition,
            "first": self.first,
            "end": self.end,
            "count": self.count,
            "reason": self.reason,
            "atMs": self.at_ms,
        }

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> Expiry:
        return Expiry(
            flow=str(doc["flow"]),
            topic=str(doc["topic"]),
            partition=int(doc["partition"]),
            first=int(doc["first"]),
            end=int(doc["end"]),
            reason=FORMER_REASONS.get(str(doc["reason"]), str(doc["reason"])),
            at_ms=int(doc["atMs"]),
        )

    def acknowledged_by(self, acknowledged_at_ms: int | None) -> bool:
        """Found at or before the flow's loss acknowledgement."""
        return acknowledged_at_ms is not None and self.at_ms <= acknowledged_at_ms

    def describe(self) -> str:
        cause = CAUSE.get(self.reason, f"gone ({self.reason})")
        where = f"{self.topic}[{self.partition}] offsets {self.first}..{self.end - 1}"
        return f"{where}: {self.count} record(s) {cause} before MM2 copied them"


@dataclass(frozen=True)
class Recreation:
    """A replicated source topic deleted and created again, `count` times; `last_at_ms`: when the
    exporter found the last of them (None: served by an exporter that did not say)."""

    flow: str
    topic: str
    count: int
    last_at_ms: int | None = None

    def acknowledged_by(self, acknowledged_at_ms: int | None) -> bool:
        """Its last re-creation was found at or before the flow's loss acknowledgement (an unknown
        time never is: it may be later)."""
        return acknowledged_at_ms is not None and self.last_at_ms is not None and self.last_at_ms <= acknowledged_at_ms

    def to_json(self) -> dict[str, Any]:
        return {"flow": self.flow, "topic": self.topic, "count": self.count, "lastAtMs": self.last_at_ms}

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> Recreation:
        last = doc.get("lastAtMs")
        return Recreation(str(doc["flow"]), str(doc["topic"]), int(doc["count"]), None if last is None else int(last))


@dataclass(frozen=True)
class PartitionLag:
    topic: str
    partition: int
    records: int
    seconds: float


def next_offset(reading: Reading, memory: Memory | None) -> int:
    """The offset MM2 copies next (see the module docstring)."""
    committed = reading.committed
    if memory is not None and committed is not None and committed == memory.stale_committed:
        committed = None
    if committed is None or committed + 1 > reading.end:
        return reading.log_start
    return max(committed + 1, reading.log_start)


def _recreated(reading: Reading, memory: Memory) -> bool:
    if reading.topic_id and memory.topic_id:
        return reading.topic_id != memory.topic_id
    return reading.end < memory.end


def observe(
    flow: str, reading: Reading, memory: Memory | None, now_ms: int
) -> tuple[PartitionLag, Memory, list[Expiry]]:
    """The partition's lag, what to remember, and the expiries this reading reveals."""
    expiries: list[Expiry] = []
    if memory is not None and _recreated(reading, memory):
        copied_to = (memory.committed + 1) if memory.committed is not None else memory.end
        first = max(copied_to, memory.counted_to)
        if memory.committed is not None and memory.end > first:
            expiries.append(Expiry(flow, reading.topic, reading.partition, first, memory.end, RECREATED, now_ms))
        memory = Memory(reading.topic_id, reading.end, None, 0, stale_committed=memory.committed)
    nxt = next_offset(reading, memory)
    counted_to = memory.counted_to if memory is not None else 0
    stale = memory.stale_committed if memory is not None else None
    effective = None if reading.committed is None or reading.committed == stale else reading.committed
    if effective is not None and effective + 1 <= reading.end:
        first = max(effective + 1, counted_to)
        if reading.log_start > first:
            expiries.append(Expiry(flow, reading.topic, reading.partition, first, reading.log_start, DELETED, now_ms))
            counted_to = reading.log_start
    behind = max(0, reading.end - nxt)
    seconds = max(0.0, (now_ms - reading.oldest_ms) / 1000) if behind and reading.oldest_ms is not None else 0.0
    remembered = Memory(
        topic_id=reading.topic_id or (memory.topic_id if memory else None),
        end=reading.end,
        committed=effective,
        counted_to=counted_to,
        stale_committed=stale if effective is None else None,
    )
    return PartitionLag(reading.topic, reading.partition, behind, seconds), remembered, expiries


# --- the exporter's state file: memories and every expiry found, kept across restarts --------


@dataclass(frozen=True)
class SentinelState:
    memories: Mapping[tuple[str, str, int], Memory]  # (flow, topic, partition)
    expiries: tuple[Expiry, ...] = ()
    recreations: Mapping[tuple[str, str], int] = field(default_factory=dict)  # (flow, topic) -> times
    # (flow, topic) -> when the last re-creation was found (ms); absent: not known
    recreated_at: Mapping[tuple[str, str], int] = field(default_factory=dict)

    def recreation_list(self) -> list[Recreation]:
        return [Recreation(f, t, n, self.recreated_at.get((f, t))) for (f, t), n in sorted(self.recreations.items())]


def observe_flow(
    state: SentinelState, flow: str, readings: Iterable[Reading], now_ms: int
) -> tuple[SentinelState, list[PartitionLag], list[Expiry]]:
    """Every partition of one flow read at `now_ms`: the new state, the lags, the new expiries."""
    memories, lags, found = dict(state.memories), [], []
    recreated: set[str] = set()
    for reading in readings:
        key = (flow, reading.topic, reading.partition)
        before = memories.get(key)
        if before is not None and _recreated(reading, before):
            recreated.add(reading.topic)
        lag, memories[key], expiries = observe(flow, reading, before, now_ms)
        lags.append(lag)
        found += expiries
    recreations, recreated_at = dict(state.recreations), dict(state.recreated_at)
    for topic in recreated:  # once per topic and reading, however many partitions show it
        recreations[(flow, topic)] = recreations.get((flow, topic), 0) + 1
        recreated_at[(flow, topic)] = now_ms
    new = replace(
        state,
        memories=memories,
        expiries=state.expiries + tuple(found),
        recreations=recreations,
        recreated_at=recreated_at,
    )
    return new, lags, found


def state_document(state: SentinelState) -> dict[str, Any]:
    return {
        "version": STATE_VERSION,
        "partitions": [
            {
                "flow": flow,
                "topic": topic,
                "partition": partition,
                "topicId": m.topic_id,
                "end": m.end,
                "committed": m.committed,
                "countedTo": m.counted_to,
                "staleCommitted": m.stale_committed,
            }
            for (flow, topic, partition), m in sorted(state.memories.items())
        ],
        "expiries": [e.to_json() for e in state.expiries],
        "recreations": [r.to_json() for r in state.recreation_list()],
    }


def state_from_document(doc: Mapping[str, Any] | None, loaded_at_ms: int | None = None) -> SentinelState:
    """The state a document holds; a re-creation it keeps no time of (a file an older exporter
    wrote) as found at `loaded_at_ms`, which it was at the latest (None: left unknown)."""
    if not doc or doc.get("version") != STATE_VERSION:
        return SentinelState({})
    memories = {
        (str(p["flow"]), str(p["topic"]), int(p["partition"])): Memory(
            topic_id=p.get("topicId"),
            end=int(p["end"]),
            committed=p.get("committed"),
            counted_to=int(p.get("countedTo", 0)),
            stale_committed=p.get("staleCommitted"),
        )
        for p in doc.get("partitions") or ()
    }
    expiries = tuple(Expiry.from_json(e) for e in doc.get("expiries") or ())
    found = [Recreation.from_json(r) for r in doc.get("recreations") or ()]
    recreations = {(r.flow, r.topic): r.count for r in found}
    at = {(r.flow, r.topic): r.last_at_ms if r.last_at_ms is not None else loaded_at_ms for r in found}
    return SentinelState(memories, expiries, recreations, {k: v for k, v in at.items() if v is not None})


# --- Prometheus text exposition ----------------------------------------------------------------


@dataclass(frozen=True)
class FlowLag:
    """One flow's latest reading, as served."""

    flow: str
    source: str
    target: str
    rpo_seconds: int
    partitions: tuple[PartitionLag, ...] = ()
    read_at_s: float | None = None  # Unix time of the last good reading
    read_errors: int = 0


def _labels(**labels: object) -> str:
    def esc(v: object) -> str:
        return str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return "{" + ",".join(f'{k}="{esc(v)}"' for k, v in labels.items()) + "}"


def _number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.3f}"


def exposition(flows: Sequence[FlowLag], state: SentinelState) -> str:
    """The /metrics text (Prometheus text format 0.0.4)."""
    samples: dict[str, list[str]] = {name: [] for name in METRICS}
    for f in flows:
        ids = {"flow": f.flow, "source": f.source, "target": f.target}
        for p in sorted(f.partitions, key=lambda p: (p.topic, p.partition)):
            at = _labels(**ids, topic=p.topic, partition=p.partition)
            samples["mm2_partition_lag_records"].append(f"mm2_partition_lag_records{at} {p.records}")
            samples["mm2_partition_lag_seconds"].append(f"mm2_partition_lag_seconds{at} {_number(p.seconds)}")
        if f.partitions:
            worst_r = max(p.records for p in f.partitions)
            worst_s = max(p.seconds for p in f.partitions)
            samples["mm2_flow_lag_records"].append(f"mm2_flow_lag_records{_labels(**ids)} {worst_r}")
            samples["mm2_flow_lag_seconds"].append(f"mm2_flow_lag_seconds{_labels(**ids)} {_number(worst_s)}")
        samples["mm2_flow_rpo_seconds"].append(f"mm2_flow_rpo_seconds{_labels(**ids)} {f.rpo_seconds}")
        # Every partition's counters from 0, so the first expiry is an increase an alert sees.
        counts: dict[tuple[str, int, str], int] = {}
        for (flow, topic, partition), _m in state.memories.items():
            if flow == f.flow:
                counts.setdefault((topic, partition, DELETED), 0)
        for e in state.expiries:
            if e.flow == f.flow:
                counts[(e.topic, e.partition, e.reason)] = counts.get((e.topic, e.partition, e.reason), 0) + e.count
        for (topic, partition, reason), n in sorted(counts.items()):
            at = _labels(**ids, topic=topic, partition=partition, reason=reason)
            samples["mm2_expired_records_total"].append(f"mm2_expired_records_total{at} {n}")
        topics = sorted({t for (flow, t, _p) in state.memories if flow == f.flow})
        for topic in topics:
            n = state.recreations.get((f.flow, topic), 0)
            at = _labels(**ids, topic=topic)
            samples["mm2_source_topic_recreations_total"].append(f"mm2_source_topic_recreations_total{at} {n}")
        if f.read_at_s is not None:
            samples["mm2_lag_last_read_timestamp_seconds"].append(
                f"mm2_lag_last_read_timestamp_seconds{_labels(**ids)} {_number(round(f.read_at_s, 3))}"
            )
        samples["mm2_lag_read_errors_total"].append(f"mm2_lag_read_errors_total{_labels(**ids)} {f.read_errors}")
    lines: list[str] = []
    for name, (kind, text) in METRICS.items():
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}", *samples[name]]
    return "\n".join(lines) + "\n"


def expiries_document(state: SentinelState) -> dict[str, Any]:
    """The /expired JSON: every expiry the sentinel found, and the re-created topics."""
    return {
        "expired": [e.to_json() for e in state.expiries],
        "recreated": [r.to_json() for r in state.recreation_list()],
    }


def expiries_from_document(doc: Mapping[str, Any]) -> list[Expiry]:
    return [Expiry.from_json(e) for e in doc.get("expired") or ()]


@dataclass(frozen=True)
class FlowFindings:
    """What the sentinel found for one flow (an exporter serves every flow of its worker group),
    each finding acknowledged or not by the flow's loss acknowledgement."""

    expired: tuple[Expiry, ...] = ()  # by topic, partition and offset; see `flow_findings`
    recreated: tuple[Recreation, ...] = ()  # the topics created again at least once
    acknowledged_at_ms: int | None = None  # the flow's loss acknowledgement; None: none declared

    def acknowledged(self, finding: Expiry | Recreation) -> bool:
        return finding.acknowledged_by(self.acknowledged_at_ms)

    @property
    def open_expired(self) -> tuple[Expiry, ...]:
        """The expiries no acknowledgement covers: each one is data loss nobody has reviewed."""
        return tuple(e for e in self.expired if not self.acknowledged(e))

    @property
    def open_recreated(self) -> tuple[Recreation, ...]:
        return tuple(r for r in self.recreated if not self.acknowledged(r))

    @property
    def found(self) -> bool:
        return bool(self.expired or self.recreated)

    @property
    def open(self) -> bool:
        return bool(self.open_expired or self.open_recreated)


def flow_findings(doc: Mapping[str, Any], flow: str, acknowledged_at_ms: int | None = None) -> FlowFindings:
    """One flow's findings in an /expired document. Ranges are merged (`merged`) among the
    acknowledged ones and among the others, never across: a range found after the
    acknowledgement stays open even when it follows on from one found before it."""
    mine = [e for e in expiries_from_document(doc) if e.flow == flow]
    covered = merged(e for e in mine if e.acknowledged_by(acknowledged_at_ms))
    uncovered = merged(e for e in mine if not e.acknowledged_by(acknowledged_at_ms))
    expired = sorted(covered + uncovered, key=lambda e: (e.topic, e.partition, e.first, e.end))
    recreated = tuple(
        r for r in (Recreation.from_json(d) for d in doc.get("recreated") or ()) if r.flow == flow and r.count > 0
    )
    return FlowFindings(tuple(expired), recreated, acknowledged_at_ms)


def merged(expiries: Iterable[Expiry]) -> list[Expiry]:
    """Expiries of one flow, partition and reason whose offsets follow on from each other, as one
    with the first one's time: the exporter finds a range per reading, so retention deleting
    segment after segment through an outage shows as many. Sorted by flow, topic, partition, offset."""
    out: list[Expiry] = []
    for e in sorted(expiries, key=lambda e: (e.flow, e.topic, e.partition, e.first, e.end)):
        last = out[-1] if out else None
        if last is not None and _where(last) == _where(e) and e.first <= last.end:
            out[-1] = replace(last, end=max(last.end, e.end), at_ms=min(last.at_ms, e.at_ms))
        else:
            out.append(e)
    return out


def _where(e: Expiry) -> tuple[str, str, int, str]:
    return (e.flow, e.topic, e.partition, e.reason)
