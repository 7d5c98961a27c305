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
from dataclasses import asdict, dataclass
from pathlib import Path

from components.ops import connectors, failover
from components.ops.clients import connect_client, flow, kafka_config
from components.ops.drill_clients import (
    LoadProducer,
    Log,
    SourceConsumer,
    checkpointed,
    consume_on_dr,
    raise_thread_errors,
    read_remote,
)
from components.ops.drill_figures import DrillReport, DrillSettings, compute_figures, render_report
from components.ops.errors import OpsError
from components.outputs.contract import OutputsError, StackExports
from components.outputs.loader import load_exports
from components.platform.local import process as proc
from components.platform.local.layout import brokers_path, process_marker

ROOT = Path(__file__).resolve().parents[2]
HEALTHY_WAIT_S = 90.0  # a flow just deployed or rebalanced settles its tasks well within this


def source_broker_markers(stack: str, alias: str) -> list[str]:
    """Markers of the running JVMs of cluster `alias` in `stack` (local platform)."""
    return proc.running_markers(process_marker(stack, brokers_path(alias)))


def stop_brokers(stack: str, alias: str, sig: str, log: Log) -> float:
    """Signal every broker of `alias`; returns the monotonic time of the signal. Waits until gone."""

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


def _live_setting(outputs: StackExports, flow_name: str, role: str, key: str, default: str) -> str:
    f = flow(outputs, flow_name)
    with connect_client(outputs, f.worker_group) as client:
        config = client.get_config(f.connectors[role]) or {}
    return str(config.get(key, default))


@dataclass(frozen=True)
class DrillTarget:
    """The flow, topic and consumer group one drill run exercises."""

    flow: str
    source: str
    target: str
    topic: str
    remote: str
    checkpoints_topic: str
    markers: tuple[str, ...]  # the source brokers the drill stops
    checkpoint_interval_s: float
    offset_lag_max: int
    run: str = ""

    @property
    def group(self) -> str:
        return f"drill-{self.run}"

    @property
    def prefix(self) -> bytes:
        return f"drill-{self.run}-".encode()


def _drill_target(outputs: StackExports, stack: str, flow_name: str | None, topic: str | None, log: Log) -> DrillTarget:
    """Pick the flow and topic, and check that the drill can run: brokers to stop, a healthy flow."""
    name = flow_name or sorted(outputs.flows)[0]
    f = flow(outputs, name)
    source, target = f.source, f.target
    topics = dict(f.topics)
    topic = topic or sorted(topics)[0]
    if topic not in topics:
        raise OpsError(f"drill: topic {topic} is not replicated by flow {name} (topics: {', '.join(sorted(topics))})")
    markers = source_broker_markers(stack, source)
    if not markers:
        pattern = process_marker(stack, brokers_path(source)) + "N"
        raise OpsError(
            f"drill: no running broker of cluster {source} in stack {stack} (markers {pattern}). "
            "The drill stops the source by its local-platform processes; next step: deploy the stack on the "
            "local platform (`bin/pulumi up`), or run `bin/pulumi refresh` + `up` if the brokers are down."
        )
    states = connectors.wait_healthy(outputs, [name], HEALTHY_WAIT_S, log=log)
    unhealthy = [c for c in states if not c.healthy]
    if unhealthy:
        raise OpsError(
            f"drill: flow {name} is not healthy ({connectors.describe(unhealthy)}). "
            f"Next step: `bin/connectors --stack {stack} status --flow {name}`, fix, and run the drill again."
        )
    return DrillTarget(
        flow=name,
        source=source,
        target=target,
        topic=topic,
        remote=topics[topic],
        checkpoints_topic=f.checkpoints_topic,
        markers=tuple(markers),
        checkpoint_interval_s=float(
            _live_setting(outputs, name, "checkpoint", "emit.checkpoints.interval.seconds", "60")
        ),
        offset_lag_max=int(_live_setting(outputs, name, "source", "offset.lag.max", str(f.offset_lag_max))),
        run=uuid.uuid4().hex[:8],
    )


def _warm_up(
    outputs: StackExports,
    stack: str,
    t: DrillTarget,
    s: DrillSettings,
    producer: LoadProducer,
    consumer: SourceConsumer,
    log: Log,
) -> None:
    """1. The group exists and MM2 checkpoints it before the failure can happen."""
    log(f"warm-up: {s.warmup_records} records; waiting for MM2 to checkpoint {t.group} ...")
    deadline = time.monotonic() + s.checkpoint_wait_s
    while checkpointed(outputs, t.target, t.checkpoints_topic, t.group, t.remote) == 0:
        raise_thread_errors(producer, consumer)
        if time.monotonic() > deadline:
            states = connectors.run(outputs, connectors.Operation.STATUS, flows=[t.flow], log=log)
            raise OpsError(
                f"drill: MM2 wrote no checkpoint for {t.group} to {t.checkpoints_topic} on {t.target} within "
                f"{s.checkpoint_wait_s:.0f}s ({len(consumer.consumed)} of {consumer.polled} records polled "
                f"were the drill's, {consumer.commits} commits on {t.source}, last consumer error "
                f"{consumer.last_error or 'none'}, {len(producer.acked)} acknowledged). Connectors:\n"
                f"{connectors.render_states(states)}\nNext step: "
                f"`bin/connectors --stack {stack} status --flow {t.flow}` and the checkpoint connector's worker log."
            )
        time.sleep(1)
    log(f"warm-up done: {len(consumer.consumed)} consumed, {t.group} checkpointed")


def _load_until_failure(
    t: DrillTarget, s: DrillSettings, producer: LoadProducer, consumer: SourceConsumer, log: Log
) -> None:
    """2. Load at --rate while the group consumes part of it, until --fail-at is acknowledged."""
    producer.rate = s.rate
    producer.limit = s.warmup_records + s.records
    consumer.target = s.warmup_records + int(s.records * s.consume_fraction)
    fail_at = s.warmup_records + int(s.records * s.fail_at)
    deadline = time.monotonic() + s.records / s.rate * 4 + 120
    last_report = 0.0
    while len(producer.acked) < fail_at:
        raise_thread_errors(producer, consumer)
        if time.monotonic() > deadline:
            raise OpsError(
                f"drill: only {len(producer.acked)} of {fail_at} records acknowledged by {t.source} in time; "
                f"the machine or {t.source} is too slow for --rate {s.rate}. Next step: lower --rate."
            )
        if time.monotonic() - last_report >= 5:
            last_report = time.monotonic()
            log(f"load: {len(producer.acked)} acknowledged, {len(consumer.consumed)} consumed on {t.source}")
        time.sleep(0.05)


def _start_group_at_end(outputs: StackExports, t: DrillTarget) -> int:
    """The group starts at the topic's current end, so it sees only this drill's records; returns partitions."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(kafka_config(outputs, t.source, **{"log_level": 0}))  # quiet once the source is gone
    md = admin.list_topics(t.topic, timeout=30).topics[t.topic]
    partitions = len(md.partitions)
    probe = _read_ends(outputs, t.source, t.topic, partitions)
    failover.commit_offsets(admin, t.group, [TopicPartition(t.topic, p, off) for p, off in probe.items()], 30)
    return partitions


def run_drill(
    outputs: StackExports,
    stack: str,
    *,
    flow_name: str | None = None,
    topic: str | None = None,
    settings: DrillSettings | None = None,
    log: Log = print,
) -> DrillReport:
    """Run the whole drill against a deployed stack; stops the flow's source brokers."""
    s = settings or DrillSettings()
    if s.problems():
        raise OpsError("drill settings: " + "; ".join(s.problems()))
    t = _drill_target(outputs, stack, flow_name, topic, log)
    log(
        f"drill {t.run}: flow {t.flow}, {t.topic} -> {t.remote}, group {t.group}; {s.records} records at "
        f"{s.rate}/s, consume {s.consume_fraction:.0%} on {t.source}, stop {t.source} ({', '.join(t.markers)}) at "
        f"{s.fail_at:.0%}; checkpoint interval {t.checkpoint_interval_s:g}s, offset.lag.max {t.offset_lag_max}"
    )
    partitions = _start_group_at_end(outputs, t)
    producer = LoadProducer(
        kafka_config(
            outputs,
            t.source,
            **{"linger.ms": 5, "enable.idempotence": True, "message.timeout.ms": 15000, "log_level": 0},
        ),
        t.topic,
        t.run,
        s,
    )
    consumer = SourceConsumer(
        kafka_config(
            outputs,
            t.source,
            **{"group.id": t.group, "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": 0},
        ),
        t.topic,
        t.prefix,
    )
    producer.start()
    consumer.target = s.warmup_records
    consumer.start()
    try:
        _warm_up(outputs, stack, t, s, producer, consumer, log)
        _load_until_failure(t, s, producer, consumer, log)
        # 3. failure.
        log(f"stopping {t.source}: {len(producer.acked)} acknowledged, {len(consumer.consumed)} consumed on {t.source}")
        stopped = stop_brokers(stack, t.source, s.signal, log)
        consumer.stop_event.set()
        producer.finish()
        # 4. failover, 5. consume on DR, 6. read back.
        on_dr, first, failover_s, remote_keys = _fail_over_and_consume(outputs, t, s, consumer, log)
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
        checkpoint_interval_s=t.checkpoint_interval_s,
        offset_lag_max=t.offset_lag_max,
        partitions=partitions,
        time_to_first_record_s=None if first is None else first - stopped,
        failover_s=failover_s,
    )
    return DrillReport(stack, t.flow, t.source, t.target, t.topic, t.remote, t.group, s.signal, figures, asdict(s))


def _fail_over_and_consume(
    outputs: StackExports, t: DrillTarget, s: DrillSettings, consumer: SourceConsumer, log: Log
) -> tuple[list[bytes], float | None, float, list[bytes]]:
    """(drill keys consumed on DR, when the first came, how long the failover took, the remote topic's keys)."""
    began = time.monotonic()
    plan, _ = failover.run_failover(outputs, failed=t.source, to=t.target, flow_name=t.flow, groups=[t.group], log=log)
    failover_s = time.monotonic() - began
    if plan.refused:
        raise OpsError("drill: the failover was refused:\n" + "\n".join(plan.problems))
    log(f"consuming {t.remote} on {t.target} as {t.group} ...")
    on_dr, first = consume_on_dr(outputs, t.target, t.remote, t.group, t.prefix, s.consume_timeout_s, log)
    consumer.join(10)
    log(f"reading {t.remote} on {t.target} back ...")
    return on_dr, first, failover_s, read_remote(outputs, t.target, t.remote, t.prefix)


def _read_ends(outputs: StackExports, alias: str, topic: str, partitions: int) -> dict[int, int]:
    _, ends = failover.end_offsets(outputs, alias, [topic], timeout_s=30)
    return {p: ends[(topic, p)] for p in range(partitions)}


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
        outputs = load_exports(args.stack, args.outputs)
        report = run_drill(outputs, args.stack, flow_name=args.flow, topic=args.topic, settings=settings, log=log)
        print(json.dumps(report.to_dict(), indent=2) if args.json else render_report(report), flush=True)
        code = 0 if report.figures.ok else 1
    except (OpsError, OutputsError) as exc:
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
