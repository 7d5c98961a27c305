"""A switchover's drain: proof that the old side's flow copied everything (Kafka I/O).

With the old side fenced its topics take no more writes, so their ends are fixed. A partition is
drained when MM2's committed position reached its end (Connect commits every
`offset.flush.interval.ms`, 5 s on the platforms) or, sooner, when the records prove it: the new
side's remote partition ends with the old side's last records, in order (`tail_proven`,
components/ops/switchover_plan.py). MM2 copies each record's key, value, timestamp and headers,
and its producer keeps a partition's order, so the copies are recognisable; what cannot be proven
that way (a window of identical records, a target topic stamping LogAppendTime, records MM2 left
out) waits for the commit.

The unplanned path's cut (the source is gone): MM2's last committed position, `committed_cut`.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from components.ops.clients import connect_client, flow, kafka_config
from components.ops.errors import OpsError
from components.ops.failover import end_offsets
from components.ops.lag_exporter import Kafka, replicated_topics
from components.ops.switchover_plan import Identity, Request, tail_proven, unprovable
from components.outputs.contract import FlowExport, PartitionCut, StackExports
from components.watch.lag import next_offset
from components.watch.lag_plan import LagFlow, LagPlan

TIMEOUT_S = 30.0
_POLL_S = 0.05  # the new side's tails: a read is a fetch per lagging partition
_LAG_EVERY_S = 1.0  # MM2's committed position and the ends: a read of the offsets topic (~0.5 s)
_SAY_EVERY_S = 1.0
TAIL = 64  # the records per partition compared: enough that a repeated window is no accident

TP = tuple[str, int]
Lag = dict[TP, tuple[int, int]]  # (topic, partition) -> (records left to copy, the end)


class DrainTimedOut(OpsError):
    """The flow did not copy everything within the bound; `left` per partition."""

    def __init__(self, left: Mapping[TP, int]) -> None:
        super().__init__(", ".join(f"{t} p{p}: {n}" for (t, p), n in sorted(left.items())))
        self.left = dict(left)


def _lag_flow(f: FlowExport, request: Request) -> LagFlow:
    """Flow `f` as the lag reader reads it, with the pair's declared patterns."""
    topics, exclude = request.patterns[f.name]
    return LagFlow(f.name, f.source, f.target, f.connectors.get("source", ""), topics, exclude, 0)


def _lag_plan(outputs: StackExports, request: Request, flow_name: str) -> tuple[LagPlan, LagFlow]:
    f = flow(outputs, flow_name)
    group = outputs.connect[f.worker_group]
    lag_flow = _lag_flow(f, request)
    aliases = {f.source, group.cluster}
    plan = LagPlan(
        group=f.worker_group,
        storage_cluster=group.cluster,
        offsets_topic=group.offset_topic,
        clusters={a: {k: str(v) for k, v in kafka_config(outputs, a).items()} for a in aliases},
        flows=(lag_flow,),
    )
    return plan, lag_flow


@contextmanager
def lag_reader(outputs: StackExports, request: Request, flow_name: str) -> Iterator[Callable[[], Lag]]:
    """A reading of the flow's lag per call, over one set of clients: the offsets topic is read
    from its beginning once, then only what is new. Only the flow's own topics count (MM2 also
    copies `heartbeats`, which MM2 itself writes on both sides)."""
    plan, lag_flow = _lag_plan(outputs, request, flow_name)
    kafka = Kafka(plan, {})

    def read() -> Lag:
        kafka.read_committed()
        return {
            (r.topic, r.partition): (max(0, r.end - next_offset(r, None)), r.end)
            for r in kafka.read_flow(lag_flow, oldest=False)
            if selects(lag_flow.topics, lag_flow.topics_exclude, r.topic)
        }

    try:
        yield read
    finally:
        kafka.close()


def lag(outputs: StackExports, request: Request, flow_name: str) -> Lag:
    """The flow's lag, read once."""
    with lag_reader(outputs, request, flow_name) as read:
        return read()


def lag_ends(outputs: StackExports, request: Request, flow_name: str) -> dict[TP, int]:
    return {tp: end for tp, (_n, end) in lag(outputs, request, flow_name).items()}


def selects(topics: Sequence[str], exclude: Sequence[str], topic: str) -> bool:
    """Whether a flow's own patterns select `topic` (Python regexes on the whole name)."""
    return any(re.fullmatch(p, topic) for p in topics) and not any(re.fullmatch(p, topic) for p in exclude)


# -- the records themselves ----------------------------------------------------------------


def identity(msg: Any) -> Identity:
    """What MM2 copies of a record: key, value, timestamp, headers."""
    return (msg.key(), msg.value(), msg.timestamp()[1], tuple(msg.headers() or ()))


class Tails:
    """The last TAIL records of partitions on one cluster, over one consumer (assign only)."""

    def __init__(self, outputs: StackExports, alias: str, isolation: str) -> None:
        from confluent_kafka import Consumer

        conf = {
            "group.id": f"mm2-drain-{uuid.uuid4().hex[:8]}",  # never joined nor committed
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
            "isolation.level": isolation,
            "fetch.wait.max.ms": 10,  # the end of a partition shows at once, not after 500 ms
            "log_level": 0,
        }
        self.consumer = Consumer(kafka_config(outputs, alias, **conf))

    def read(self, ends: Mapping[TP, int], timeout_s: float) -> dict[TP, tuple[Identity, ...]]:
        """Each partition's last records before its end; a partition not read to its end within
        `timeout_s` is left out (an incomplete tail proves nothing)."""
        from confluent_kafka import KafkaError, TopicPartition

        wanted = {tp: end for tp, end in ends.items() if end > 0}
        if not wanted:
            return {}
        self.consumer.assign([TopicPartition(t, p, max(0, end - 2 * TAIL)) for (t, p), end in wanted.items()])
        got: dict[TP, list[Identity]] = {tp: [] for tp in wanted}
        pending = set(wanted)
        deadline = time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            for msg in self.consumer.consume(num_messages=1000, timeout=0.1):
                tp = (msg.topic(), msg.partition())
                if tp not in pending:
                    continue
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        pending.discard(tp)
                    continue
                offset = msg.offset() or 0
                if offset < wanted[tp]:
                    got[tp].append(identity(msg))
                if offset + 1 >= wanted[tp]:
                    pending.discard(tp)
        self.consumer.unassign()
        return {tp: tuple(records[-TAIL:]) for tp, records in got.items() if tp not in pending}

    def partition_counts(self, timeout_s: float) -> dict[str, int]:
        """Each topic's partition count on the cluster."""
        listing = self.consumer.list_topics(timeout=timeout_s).topics
        return {name: len(t.partitions or {}) for name, t in listing.items() if t.error is None}

    def watermarks(self, partitions: Sequence[TP], timeout_s: float) -> dict[TP, tuple[int, int]]:
        """(log start, log end) of `partitions` now (a partition not there yet: (0, 0))."""
        from confluent_kafka import KafkaException, TopicPartition

        found = {}
        for t, p in partitions:
            try:
                found[(t, p)] = self.consumer.get_watermark_offsets(TopicPartition(t, p), timeout_s, cached=False)
            except KafkaException:  # the remote partition is not created yet: nothing copied
                found[(t, p)] = (0, 0)
        return found

    def ends(self, partitions: Sequence[TP], timeout_s: float) -> dict[TP, int]:
        """The log-end offsets of `partitions` now (a partition not there yet: 0)."""
        return {tp: end for tp, (_start, end) in self.watermarks(partitions, timeout_s).items()}

    def close(self) -> None:
        self.consumer.close()


# -- the drain -----------------------------------------------------------------------------


class Proof:
    """Which lagging partitions the records prove copied: the old side's tails (read once per
    end: fenced, they do not move) against the new side's remote partitions' tails now."""

    def __init__(self, outputs: StackExports, f: FlowExport, new: str) -> None:
        self.remote = f.remote_topic_of
        self.on_old = Tails(outputs, f.source, "read_uncommitted")
        self.on_new = Tails(outputs, new, "read_committed")
        self.source_tails: dict[TP, tuple[int, tuple[Identity, ...]]] = {}

    def source_lag(self, lag_flow: LagFlow) -> Lag:
        """Every record of the flow's partitions on the old side, as not yet known copied: the
        proof's first look, before MM2's committed position is read (that read takes ~1 s)."""
        counts = self.on_old.partition_counts(TIMEOUT_S)
        picked = replicated_topics(lag_flow, counts, set())
        topics = [t for t in picked if selects(lag_flow.topics, lag_flow.topics_exclude, t)]
        marks = self.on_old.watermarks([(t, p) for t in topics for p in range(counts[t])], TIMEOUT_S)
        return {tp: (end - start, end) for tp, (start, end) in marks.items()}

    def proven(self, behind: Lag) -> set[TP]:
        left = [tp for tp, (n, _end) in behind.items() if n]
        unread = {tp: behind[tp][1] for tp in left if self.source_tails.get(tp, (-1, ()))[0] != behind[tp][1]}
        if unread:
            self.source_tails |= {tp: (unread[tp], t) for tp, t in self.on_old.read(unread, TIMEOUT_S).items()}
        remote = {tp: (self.remote(tp[0]), tp[1]) for tp in left}
        on_new = self.on_new.read(self.on_new.ends(list(remote.values()), TIMEOUT_S), TIMEOUT_S)
        return {
            tp
            for tp in left
            if tp in self.source_tails and tail_proven(self.source_tails[tp][1], on_new.get(remote[tp]))
        }

    def close(self) -> None:
        self.on_old.close()
        self.on_new.close()


def _by_records(outputs: StackExports, f: FlowExport, request: Request, say: Callable[[str], None]) -> bool:
    """Whether the records may prove this flow's drain (its source connector's live config)."""
    name = f.connectors.get("source", "")
    with connect_client(outputs, f.worker_group, retry_budget_s=10.0) as client:
        why = unprovable(client.get_config(name) or {})
    if why:
        say(f"switchover {request.pair}: the drain waits for MM2's commit of {request.stops}: {name}: {why}")
    return not why


def drain(
    outputs: StackExports, request: Request, say: Callable[[str], None], by_records: bool = True
) -> tuple[PartitionCut, ...]:
    """Wait (bounded by the request's drainTimeout) until the flow old->new has copied everything:
    by MM2's commit or by the records (module docstring; `by_records` False: the commit only, as
    before the proof, for bench/switchover). The cut: each partition's end on the old side and its
    remote partition's end on the new side once drained."""
    f = flow(outputs, request.stops)
    proof = Proof(outputs, f, request.new) if by_records and _by_records(outputs, f, request, say) else None
    started = time.monotonic()
    said = started
    with ExitStack() as resources:
        if proof:
            resources.callback(proof.close)
        # The records first (fast); MM2's commit once the records have not proven it within a second.
        read: Callable[[], Lag] | None = None
        behind = proof.source_lag(_lag_flow(f, request)) if proof else {}
        read_at = started if proof else started - _LAG_EVERY_S
        while True:
            if time.monotonic() - read_at >= _LAG_EVERY_S:
                # MM2's commit (and the ends again: a write let through as the fence went up)
                read = read or resources.enter_context(lag_reader(outputs, request, request.stops))
                behind, read_at = read(), time.monotonic()
            left = {tp: n for tp, (n, _end) in behind.items() if n}
            proven = proof.proven(behind) if proof and left else set()
            if set(left) <= proven:
                say(
                    f"switchover {request.pair}: {request.stops} drained in {time.monotonic() - started:.1f}s: "
                    f"{len(proven)} partition(s) proven by the records, {len(behind) - len(proven)} by MM2's commit"
                )
                break
            now = time.monotonic()
            if now - started > request.drain_timeout_s:
                raise DrainTimedOut({tp: n for tp, n in left.items() if tp not in proven})
            if now - said >= _SAY_EVERY_S:
                said = now
                say(
                    f"switchover {request.pair}: {request.stops} has "
                    f"{sum(n for tp, n in left.items() if tp not in proven)} record(s) left to copy "
                    f"({now - started:.0f}s of {request.drain_timeout_s}s)"
                )
            time.sleep(_POLL_S)
    remote = {t: f.remote_topic_of(t) for t, _p in behind}
    _counts, remote_ends = end_offsets(outputs, request.new, sorted(set(remote.values())), TIMEOUT_S)
    return tuple(
        PartitionCut(t, p, end, remote_ends.get((remote[t], p), 0)) for (t, p), (_n, end) in sorted(behind.items())
    )


def committed_cut(outputs: StackExports, request: Request) -> tuple[PartitionCut, ...]:
    """The cut of a flow whose source is gone: MM2's last committed position per partition (what
    reached the new side), read from the worker group's offsets topic, and the remote ends."""
    plan, lag_flow = _lag_plan(outputs, request, request.stops)
    kafka = Kafka(plan, {})
    try:
        kafka.read_committed()
        committed = dict(kafka.committed.get((lag_flow.connector, lag_flow.source), {}))
    finally:
        kafka.close()
    f = flow(outputs, request.stops)
    topics, exclude = request.patterns[request.stops]
    wanted = {t for t, _p in committed if selects(topics, exclude, t)}
    committed = {tp: o for tp, o in committed.items() if tp[0] in wanted}
    remote = {t: f.remote_topic_of(t) for t in wanted}
    _counts, ends = end_offsets(outputs, request.new, sorted(set(remote.values())), TIMEOUT_S)
    return tuple(
        PartitionCut(t, p, offset + 1, ends.get((remote[t], p), 0)) for (t, p), offset in sorted(committed.items())
    )
