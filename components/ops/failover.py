"""Consumer failover to the DR cluster at MirrorMaker 2's translated offsets, and the failback plan.

    bin/failover --stack dev --failed primary --to dr [--group G ... | --flow primary->dr] [--dry-run]
    bin/failover --stack dev --failed primary --to dr --failback-plan
    bin/failover --outputs outputs.json --failed primary --to dr --json

What it does, in order:

1. reads the newest checkpoint per (group, remote topic, partition) from the flow's checkpoints
   topic (`<source>.checkpoints.internal` on the DR cluster; format: docs/failover.md);
2. looks at the source cluster if it still answers (group positions, end offsets) and at the DR
   cluster (remote topic end offsets, each group's state and committed offsets);
3. prints the plan: checkpoint freshness, replication lag (records that may be missing on DR),
   and per group what consumers will re-read (expected duplicates) and where they resume;
4. unless `--dry-run`, commits each group's translated offsets on the DR cluster for the remote
   topics. A group with active members on DR is refused (nothing is committed for any group):
   its consumers already run there and a commit would fail or fight them.

MM2's guarantee makes this safe: a translated offset is never ahead of the group's position, so
failing over never skips a record; it trails by fewer than `offset.lag.max` records per partition
near the live end, which consumers re-read. Like MM2's own group offset sync, a DR group is never
moved backwards: a partition already at or past its translated offset is kept.

Pure planning (translation, lag estimates, rendering) is in `components/ops/failover_plan.py`, the
failback steps in `failback.py`, both tested with inline data; Kafka I/O is here, in `observe`,
`execute` and `main`.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from components.mm2_records import Checkpoint, RecordFormatError, decode_checkpoint
from components.ops.clients import cluster, connect_client, flow, kafka_config
from components.ops.errors import OpsError
from components.ops.failback import failback_steps, render_failback
from components.ops.failover_plan import (
    CheckpointKey,
    FailoverPlan,
    SourceView,
    TargetGroup,
    build_plan,
    latest_checkpoints,
    render_plan,
)
from components.outputs.contract import OutputsError, StackExports
from components.outputs.loader import load_exports

_REFUSED_PROBE_S = 0.5  # one TCP connect of refused_everywhere: a refusal on a live network takes ms


def resolve_flow(outputs: StackExports, failed: str, to: str, flow_name: str | None) -> str:
    flows = outputs.flows
    if flow_name:
        f = flow(outputs, flow_name)
        if (f.source, f.target) != (failed, to):
            raise OpsError(
                f"flow {flow_name} replicates {f.source} -> {f.target}, not {failed} -> {to}. "
                "Next step: give --failed and --to matching the flow, or another --flow."
            )
        return flow_name
    matches = [name for name, f in flows.items() if f.source == failed and f.target == to]
    if not matches:
        have = ", ".join(f"{n} ({f.source}->{f.target})" for n, f in sorted(flows.items())) or "none"
        raise OpsError(
            f"no enabled flow replicates {failed} -> {to} in the stack outputs (flows: {have}). "
            "Next step: check --failed/--to; consumers can only fail over to a cluster that receives the flow."
        )
    return sorted(matches)[0]


def read_latest_checkpoints(
    outputs: StackExports, alias: str, topic: str, timeout_s: float = 30.0
) -> dict[CheckpointKey, Checkpoint] | None:
    """The newest checkpoint per key in `topic` on cluster `alias`; None when the topic is absent."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        kafka_config(
            outputs,
            alias,
            **{
                "group.id": "mm2-failover-reader",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "fetch.wait.max.ms": 10,  # the end shows at once, not after 500 ms: a switchover waits on it
                "log_level": 0,  # assign() only: the coordinator connection's close is noise
            },
        )
    )
    try:
        md = consumer.list_topics(topic, timeout=timeout_s)
        meta = md.topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            return None
        records: list[Checkpoint] = []
        pending = set()
        assignment = []
        for p in meta.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)
            if high > low:
                pending.add(p)
                assignment.append(TopicPartition(topic, p, OFFSET_BEGINNING))
        if not assignment:
            return {}
        consumer.assign(assignment)
        deadline = time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    pending.discard(msg.partition())
                continue
            key, value = msg.key(), msg.value()
            if key is None or value is None:
                continue  # a tombstone: compaction's delete marker, not a checkpoint
            try:
                records.append(decode_checkpoint(key, value, msg.timestamp()[1]))
            except RecordFormatError as exc:
                raise OpsError(
                    f"{topic} on {alias}, offset {msg.offset()}: {exc}. This tool reads MM2 checkpoint format "
                    "version 0; next step: check the MM2 version writing the topic."
                ) from exc
        if pending:
            raise OpsError(
                f"reading {topic} on {alias}: not at the end after {timeout_s:.0f}s (partitions {sorted(pending)}). "
                f"Next step: check that {alias} is healthy, or raise --timeout."
            )
        return latest_checkpoints(records)
    finally:
        consumer.close()


def _group_state(description: Any) -> str:
    state = getattr(description, "state", None)
    name = getattr(state, "name", None) or str(state or "UNKNOWN")
    return name.upper().replace("CONSUMERGROUPSTATE.", "")


def describe_target_groups(
    outputs: StackExports, alias: str, groups: Sequence[str], remote_topics: Sequence[str], timeout_s: float
) -> dict[str, TargetGroup]:
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(kafka_config(outputs, alias))
    found: dict[str, TargetGroup] = {}
    if not groups:
        return found
    descriptions = admin.describe_consumer_groups(list(groups), request_timeout=timeout_s)
    for group, future in descriptions.items():
        try:
            desc = future.result()
            state, members = _group_state(desc), len(desc.members or [])
        except KafkaException as exc:
            if "GROUP_ID_NOT_FOUND" in str(exc):
                state, members = "ABSENT", 0
            else:
                raise OpsError(f"describing consumer group {group} on {alias} failed: {exc}") from exc
        committed: dict[tuple[str, int], int] = {}
        if state not in ("ABSENT", "DEAD"):
            futures = admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group)], request_timeout=timeout_s
            )
            for tp in futures[group].result().topic_partitions or []:
                if tp.topic in remote_topics and tp.offset >= 0:
                    committed[(tp.topic, tp.partition)] = tp.offset
        found[group] = TargetGroup("ABSENT" if state == "DEAD" and not committed else state, members, committed)
    return found


def probe_source(outputs: StackExports, alias: str, timeout_s: float = 5.0) -> str:
    """'' when cluster `alias` answers a metadata request within timeout_s, else why not. A cluster
    where nothing listens (every bootstrap address refuses the connection) is called lost at once:
    the metadata request would only retry those refusals until timeout_s."""
    from confluent_kafka.admin import AdminClient

    bootstrap = cluster_bootstrap(outputs, alias)
    if refused_everywhere(bootstrap):
        return f"every address of {bootstrap} refused the connection: nothing listens there"
    admin = AdminClient(kafka_config(outputs, alias, **{"socket.timeout.ms": int(timeout_s * 1000), "log_level": 0}))
    try:
        md = admin.list_topics(timeout=timeout_s)
    except Exception as exc:
        return f"metadata request to {cluster_bootstrap(outputs, alias)} failed after {timeout_s:.0f}s: {exc}"
    return "" if md.brokers else f"{cluster_bootstrap(outputs, alias)} answered with no brokers"


def refused_everywhere(bootstrap: str, tries: int = 3, pause_s: float = 0.25) -> bool:
    """True when every address of `bootstrap` refuses a TCP connection, `tries` times `pause_s`
    apart (a broker restarting in that time counts as answering). Anything else (a connection, a
    timeout, a name that does not resolve) leaves it to the metadata request."""
    for attempt in range(tries):
        if attempt:
            time.sleep(pause_s)
        for address in bootstrap.split(","):
            host, _, port = address.strip().rpartition(":")
            try:
                socket.create_connection((host.strip("[]"), int(port)), timeout=_REFUSED_PROBE_S).close()
            except ConnectionRefusedError:
                continue
            except (OSError, ValueError):
                return False
            return False
    return True


def cluster_bootstrap(outputs: StackExports, alias: str) -> str:
    return cluster(outputs, alias).bootstrap


def end_offsets(
    outputs: StackExports, alias: str, topics: Iterable[str], timeout_s: float
) -> tuple[dict[str, int], dict[tuple[str, int], int]]:
    """(partition count per topic, log-end offset per (topic, partition)) on cluster `alias`."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(kafka_config(outputs, alias, **{"group.id": "mm2-failover-reader", "log_level": 0}))
    counts: dict[str, int] = {}
    ends: dict[tuple[str, int], int] = {}
    try:
        md = consumer.list_topics(timeout=timeout_s)
        for topic in topics:
            meta = md.topics.get(topic)
            if meta is None or meta.error is not None:
                counts[topic] = 0
                continue
            counts[topic] = len(meta.partitions)
            for p in meta.partitions:
                ends[(topic, p)] = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)[1]
    finally:
        consumer.close()
    return counts, ends


def source_view(
    outputs: StackExports, alias: str, groups: Sequence[str], topics: Sequence[str], timeout_s: float
) -> SourceView:
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    _, ends = end_offsets(outputs, alias, topics, timeout_s)
    admin = AdminClient(kafka_config(outputs, alias, **{"log_level": 0}))
    committed: dict[tuple[str, str, int], int] = {}
    for group in groups:
        futures = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=timeout_s)
        for tp in futures[group].result().topic_partitions or []:
            if tp.topic in topics and tp.offset >= 0:
                committed[(group, tp.topic, tp.partition)] = tp.offset
    return SourceView(committed, ends)


def checkpoint_connector_warning(outputs: StackExports, flow_name: str) -> str:
    """A warning when the flow's checkpoint connector is not RUNNING (its checkpoints may be stale)."""
    f = flow(outputs, flow_name)
    name = f.connectors.get("checkpoint")
    group = f.worker_group
    if not name or not group:
        return ""
    try:
        with connect_client(outputs, group, retry_budget_s=5.0, timeout=5.0) as client:
            status = client.get_status(name)
    except Exception as exc:
        return f"could not ask Connect for {name}'s status ({exc}); checkpoint freshness unverified"
    states = [((status or {}).get("connector") or {}).get("state")]
    states += [t.get("state") for t in (status or {}).get("tasks") or []]
    if status is None or any(s != "RUNNING" for s in states):
        return (
            f"checkpoint connector {name} is not healthy ({', '.join(str(s) for s in states)}): its checkpoints "
            f"may be stale. Next step: `bin/connectors status --flow {flow_name}`"
        )
    return ""


def observe(
    outputs: StackExports,
    *,
    failed: str,
    to: str,
    flow_name: str | None = None,
    groups: Sequence[str] = (),
    timeout_s: float = 30.0,
    source_probe_s: float = 5.0,
    log: Any = None,
) -> FailoverPlan:
    """Look at both clusters and build the plan (changes nothing)."""
    say = log or (lambda _msg: None)
    name = resolve_flow(outputs, failed, to, flow_name)
    f = flow(outputs, name)
    topics = dict(f.topics)
    remote_topics = sorted(topics.values())
    lag_max = f.offset_lag_max
    cp_topic = f.checkpoints_topic

    say(f"reading checkpoints from {cp_topic} on {to} ...")
    checkpoints = read_latest_checkpoints(outputs, to, cp_topic, timeout_s)
    if checkpoints is None:
        checkpoints = {}
    wanted = list(dict.fromkeys(groups)) or sorted({g for g, t, _ in checkpoints if t in remote_topics})
    say(f"{len(checkpoints)} checkpoint(s); groups: {', '.join(wanted) or 'none'}")

    say(f"probing {failed} ({cluster_bootstrap(outputs, failed)}, {source_probe_s:.0f}s) ...")
    source_error = probe_source(outputs, failed, source_probe_s)
    source = None
    if not source_error:
        try:
            source = source_view(outputs, failed, wanted, sorted(topics), timeout_s)
        except Exception as exc:  # the source died between the probe and now
            source_error = f"answered the probe, then failed: {exc}"
    say(f"reading end offsets of {', '.join(remote_topics)} and group states on {to} ...")
    counts, ends = end_offsets(outputs, to, remote_topics, timeout_s)
    target_groups = describe_target_groups(outputs, to, wanted, remote_topics, timeout_s)

    plan = build_plan(
        flow_name=name,
        failed=failed,
        to=to,
        target_bootstrap=cluster_bootstrap(outputs, to),
        topics=topics,
        remote_partitions=counts,
        checkpoints=checkpoints,
        groups=wanted,
        groups_requested=bool(groups),
        target_groups=target_groups,
        source=source,
        source_error=source_error,
        remote_ends=ends,
        offset_lag_max=lag_max,
        now_ms=int(time.time() * 1000),
    )
    warning = checkpoint_connector_warning(outputs, name) if source is not None else ""
    if warning:
        plan = replace(plan, warnings=(*plan.warnings, warning))
    return plan


# Partition-level answers of OffsetCommit that pass on their own: the group coordinator is
# moving or still loading `__consumer_offsets` (the first group operation on a fresh cluster).
_RETRIABLE_COMMIT_ERRORS = (
    "COORDINATOR_LOAD_IN_PROGRESS",
    "COORDINATOR_NOT_AVAILABLE",
    "NOT_COORDINATOR",
    "REQUEST_TIMED_OUT",
    "UNKNOWN_TOPIC_OR_PART",
    "NOT_LEADER",
)


def commit_offsets(admin: Any, group: str, tps: Sequence[Any], timeout_s: float, retry_s: float = 60.0) -> None:
    """alter_consumer_group_offsets, checked partition by partition.

    The call succeeds as a whole while single partitions carry errors; those are retried while
    they are transient and raised otherwise, so a commit is never silently missing.
    """
    from confluent_kafka import ConsumerGroupTopicPartitions

    deadline = time.monotonic() + retry_s
    delay = 0.5
    while True:
        answer = admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, list(tps))], request_timeout=timeout_s
        )[group].result()
        errors = [(tp.topic, tp.partition, tp.error) for tp in answer.topic_partitions or [] if tp.error is not None]
        if not errors:
            return
        transient = all(any(name in str(err) for name in _RETRIABLE_COMMIT_ERRORS) for _, _, err in errors)
        if not transient or time.monotonic() > deadline:
            raise OpsError(
                f"committing offsets for group {group} failed on "
                + ", ".join(f"{t}-{p}: {err}" for t, p, err in errors)
            )
        time.sleep(delay)
        delay = min(delay * 2, 5.0)


@dataclass(frozen=True)
class CommitResult:
    group: str
    committed: tuple[tuple[str, int, int], ...]
    verified: bool


def execute(outputs: StackExports, plan: FailoverPlan, timeout_s: float = 30.0) -> list[CommitResult]:
    """Commit every group's translated offsets on the DR cluster, then read them back."""
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient

    if plan.refused:
        raise OpsError("failover refused:\n" + "\n".join(f"  - {p}" for p in plan.problems))
    admin = AdminClient(kafka_config(outputs, plan.to))
    results: list[CommitResult] = []
    for group in plan.groups:
        commits = group.commits
        if not commits:
            results.append(CommitResult(group.group, (), True))
            continue
        tps = [TopicPartition(t, p, off, meta) if meta else TopicPartition(t, p, off) for t, p, off, meta in commits]
        try:
            commit_offsets(admin, group.group, tps, timeout_s)
        except (KafkaException, OpsError) as exc:
            raise OpsError(
                f"committing offsets for group {group.group} on {plan.to} failed: {exc}. "
                + (
                    f"The group became active meanwhile: stop its consumers on {plan.to} and run the failover again."
                    if "UNKNOWN_MEMBER_ID" in str(exc) or "NON_EMPTY" in str(exc)
                    else f"Next step: check that {plan.to} is healthy and run the failover again (it is idempotent)."
                )
                + f" Groups committed before this one: {', '.join(r.group for r in results) or 'none'}."
            ) from exc
        back = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group.group, [TopicPartition(t, p) for t, p, _, _ in commits])],
            request_timeout=timeout_s,
        )[group.group].result()
        got = {(tp.topic, tp.partition): tp.offset for tp in back.topic_partitions or []}
        verified = all(got.get((t, p)) == off for t, p, off, _ in commits)
        results.append(CommitResult(group.group, tuple((t, p, off) for t, p, off, _ in commits), verified))
    return results


def run_failover(
    outputs: StackExports,
    *,
    failed: str,
    to: str,
    flow_name: str | None = None,
    groups: Sequence[str] = (),
    dry_run: bool = False,
    timeout_s: float = 30.0,
    source_probe_s: float = 5.0,
    log: Any = print,
) -> tuple[FailoverPlan, list[CommitResult]]:
    """Observe, print the plan, and commit unless dry_run or refused (the drill calls this)."""
    plan = observe(
        outputs,
        failed=failed,
        to=to,
        flow_name=flow_name,
        groups=groups,
        timeout_s=timeout_s,
        source_probe_s=source_probe_s,
        log=log,
    )
    log(render_plan(plan, dry_run=dry_run))
    if dry_run or plan.refused:
        return plan, []
    results = execute(outputs, plan, timeout_s)
    for r in results:
        what = ", ".join(f"{t}-{p}@{o}" for t, p, o in r.committed) or "nothing to commit (already in place)"
        log(f"group {r.group} on {to}: {what}" + ("" if r.verified else "  (READ-BACK MISMATCH)"))
    return plan, results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bin/failover", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stack", help="stack name (outputs via bin/pulumi stack output)")
    parser.add_argument("--outputs", help="JSON file from `pulumi stack output --json --show-secrets`")
    parser.add_argument("--failed", required=True, help="alias of the failed (source) cluster, e.g. primary")
    parser.add_argument("--to", required=True, help="alias of the DR cluster the consumers move to, e.g. dr")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--group", action="append", default=[], help="consumer group to move (repeatable)")
    which.add_argument("--flow", help="move every checkpointed group of this flow (default: the failed->to flow)")
    parser.add_argument("--dry-run", action="store_true", help="show the plan, change nothing")
    parser.add_argument("--failback-plan", action="store_true", help="print the ordered failback steps and exit")
    parser.add_argument("--json", action="store_true", help="print the plan (and commits) as JSON")
    parser.add_argument("--timeout", type=float, default=30.0, help="bound for each Kafka request (s)")
    parser.add_argument(
        "--source-timeout", type=float, default=5.0, help="how long the failed cluster gets to answer (s)"
    )
    args = parser.parse_args(argv)
    try:
        outputs = load_exports(args.stack, args.outputs)
        if args.failback_plan:
            name = resolve_flow(outputs, args.failed, args.to, args.flow)
            f = flow(outputs, name)
            attached = outputs.connect.get(f.worker_group)
            steps = failback_steps(
                flow_name=name,
                failed=args.failed,
                to=args.to,
                topics=dict(f.topics),
                worker_group=f.worker_group,
                worker_group_cluster=(attached.cluster if attached else "") or args.to,
            )
            text = render_failback(steps, failed=args.failed, to=args.to)
            text = text.replace("<stack>", args.stack or "<stack>")
            print(json.dumps({"steps": steps}, indent=2) if args.json else text)
            return 0
        log = (lambda msg: print(msg, file=sys.stderr)) if args.json else print
        plan, results = run_failover(
            outputs,
            failed=args.failed,
            to=args.to,
            flow_name=args.flow,
            groups=args.group,
            dry_run=args.dry_run,
            timeout_s=args.timeout,
            source_probe_s=args.source_timeout,
            log=log,
        )
        if args.json:
            print(json.dumps({"plan": plan.to_dict(), "commits": [asdict(r) for r in results]}, indent=2))
        if plan.refused:
            return 2
        return 0 if all(r.verified for r in results) else 1
    except (OpsError, OutputsError) as exc:
        print(f"failover: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
