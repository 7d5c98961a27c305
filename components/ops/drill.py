"""DR drill: stop a flow's source cluster under load, fail the consumers over, and measure.

    bin/drill --stack dev --yes [--flow primary->dr] [--topic orders] [--records 30000] [--rate 2000]
              [--consume-fraction 0.4] [--fail-at 0.9] [--signal KILL|TERM] [--json] [--restore]

DESTRUCTIVE: it stops every broker of the flow's source cluster (local platform: the JVMs carrying
the stack's `-Dmm2.process=<stack>/<source>/broker-N` markers). Run it on a throwaway stack, or
pass --restore to run `bin/pulumi refresh` + `bin/pulumi up` afterwards (brokers restart in place,
data kept).

The exercise, as seed 003 asks ("stop the source cluster, trigger consumer failover, and verify
end-to-end message flow on the DR cluster"):

1. warm-up: a few uniquely keyed records, consumed and committed by a fresh group on the source,
   until MM2 has checkpointed the group (a real group exists long before the disaster);
2. load: a producer writes at --rate records/s; the group consumes and commits concurrently up
   to --consume-fraction of the records, then idles;
3. failure: once --fail-at of the records are acknowledged, the source's brokers get SIGKILL
   (or SIGTERM) while the producer is still writing;
4. failover: `failover.run_failover` commits the group's translated offsets on the DR cluster;
5. the group consumes the remote topic on DR until it has caught up;
6. the whole remote topic is read back, and the figures computed:

- lost: records acknowledged by the source and replicated to DR that the group consumed neither
  on the source nor on DR (the offset translation skipped them); must be 0;
- not replicated: acknowledged by the source but not on DR at the failure (replication lag; they
  stay on the source until failback);
- re-read: consumed on the source and again on DR; bounded by the records produced in one
  checkpoint interval plus offset.lag.max per partition;
- time from the source stopping to the first record consumed on DR (the failover included).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from components.ops import failover
from components.ops.stack_outputs import ROOT, OpsError, connect_client, flow, kafka_config, load_outputs

Log = Callable[[str], None]

# --------------------------------------------------------------------------------------------
# Figures (pure)
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# I/O
# --------------------------------------------------------------------------------------------


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


def source_broker_markers(stack: str, alias: str) -> list[str]:
    """Markers of the running JVMs of cluster `alias` in `stack` (local platform)."""
    prefix = f"-Dmm2.process={stack}/{alias}/broker-".encode()
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        found.update(a.decode()[len("-Dmm2.process=") :] for a in args if a.startswith(prefix))
    return sorted(found)


def stop_brokers(stack: str, alias: str, sig: str, log: Log) -> float:
    """Signal every broker of `alias`; returns the monotonic time of the signal. Waits until gone."""
    from components.platform.local import process as proc

    markers = source_broker_markers(stack, alias)
    pids = {m: proc.find_pids(m) for m in markers}
    when = time.monotonic()
    for marker, found in pids.items():
        for pid in found:
            os.kill(pid, signal.SIGKILL if sig == "KILL" else signal.SIGTERM)
        log(f"SIG{sig} {marker} (pid {', '.join(map(str, found))})")
    deadline = time.monotonic() + 60
    while any(proc.find_pids(m) for m in markers) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [m for m in markers if proc.find_pids(m)]
    if left:  # SIGTERM not honoured in time: a stuck broker must still go down for the drill
        for m in left:
            proc.stop(m, grace_s=0)
        log(f"{', '.join(left)} ignored SIGTERM for 60s: SIGKILL sent")
    return when


class _Producer(threading.Thread):
    """Writes uniquely keyed records at a steady rate; records the acknowledgement time per key."""

    def __init__(self, conf: dict[str, Any], topic: str, run: str, settings: DrillSettings) -> None:
        super().__init__(name="drill-producer", daemon=True)
        from confluent_kafka import Producer

        self.producer = Producer(conf)
        self.topic = topic
        self.run_id = run
        self.settings = settings
        self.acked: dict[bytes, float] = {}
        self.failed = 0
        self.sent = 0
        self.limit = settings.warmup_records  # raised when the load phase starts
        self.rate: float | None = None  # None: as fast as possible (warm-up)
        self.stop_event = threading.Event()
        self.error: BaseException | None = None
        self._payload = os.urandom(settings.value_bytes)

    def key(self, i: int) -> bytes:
        return f"drill-{self.run_id}-{i:09d}".encode()

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked[msg.key()] = time.monotonic()
        else:
            self.failed += 1

    def run(self) -> None:
        try:
            load_started: float | None = None
            base = 0
            while not self.stop_event.is_set():
                due = self.limit
                if self.rate is not None:
                    if load_started is None:
                        load_started, base = time.monotonic(), self.sent
                    due = min(self.limit, base + int((time.monotonic() - load_started) * self.rate))
                while self.sent < due and not self.stop_event.is_set():
                    try:
                        self.producer.produce(
                            self.topic, key=self.key(self.sent), value=self._payload, on_delivery=self._delivered
                        )
                    except BufferError:
                        break
                    self.sent += 1
                self.producer.poll(0.005)
        except BaseException as exc:  # reported by the drill, not lost in a thread
            self.error = exc

    def finish(self) -> None:
        """Stop writing; drop what the stopped source can no longer acknowledge."""
        self.stop_event.set()
        self.join(30)
        self.producer.purge(in_queue=True, in_flight=True)
        self.producer.flush(5)


class _SourceConsumer(threading.Thread):
    """The application's consumer group on the source: consumes and commits up to a target count."""

    def __init__(self, conf: dict[str, Any], topic: str, prefix: bytes, commit_every: int = 500) -> None:
        super().__init__(name="drill-source-consumer", daemon=True)
        from confluent_kafka import Consumer

        self.consumer = Consumer(conf)
        self.topic = topic
        self.prefix = prefix
        self.commit_every = commit_every
        self.target = 0
        self.consumed: set[bytes] = set()
        self.commits = 0
        self.polled = 0
        self.last_error = ""
        self.stop_event = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.consumer.subscribe([self.topic])
            since_commit = 0
            while not self.stop_event.is_set():
                if len(self.consumed) >= self.target:
                    if since_commit:
                        self.consumer.commit(asynchronous=False)
                        self.commits += 1
                        since_commit = 0
                    time.sleep(0.1)
                    continue
                msg = self.consumer.poll(0.5)
                if msg is None:
                    continue
                if msg.error() is not None:
                    self.last_error = str(msg.error())
                    continue
                self.polled += 1
                if (msg.key() or b"").startswith(self.prefix):
                    self.consumed.add(msg.key())
                since_commit += 1
                if since_commit >= self.commit_every:
                    self.consumer.commit(asynchronous=False)
                    self.commits += 1
                    since_commit = 0
        except BaseException as exc:
            if not self.stop_event.is_set():
                self.error = exc


def _checkpointed(outputs: Mapping[str, Any], target: str, topic: str, group: str, remote: str) -> int:
    found = failover.read_checkpoints(outputs, target, topic, timeout_s=30) or {}
    return sum(1 for (g, t, _) in found if g == group and t == remote)


def _live_setting(outputs: Mapping[str, Any], flow_name: str, role: str, key: str, default: str) -> str:
    f = flow(outputs, flow_name)
    with connect_client(outputs, str(f["workerGroup"])) as client:
        config = client.get_config(str(f["connectors"][role])) or {}
    return str(config.get(key, default))


def _consume_on_dr(
    outputs: Mapping[str, Any], target: str, remote: str, group: str, prefix: bytes, timeout_s: float, log: Log
) -> tuple[list[bytes], float | None]:
    """The group consumes the remote topic on DR until caught up; (drill keys, time of the first)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        kafka_config(
            outputs, target, **{"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": True}
        )
    )
    keys: list[bytes] = []
    first: float | None = None
    try:
        consumer.subscribe([remote])
        parts = consumer.list_topics(remote, timeout=30).topics[remote].partitions
        tps = [TopicPartition(remote, p) for p in parts]
        starts = {tp.partition: tp.offset for tp in consumer.committed(tps, timeout=30)}
        deadline = time.monotonic() + timeout_s
        ends: dict[int, int] = {}
        stable_since = time.monotonic()
        last_check = 0.0
        positions: dict[int, int] = {p: max(off, 0) for p, off in starts.items()}
        while time.monotonic() < deadline:
            # Batches: a watermark request waits behind the connection's fetch (up to 0.5 s), so
            # one record per loop would never catch up.
            for msg in consumer.consume(10_000, 0.5):
                if msg.error() is not None:
                    continue
                positions[msg.partition()] = msg.offset() + 1
                if (msg.key() or b"").startswith(prefix):
                    if first is None:
                        first = time.monotonic()
                    keys.append(msg.key())
            if time.monotonic() - last_check >= 2.0:
                last_check = time.monotonic()
                now_ends = {tp.partition: consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in tps}
                if now_ends != ends:
                    ends, stable_since = now_ends, time.monotonic()
                caught_up = all(positions.get(p, 0) >= end for p, end in ends.items())
                # MM2 may still be writing what it polled before the failure: wait for quiet ends.
                if caught_up and time.monotonic() - stable_since >= 5:
                    return keys, first
        raise OpsError(
            f"drill: group {group} had not caught up on {remote} on {target} after {timeout_s:.0f}s "
            f"(positions {positions}, ends {ends}). Next step: check {target} and the consumer group."
        )
    finally:
        consumer.close()


def _read_remote(outputs: Mapping[str, Any], target: str, remote: str, prefix: bytes) -> list[bytes]:
    """Every drill key in the remote topic, copies included."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    conf = kafka_config(
        outputs,
        target,
        **{
            "group.id": f"drill-verify-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        },
    )
    consumer = Consumer(conf)
    keys: list[bytes] = []
    try:
        parts = consumer.list_topics(remote, timeout=30).topics[remote].partitions
        pending, assignment = set(), []
        for p in parts:
            low, high = consumer.get_watermark_offsets(TopicPartition(remote, p), timeout=30)
            if high > low:
                pending.add(p)
                assignment.append(TopicPartition(remote, p, low))
        consumer.assign(assignment)
        deadline = time.monotonic() + 300
        while pending and time.monotonic() < deadline:
            for msg in consumer.consume(10_000, 1.0):
                if msg.error() is not None:
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        pending.discard(msg.partition())
                    continue
                if (msg.key() or b"").startswith(prefix):
                    keys.append(msg.key())
        if pending:
            raise OpsError(f"drill: reading {remote} on {target} back did not finish in 300s (partitions {pending})")
    finally:
        consumer.close()
    return keys


def run_drill(
    outputs: Mapping[str, Any],
    stack: str,
    *,
    flow_name: str | None = None,
    topic: str | None = None,
    settings: DrillSettings | None = None,
    log: Log = print,
) -> DrillReport:
    """Run the whole drill against a deployed stack; stops the flow's source brokers."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    from components.ops import connectors

    s = settings or DrillSettings()
    if s.problems():
        raise OpsError("drill settings: " + "; ".join(s.problems()))
    name = flow_name or sorted(outputs["flows"])[0]
    f = flow(outputs, name)
    source, target = str(f["source"]), str(f["target"])
    topics = dict(f.get("topics") or {})
    topic = topic or sorted(topics)[0]
    if topic not in topics:
        raise OpsError(f"drill: topic {topic} is not replicated by flow {name} (topics: {', '.join(sorted(topics))})")
    remote = str(topics[topic])
    markers = source_broker_markers(stack, source)
    if not markers:
        raise OpsError(
            f"drill: no running broker of cluster {source} in stack {stack} (markers {stack}/{source}/broker-N). "
            "The drill stops the source by its local-platform processes; next step: deploy the stack on the "
            "local platform (`bin/pulumi up`), or run `bin/pulumi refresh` + `up` if the brokers are down."
        )
    unhealthy = [
        c for c in connectors.run(outputs, connectors.Operation.STATUS, flows=[name], log=log) if not c.healthy
    ]
    if unhealthy:
        raise OpsError(
            f"drill: flow {name} is not healthy ({', '.join(f'{c.name} {c.state}' for c in unhealthy)}). "
            f"Next step: `bin/connectors --stack {stack} status --flow {name}`, fix, and run the drill again."
        )
    interval = float(_live_setting(outputs, name, "checkpoint", "emit.checkpoints.interval.seconds", "60"))
    lag_max = int(_live_setting(outputs, name, "source", "offset.lag.max", str(f.get("offsetLagMax") or 100)))
    run = uuid.uuid4().hex[:8]
    group = f"drill-{run}"
    prefix = f"drill-{run}-".encode()
    log(
        f"drill {run}: flow {name}, {topic} -> {remote}, group {group}; {s.records} records at {s.rate}/s, "
        f"consume {s.consume_fraction:.0%} on {source}, stop {source} ({', '.join(markers)}) at {s.fail_at:.0%}; "
        f"checkpoint interval {interval:g}s, offset.lag.max {lag_max}"
    )

    # The group starts at the topic's current end, so it sees only this drill's records.
    admin = AdminClient(kafka_config(outputs, source, **{"log_level": 0}))  # quiet once the source is gone
    md = admin.list_topics(topic, timeout=30).topics[topic]
    partitions = len(md.partitions)
    probe = _read_ends(outputs, source, topic, partitions)
    failover.commit_offsets(admin, group, [TopicPartition(topic, p, off) for p, off in probe.items()], 30)

    producer = _Producer(
        kafka_config(
            outputs, source, **{"linger.ms": 5, "enable.idempotence": True, "message.timeout.ms": 15000, "log_level": 0}
        ),
        topic,
        run,
        s,
    )
    consumer = _SourceConsumer(
        kafka_config(
            outputs,
            source,
            **{"group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": 0},
        ),
        topic,
        prefix,
    )
    producer.start()
    consumer.target = s.warmup_records
    consumer.start()
    try:
        # 1. warm-up: the group exists and MM2 checkpoints it before the failure can happen.
        log(f"warm-up: {s.warmup_records} records; waiting for MM2 to checkpoint {group} ...")
        deadline = time.monotonic() + s.checkpoint_wait_s
        cp_topic = str(f.get("checkpointsTopic") or f"{source}.checkpoints.internal")
        while _checkpointed(outputs, target, cp_topic, group, remote) == 0:
            _raise_thread_errors(producer, consumer)
            if time.monotonic() > deadline:
                states = connectors.run(outputs, connectors.Operation.STATUS, flows=[name], log=log)
                raise OpsError(
                    f"drill: MM2 wrote no checkpoint for {group} to {cp_topic} on {target} within "
                    f"{s.checkpoint_wait_s:.0f}s ({len(consumer.consumed)} of {consumer.polled} records polled "
                    f"were the drill's, {consumer.commits} commits on {source}, last consumer error "
                    f"{consumer.last_error or 'none'}, {len(producer.acked)} acknowledged). Connectors:\n"
                    f"{connectors.render_states(states)}\nNext step: "
                    f"`bin/connectors --stack {stack} status --flow {name}` and the checkpoint connector's worker log."
                )
            time.sleep(1)
        log(f"warm-up done: {len(consumer.consumed)} consumed, {group} checkpointed")

        # 2. load, 3. failure.
        producer.rate = s.rate
        producer.limit = s.warmup_records + s.records
        consumer.target = s.warmup_records + int(s.records * s.consume_fraction)
        fail_at = s.warmup_records + int(s.records * s.fail_at)
        deadline = time.monotonic() + s.records / s.rate * 4 + 120
        last_report = 0.0
        while len(producer.acked) < fail_at:
            _raise_thread_errors(producer, consumer)
            if time.monotonic() > deadline:
                raise OpsError(
                    f"drill: only {len(producer.acked)} of {fail_at} records acknowledged by {source} in time; "
                    f"the machine or {source} is too slow for --rate {s.rate}. Next step: lower --rate."
                )
            if time.monotonic() - last_report >= 5:
                last_report = time.monotonic()
                log(f"load: {len(producer.acked)} acknowledged, {len(consumer.consumed)} consumed on {source}")
            time.sleep(0.05)
        log(f"stopping {source}: {len(producer.acked)} acknowledged, {len(consumer.consumed)} consumed on {source}")
        stopped = stop_brokers(stack, source, s.signal, log)
        consumer.stop_event.set()
        producer.finish()

        # 4. failover, 5. consume on DR.
        began = time.monotonic()
        plan, _ = failover.run_failover(outputs, failed=source, to=target, flow_name=name, groups=[group], log=log)
        failover_s = time.monotonic() - began
        if plan.refused:
            raise OpsError("drill: the failover was refused:\n" + "\n".join(plan.problems))
        log(f"consuming {remote} on {target} as {group} ...")
        on_dr, first = _consume_on_dr(outputs, target, remote, group, prefix, s.consume_timeout_s, log)
        consumer.join(10)

        # 6. read back and compute.
        log(f"reading {remote} on {target} back ...")
        remote_keys = _read_remote(outputs, target, remote, prefix)
    finally:
        consumer.stop_event.set()
        if producer.is_alive():
            producer.finish()
        consumer.join(10)
        # Closing may wait for a coordinator that is gone: bounded by the daemon thread's fate.
        threading.Thread(target=consumer.consumer.close, daemon=True).start()

    figures = compute_figures(
        acked=producer.acked,
        sent=producer.sent,
        consumed_on_source=consumer.consumed,
        remote=remote_keys,
        consumed_on_dr=on_dr,
        checkpoint_interval_s=interval,
        offset_lag_max=lag_max,
        partitions=partitions,
        time_to_first_record_s=None if first is None else first - stopped,
        failover_s=failover_s,
    )
    return DrillReport(stack, name, source, target, topic, remote, group, s.signal, figures, asdict(s))


def _read_ends(outputs: Mapping[str, Any], alias: str, topic: str, partitions: int) -> dict[int, int]:
    _, ends = failover.end_offsets(outputs, alias, [topic], timeout_s=30)
    return {p: ends[(topic, p)] for p in range(partitions)}


def _raise_thread_errors(*threads: Any) -> None:
    for t in threads:
        if t.error is not None:
            raise OpsError(f"drill: {t.name} failed: {t.error}") from t.error


def restore(stack: str, log: Log) -> None:
    """Bring the stopped brokers back: `bin/pulumi refresh` sees them dead, `up` restarts them in place."""
    for args in (["refresh", "--yes", "--skip-preview"], ["up", "--yes", "--skip-preview"]):
        log(f"bin/pulumi {' '.join(args)} --stack {stack} ...")
        out = subprocess.run([str(ROOT / "bin" / "pulumi"), *args, "--stack", stack], cwd=ROOT, check=False)
        if out.returncode != 0:
            raise OpsError(
                f"drill: `bin/pulumi {args[0]} --stack {stack}` failed ({out.returncode}); the source is still "
                "down. Next step: read its output above and run it again."
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bin/drill", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    d = DrillSettings()
    parser.add_argument("--stack", required=True, help="stack whose source cluster the drill stops")
    parser.add_argument("--outputs", help="JSON file from `pulumi stack output --json --show-secrets`")
    parser.add_argument("--flow", help="flow to drill (default: the first)")
    parser.add_argument("--topic", help="source topic to load (default: the flow's first)")
    parser.add_argument("--records", type=int, default=d.records)
    parser.add_argument("--rate", type=int, default=d.rate, help="records per second")
    parser.add_argument("--consume-fraction", type=float, default=d.consume_fraction)
    parser.add_argument("--fail-at", type=float, default=d.fail_at, help="fraction acknowledged when the source stops")
    parser.add_argument("--signal", choices=("KILL", "TERM"), default=d.signal)
    parser.add_argument("--json", action="store_true", help="print the report as JSON (progress goes to stderr)")
    parser.add_argument("--restore", action="store_true", help="afterwards, `bin/pulumi refresh` + `up` the stack")
    parser.add_argument("--yes", action="store_true", help="confirm: the drill stops the source cluster")
    args = parser.parse_args(argv)
    log: Log = (lambda msg: print(msg, file=sys.stderr, flush=True)) if args.json else (lambda m: print(m, flush=True))
    if not args.yes:
        print(
            f"drill: this stops every broker of the flow's source cluster in stack {args.stack}. "
            "Run it on a throwaway stack, and confirm with --yes (add --restore to restart it afterwards).",
            file=sys.stderr,
        )
        return 2
    settings = DrillSettings(
        records=args.records,
        rate=args.rate,
        consume_fraction=args.consume_fraction,
        fail_at=args.fail_at,
        signal=args.signal,
    )
    code = 0
    try:
        outputs = load_outputs(args.stack, args.outputs)
        report = run_drill(outputs, args.stack, flow_name=args.flow, topic=args.topic, settings=settings, log=log)
        print(json.dumps(report.to_dict(), indent=2) if args.json else render_report(report), flush=True)
        code = 0 if report.figures.ok else 1
    except OpsError as exc:
        print(str(exc) if str(exc).startswith("drill") else f"drill: {exc}", file=sys.stderr)
        code = 1
    finally:
        if args.restore:
            try:
                restore(args.stack, log)
            except OpsError as exc:
                print(str(exc), file=sys.stderr)
                code = 1
    return code


if __name__ == "__main__":
    sys.exit(main())
