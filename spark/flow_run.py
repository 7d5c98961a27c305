"""What the stage holds for one flow while it validates it: `FlowRun` (its cut, the target's
state, the offset syncs and checkpoints once read) and the small types its fields carry.

The modules that work on a run (flow_validation, internal_topics, flow_checks) import it from
here; it imports none of them, so the stage has no import circle.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from components.outputs.contract import FlowExport
from spark import catchup, kafka_io
from spark.catchup import Range
from spark.fast_path import SideAgg
from spark.outputs import ValidationScope
from spark.report import Check

if TYPE_CHECKING:
    from spark.checks import FindingSummary
    from spark.expired import SentinelReading

Summaries = dict[str, dict[str, "FindingSummary"]]  # {topic: {status: summary}}
FlowLevel = tuple[list[Check], dict[str, Any] | None]  # flow-level checks, heartbeat details


@dataclass
class Presumed:
    """Verdict inputs of every topic of a flow as if all its partitions were healthy."""

    syncs: Summaries = field(default_factory=dict)
    checkpoints: Summaries = field(default_factory=dict)


@dataclass
class InternalTopics:
    """The flow's offset syncs and checkpoints as persisted DataFrames (None: absent or skipped)."""

    syncs: Any = None
    ckpts: Any = None
    problems: list[Check] = field(default_factory=list)  # found while reading: a missing syncs topic
    presumed: Future[Presumed] | None = None

    def unpersist(self) -> None:
        for df in (self.syncs, self.ckpts):
            if df is not None:
                df.unpersist()


# How the stage reads a remote topic: as its consumers do, read_committed, always. The source side
# is read as MM2's source consumer reads it (read_committed only on an exactly-once flow). A
# target is written in transactions whenever the flow's workers run at
# exactly.once.source.support=enabled: for an exactly-once flow, for an at-least-once flow on a
# group that also runs one, and for every record a flow wrote while it was exactly-once before.
# A task killed mid-transaction leaves aborted records there that no read_committed consumer
# sees, and read_uncommitted would count them as duplicates. A topic never written in
# transactions reads the same under both levels.
TARGET_ISOLATION = "read_committed"


class FlowRun:
    """What the stage captured for one flow: its cut, then (after `prepare_flow`) the target's state."""

    def __init__(self, flow: FlowExport, outputs: ValidationScope, topics: dict[str, dict[str, int]]) -> None:
        self.flow = flow
        self.src = outputs.clusters[flow.source]
        self.tgt = outputs.clusters[flow.target]
        self.isolation = "read_committed" if flow.exactly_once else "read_uncommitted"
        self.target_isolation = TARGET_ISOLATION
        self.src_topics = topics[flow.source]
        self.cut: dict[str, dict[int, Range]] = {}
        self.absent_source: list[str] = []
        for topic in sorted(flow.topics):
            if topic not in self.src_topics:
                self.absent_source.append(topic)
                continue
            self.cut[topic] = kafka_io.watermarks(self.src, topic, self.src_topics[topic], self.isolation)
        self.latency: Future[dict[str, list[tuple[int, int]]]] | None = None
        # SMTs applied to records (a newer outputs contract exports them): records then differ by design.
        self.transforms: tuple[str, ...] = tuple(getattr(flow, "transforms", ()) or ())
        self.caught: catchup.CatchUp | None = None
        self.snapshot: dict[str, dict[int, Range] | None] = {}
        self.fast: dict[str, tuple[dict[int, SideAgg], dict[int, SideAgg]]] = {}
        self.internal: InternalTopics | None = None  # offset syncs and checkpoints, once read
        self.flow_level: Future[FlowLevel] | None = None  # flow-level checks under way
        self.sync_cluster = self.src if flow.offset_syncs_cluster == flow.source else self.tgt
        self.lag_url = outputs.lag_urls.get(flow.worker_group, "")  # its worker group's lag exporter
        self.sentinel: SentinelReading | None = None  # what that exporter found, once asked (spark.expired)
        store = outputs.offset_stores.get(flow.worker_group)
        self.offset_store = (
            (outputs.clusters[store.cluster], store.topic) if store and store.cluster in outputs.clusters else None
        )
