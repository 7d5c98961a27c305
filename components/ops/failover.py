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

Pure planning (decoding, translation, lag estimates, rendering, failback steps) is in plain
functions at the top, tested with inline data; Kafka I/O is in `observe`, `execute` and `main`.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from typing import Any

from components.ops.stack_outputs import OpsError, connect_client, flow, kafka_config, load_outputs

CHECKPOINT_VERSION = 0
# Group states in which members are (or are about to be) consuming: a commit would be refused
# by the broker (UNKNOWN_MEMBER_ID) or would race the running consumers.
ACTIVE_STATES = frozenset({"STABLE", "PREPARING_REBALANCING", "COMPLETING_REBALANCING", "ASSIGNING", "RECONCILING"})

# --------------------------------------------------------------------------------------------
# Checkpoint records (mm2-internals.md 3.1): key = group STRING, topic STRING, partition INT32;
# value = version INT16 (0), upstream INT64, downstream INT64, metadata STRING. Big-endian,
# STRING = INT16 length + UTF-8.
# --------------------------------------------------------------------------------------------


class CheckpointFormatError(ValueError):
    """A record in the checkpoints topic does not follow MM2's Checkpoint layout."""


@dataclass(frozen=True)
class Checkpoint:
    group: str
    topic: str  # the remote (downstream) topic name, e.g. primary.orders
    partition: int
    upstream_offset: int  # the group's committed offset on the source cluster
    downstream_offset: int  # the translated offset on the target cluster
    metadata: str = ""
    timestamp_ms: int = 0  # when MM2 listed the source group's offsets


def _take(data: bytes, pos: int, n: int, what: str) -> tuple[bytes, int]:
    if pos + n > len(data):
        raise CheckpointFormatError(f"checkpoint {what}: truncated at byte {pos} (need {n}, have {len(data) - pos})")
    return data[pos : pos + n], pos + n


def _string(data: bytes, pos: int, what: str) -> tuple[str, int]:
    raw, pos = _take(data, pos, 2, what)
    (n,) = struct.unpack(">h", raw)
    if n < 0:
        raise CheckpointFormatError(f"checkpoint {what}: negative string length {n}")
    raw, pos = _take(data, pos, n, what)
    return raw.decode("utf-8"), pos


def decode_checkpoint(key: bytes, value: bytes, timestamp_ms: int = 0) -> Checkpoint:
    """One record of `<source>.checkpoints.internal` as a Checkpoint."""
    group, pos = _string(key, 0, "key")
    topic, pos = _string(key, pos, "key")
    raw, pos = _take(key, pos, 4, "key")
    (partition,) = struct.unpack(">i", raw)
    if pos != len(key):
        raise CheckpointFormatError(f"checkpoint key: {len(key) - pos} trailing bytes")
    raw, vpos = _take(value, 0, 18, "value")
    version, upstream, downstream = struct.unpack(">hqq", raw)
    if version != CHECKPOINT_VERSION:
        raise CheckpointFormatError(f"checkpoint value: unknown version {version} (MM2 writes {CHECKPOINT_VERSION})")
    metadata, vpos = _string(value, vpos, "value")
    if vpos != len(value):
        raise CheckpointFormatError(f"checkpoint value: {len(value) - vpos} trailing bytes")
    return Checkpoint(group, topic, partition, upstream, downstream, metadata, timestamp_ms)


def encode_checkpoint(cp: Checkpoint) -> tuple[bytes, bytes]:
    """(key, value) bytes as MM2 writes them; used by tests and drills to build records."""

    def string(text: str) -> bytes:
        raw = text.encode("utf-8")
        return struct.pack(">h", len(raw)) + raw

    key = string(cp.group) + string(cp.topic) + struct.pack(">i", cp.partition)
    value = struct.pack(">hqq", CHECKPOINT_VERSION, cp.upstream_offset, cp.downstream_offset) + string(cp.metadata)
    return key, value


CheckpointKey = tuple[str, str, int]  # (group, remote topic, partition)


def latest_checkpoints(records: Iterable[Checkpoint]) -> dict[CheckpointKey, Checkpoint]:
    """The newest checkpoint per key, records given in topic order (what compaction keeps)."""
    newest: dict[CheckpointKey, Checkpoint] = {}
    for cp in records:
        newest[(cp.group, cp.topic, cp.partition)] = cp
    return newest


# --------------------------------------------------------------------------------------------
# The plan (pure)
# --------------------------------------------------------------------------------------------


class Action(str, Enum):
    COMMIT = "commit"  # commit the translated offset on DR
    KEEP = "keep"  # the DR group is already at or past the translated offset
    NO_CHECKPOINT = "no-checkpoint"  # nothing to commit: consumers fall back to auto.offset.reset


@dataclass(frozen=True)
class TargetGroup:
    """A consumer group as the DR cluster sees it."""

    state: str  # EMPTY, STABLE, ... or ABSENT (never seen on DR)
    members: int = 0
    committed: Mapping[tuple[str, int], int] = field(default_factory=dict)  # (remote topic, partition)

    @property
    def active(self) -> bool:
        return self.members > 0 or self.state in ACTIVE_STATES


@dataclass(frozen=True)
class SourceView:
    """What the source cluster still tells, when it answers."""

    committed: Mapping[tuple[str, str, int], int]  # (group, source topic, partition) -> offset
    ends: Mapping[tuple[str, int], int]  # (source topic, partition) -> log-end offset


@dataclass(frozen=True)
class PartitionPlan:
    group: str
    remote_topic: str
    partition: int
    action: Action
    checkpoint: Checkpoint | None
    target_committed: int | None
    start_offset: int | None  # where consumers of the group resume on DR (None: auto.offset.reset)
    source_committed: int | None
    reread_min: int | None
    reread_max: int | None  # None: unknown (the source does not answer)


@dataclass(frozen=True)
class GroupPlan:
    group: str
    target_state: str
    target_members: int
    partitions: tuple[PartitionPlan, ...]

    @property
    def active(self) -> bool:
        return TargetGroup(self.target_state, self.target_members).active

    @property
    def commits(self) -> tuple[tuple[str, int, int, str], ...]:
        """(remote topic, partition, offset, metadata) to commit on DR."""
        return tuple(
            (p.remote_topic, p.partition, p.start_offset, p.checkpoint.metadata if p.checkpoint else "")
            for p in self.partitions
            if p.action is Action.COMMIT and p.start_offset is not None
        )

    @property
    def newest_checkpoint_ms(self) -> int | None:
        stamps = [p.checkpoint.timestamp_ms for p in self.partitions if p.checkpoint and p.checkpoint.timestamp_ms]
        return max(stamps) if stamps else None

    @property
    def reread_range(self) -> tuple[int, int | None]:
        low = sum(p.reread_min or 0 for p in self.partitions if p.checkpoint)
        highs = [p.reread_max for p in self.partitions if p.checkpoint]
        return low, (None if any(h is None for h in highs) else sum(h or 0 for h in highs))


@dataclass(frozen=True)
class PartitionLag:
    source_topic: str
    remote_topic: str
    partition: int
    source_end: int | None
    remote_end: int | None
    missing: int | None  # records on the source not (yet) on DR; None: unknown


@dataclass(frozen=True)
class FailoverPlan:
    flow: str
    failed: str
    to: str
    target_bootstrap: str
    remote_topics: tuple[str, ...]
    source_reachable: bool
    source_error: str
    offset_lag_max: int
    now_ms: int
    groups: tuple[GroupPlan, ...]
    lag: tuple[PartitionLag, ...]
    problems: tuple[str, ...] = ()  # any problem refuses the whole failover
    warnings: tuple[str, ...] = ()

    @property
    def refused(self) -> bool:
        return bool(self.problems)

    @property
    def missing_total(self) -> int | None:
        values = [entry.missing for entry in self.lag]
        return None if any(v is None for v in values) else sum(v or 0 for v in values)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for group in data["groups"]:
            for part in group["partitions"]:
                part["action"] = part["action"].value if isinstance(part["action"], Action) else part["action"]
        data["refused"] = self.refused
        data["missing_total"] = self.missing_total
        data["reread"] = {g.group: dict(zip(("min", "max"), g.reread_range, strict=True)) for g in self.groups}
        return data


def estimate_missing(source_end: int, remote_end: int, anchor: Checkpoint | None, offset_lag_max: int) -> int:
    """Records of a source partition not yet on its remote partition.

    MM2 copies a partition record by record, so downstream offsets are dense and, when the flow
    started at the source's first offset, equal the upstream ones. A checkpoint pairs an upstream
    with a downstream offset; if they differ by more than the translation slack the partition is
    shifted (retention or compaction before the flow started) and the estimate is re-based on it.
    """
    shift = 0
    if anchor is not None and abs(anchor.upstream_offset - anchor.downstream_offset) > offset_lag_max:
        shift = anchor.upstream_offset - anchor.downstream_offset
    return max(0, source_end - (remote_end + shift))


def plan_partition(
    group: str,
    remote_topic: str,
    partition: int,
    checkpoint: Checkpoint | None,
    target_committed: int | None,
    source_committed: int | None,
    offset_lag_max: int,
) -> PartitionPlan:
    """Where one group resumes on one remote partition, and how much it re-reads there.

    Consumers resuming at the translated offset D re-read what the group consumed on the source
    after the checkpoint (C - U, known only while the source answers) plus the translation slack
    (D trails the exact position by 0 to offset.lag.max records). A DR position T already past D
    is kept, as MM2's own offset sync does, and shortens the re-read by T - D.
    """
    if checkpoint is None:
        return PartitionPlan(
            group,
            remote_topic,
            partition,
            Action.NO_CHECKPOINT,
            None,
            target_committed,
            target_committed,
            source_committed,
            None,
            None,
        )
    d = checkpoint.downstream_offset
    if target_committed is not None and target_committed >= d:
        action, start = Action.KEEP, target_committed
    else:
        action, start = Action.COMMIT, d
    ahead = start - d
    # The slack is below offset.lag.max only if replication had caught up with the group when the
    # checkpoint was taken; otherwise the translation fell back to an older sync and U - D shows
    # it (on partitions whose offsets line up, U - D is the slack itself).
    slack_max = max(offset_lag_max, checkpoint.upstream_offset - d)
    if source_committed is not None:
        progressed = max(0, source_committed - checkpoint.upstream_offset)
        reread_min: int | None = max(0, progressed - ahead)
        reread_max: int | None = max(0, progressed + slack_max - ahead)
    else:
        reread_min, reread_max = 0, None
    return PartitionPlan(
        group,
        remote_topic,
        partition,
        action,
        checkpoint,
        target_committed,
        start,
        source_committed,
        reread_min,
        reread_max,
    )


def build_plan(
    *,
    flow_name: str,
    failed: str,
    to: str,
    target_bootstrap: str,
    topics: Mapping[str, str],
    remote_partitions: Mapping[str, int],
    checkpoints: Mapping[CheckpointKey, Checkpoint],
    groups: Sequence[str],
    groups_requested: bool,
    target_groups: Mapping[str, TargetGroup],
    source: SourceView | None,
    source_error: str,
    remote_ends: Mapping[tuple[str, int], int],
    offset_lag_max: int,
    now_ms: int,
) -> FailoverPlan:
    """The whole failover plan from what was observed; no I/O.

    `topics` maps source topic -> remote topic for the flow; `remote_partitions` gives each remote
    topic's partition count on DR (0 or absent: the topic is not there).
    """
    remote_to_source = {remote: src for src, remote in topics.items()}
    problems: list[str] = []
    warnings: list[str] = []
    if source is None:
        warnings.append(
            f"source {failed} does not answer ({source_error or 'no reason given'}): the groups' last positions "
            f"on {failed} and the replication lag at the failure are unknown; records produced to {failed} "
            "after the last replicated one stay there until it is back (see --failback-plan)"
        )
    for remote in sorted(remote_to_source):
        if not remote_partitions.get(remote):
            warnings.append(f"remote topic {remote} does not exist on {to}: nothing of it was replicated yet")

    group_plans: list[GroupPlan] = []
    for group in groups:
        own = {(t, p): cp for (g, t, p), cp in checkpoints.items() if g == group and t in remote_to_source}
        if not own:
            if groups_requested:
                problems.append(
                    f"group {group}: no checkpoint for the remote topics {', '.join(sorted(remote_to_source))} in the "
                    f"flow's checkpoints topic on {to}. MM2 checkpoints only groups that match the flow's groups "
                    f"filter and have committed offsets on replicated topics. Next step: check the group name, "
                    f"`bin/connectors status --flow {flow_name}` and the flow's `groups` setting"
                )
            continue
        tgroup = target_groups.get(group, TargetGroup("ABSENT"))
        parts: list[PartitionPlan] = []
        for remote in sorted({t for t, _ in own}):
            for p in range(max(remote_partitions.get(remote, 0), 1 + max(q for t, q in own if t == remote))):
                src_committed = None
                if source is not None:
                    src_committed = source.committed.get((group, remote_to_source[remote], p))
                parts.append(
                    plan_partition(
                        group,
                        remote,
                        p,
                        own.get((remote, p)),
                        tgroup.committed.get((remote, p)),
                        src_committed,
                        offset_lag_max,
                    )
                )
        plan = GroupPlan(group, tgroup.state, tgroup.members, tuple(parts))
        group_plans.append(plan)
        if plan.active:
            problems.append(
                f"group {group} is active on {to} ({tgroup.state}, {tgroup.members} member(s)): its consumers "
                f"already read from {to}, and committing under them would fail or rewind them. Next step: stop "
                f"those consumers and run the failover again, or leave the group out (--group)"
            )
        # A partition the group never committed on the source behaves on DR as it did there.
        blank = [
            f"{p.remote_topic}-{p.partition}"
            for p in parts
            if p.action is Action.NO_CHECKPOINT and (source is None or p.source_committed is not None)
        ]
        if blank:
            warnings.append(
                f"group {group}: no checkpoint for {', '.join(blank)}; its consumers start there at their "
                "auto.offset.reset (earliest re-reads the partition, latest may skip records)"
            )
        behind = [p for p in parts if p.checkpoint and p.reread_min]
        if behind:
            warnings.append(
                f"group {group}: the newest checkpoint is behind its position on {failed} by "
                f"{sum(p.reread_min or 0 for p in behind)} records on {len(behind)} partition(s) (checkpoints are "
                "emitted every emit.checkpoints.interval.seconds); wait for the next one, or accept the re-read"
            )
        for p in parts:
            if (
                p.action is Action.KEEP
                and p.checkpoint is not None
                and p.start_offset is not None
                and p.start_offset > p.checkpoint.downstream_offset + offset_lag_max
            ):
                warnings.append(
                    f"group {group}: {p.remote_topic}-{p.partition} on {to} is already at {p.start_offset}, "
                    f"{p.start_offset - p.checkpoint.downstream_offset} past the translated offset; kept "
                    "(the group consumed there before); reset it by hand if that position is not its own"
                )
    if not groups:
        problems.append(
            f"flow {flow_name}: the checkpoints topic on {to} holds no checkpoint for any group yet. Next step: "
            f"check that the checkpoint connector runs (`bin/connectors status --flow {flow_name}`) and that the "
            "groups committed offsets on the replicated topics"
        )

    # Replication lag per partition, anchored on the most advanced checkpoint of any group.
    anchors: dict[tuple[str, int], Checkpoint] = {}
    for (_, t, p), cp in checkpoints.items():
        if (t, p) not in anchors or cp.upstream_offset > anchors[(t, p)].upstream_offset:
            anchors[(t, p)] = cp
    lag: list[PartitionLag] = []
    for src, remote in sorted(topics.items()):
        count = remote_partitions.get(remote, 0)
        if source is not None:
            count = max(count, 1 + max((p for (t, p) in source.ends if t == src), default=-1))
        for p in range(count):
            s_end = source.ends.get((src, p)) if source is not None else None
            r_end = remote_ends.get((remote, p))
            missing = None
            if s_end is not None:
                missing = estimate_missing(s_end, r_end or 0, anchors.get((remote, p)), offset_lag_max)
            lag.append(PartitionLag(src, remote, p, s_end, r_end, missing))

    return FailoverPlan(
        flow=flow_name,
        failed=failed,
        to=to,
        target_bootstrap=target_bootstrap,
        remote_topics=tuple(sorted(remote_to_source)),
        source_reachable=source is not None,
        source_error=source_error,
        offset_lag_max=offset_lag_max,
        now_ms=now_ms,
        groups=tuple(group_plans),
        lag=tuple(lag),
        problems=tuple(problems),
        warnings=tuple(warnings),
    )


def _range(low: int | None, high: int | None) -> str:
    if high is None:
        return f"{low or 0}..? (+ what was consumed after the checkpoint)"
    return f"{low}" if low == high else f"{low}..{high}"


def render_plan(plan: FailoverPlan, *, dry_run: bool) -> str:
    """The plan as an operator reads it."""
    lines = [
        f"Failover plan: consumers of {plan.failed} move to {plan.to} (flow {plan.flow})"
        + ("  [dry run: nothing will be changed]" if dry_run else ""),
        f"  source {plan.failed}: "
        + ("answers" if plan.source_reachable else f"DOES NOT ANSWER ({plan.source_error})"),
        f"  offset.lag.max {plan.offset_lag_max}: translated offsets are never ahead (nothing is skipped); they "
        f"trail by fewer than {plan.offset_lag_max} records per partition when replication had caught up with "
        "the group at the checkpoint, by more when it lagged (checkpoint U -> D below)",
        "",
        f"Replication lag (records on {plan.failed} not on {plan.to}; they stay on {plan.failed} until failback):",
    ]
    for entry in plan.lag:
        src = "?" if entry.source_end is None else str(entry.source_end)
        dst = "absent" if entry.remote_end is None else str(entry.remote_end)
        missing = "unknown" if entry.missing is None else f"~{entry.missing}"
        lines.append(
            f"  {entry.source_topic} -> {entry.remote_topic} p{entry.partition}: "
            f"end on {plan.failed} {src}, on {plan.to} {dst}, missing {missing}"
        )
    total = plan.missing_total
    lines.append(f"  total possibly missing: {'unknown' if total is None else f'~{total}'}")
    for group in plan.groups:
        newest = group.newest_checkpoint_ms
        age = f"{(plan.now_ms - newest) / 1000:.1f}s old" if newest else "no timestamp"
        lines += [
            "",
            f"Group {group.group} on {plan.to}: {group.target_state}, {group.target_members} member(s); "
            f"newest checkpoint {age}",
        ]
        for p in group.partitions:
            if p.checkpoint is None:
                lines.append(f"  {p.remote_topic} p{p.partition}: no checkpoint -> auto.offset.reset")
                continue
            have = "none" if p.target_committed is None else str(p.target_committed)
            src = "" if p.source_committed is None else f", on {plan.failed} at {p.source_committed}"
            lines.append(
                f"  {p.remote_topic} p{p.partition}: checkpoint {p.checkpoint.upstream_offset} -> "
                f"{p.checkpoint.downstream_offset}{src}; {plan.to} has {have}; {p.action.value} {p.start_offset}; "
                f"re-read {_range(p.reread_min, p.reread_max)}"
            )
        low, high = group.reread_range
        lines.append(f"  expected duplicates (re-read): {_range(low, high)} records")
    if plan.warnings:
        lines += ["", "Warnings:", *(f"  - {w}" for w in plan.warnings)]
    if plan.problems:
        lines += ["", "REFUSED, nothing committed:", *(f"  - {p}" for p in plan.problems)]
    elif plan.groups:
        names = ", ".join(g.group for g in plan.groups)
        lines += [
            "",
            f"Next: start the consumers of {names} against {plan.to} ({plan.target_bootstrap}) subscribed to "
            f"{', '.join(plan.remote_topics)} (the remote topic names), same group.id; producers go to "
            f"{plan.to} too. Failback: --failback-plan.",
        ]
    return "\n".join(lines)


def failback_steps(
    *,
    flow_name: str,
    failed: str,
    to: str,
    topics: Mapping[str, str],
    worker_group: str,
    worker_group_cluster: str,
    separator: str = ".",
) -> list[str]:
    """Ordered steps to move producers and consumers back to `failed` once it is healthy again.

    The reverse flow must use DefaultReplicationPolicy: with both flows enabled the pair is a
    cycle, and only renaming remote topics stops records from looping (the policy pack's
    `no-name-preserving-replication-on-cycles` rule refuses anything else).
    """
    reverse = f"{to}->{failed}"
    local_topics = sorted(topics)
    back_remote = [f"{to}{separator}{t}" for t in local_topics]
    group_hint = (
        f"a worker group attached to {failed} (e.g. mm2:workerGroups.mm2-{failed}: {{cluster: {failed}, workers: 2, "
        f"restPort: <free port>}}), so MM2 writes into {failed} from Connect next to it"
        if worker_group_cluster != failed
        else f"worker group {worker_group} (it is attached to {failed})"
    )
    return [
        f"Keep producers and consumers on {to}. Bring {failed} back: `bin/pulumi refresh --stack <stack> --yes` "
        f"then `bin/pulumi up --stack <stack> --yes` (restarts its brokers in place, data kept).",
        f"Let flow {flow_name} catch up: records produced to {failed} before the failure that were not replicated "
        f"(the 'possibly missing' figure) now arrive in {', '.join(topics[t] for t in local_topics)} on {to}. "
        f"Check `bin/connectors --stack <stack> status --flow {flow_name}` and that the lag is 0 "
        f"(`bin/failover --failed {failed} --to {to} --dry-run`). Consumers on {to} read these late records.",
        f'Add the reverse flow to the stack config: mm2:flows."{reverse}" with topics {local_topics} (what '
        f'producers now write on {to}), groups [".*"], replicationPolicy {{class: default}} (never identity: '
        f"{flow_name} + {reverse} is a cycle), disasterRecovery: true, settings "
        f'{{sync.group.offsets.enabled: "true"}}, workerGroup: {group_hint}.',
        f"`bin/pulumi preview --stack <stack> --policy-pack policies`, then `bin/pulumi up --stack <stack> --yes`: "
        f"creates {', '.join(back_remote)} on {failed} and {to}.checkpoints.internal there.",
        f"Wait until {reverse} has caught up (`bin/connectors status --flow {reverse}`, lag 0 with "
        f"`bin/failover --failed {to} --to {failed} --flow {reverse} --dry-run`).",
        f"Maintenance window: stop the producers on {to}; wait until the lag of {reverse} is 0.",
        f"Stop the consumers on {to}; run `bin/failover --stack <stack> --failed {to} --to {failed} "
        f"--flow {reverse}` to commit their translated offsets on {failed}. MM2 maps offsets on "
        f"{', '.join(topics[t] for t in local_topics)} back to {', '.join(local_topics)} on {failed} (checkpoints of "
        f"topics that came from the target keep their original name), and offsets on {', '.join(local_topics)} "
        f"to {', '.join(back_remote)}.",
        f"Start the consumers on {failed} subscribed to {', '.join(local_topics)} and {', '.join(back_remote)} "
        f"(records written on {to} during the outage), then the producers on {failed} writing "
        f"{', '.join(local_topics)}.",
        f"Decide the steady state: keep {reverse} (active/active-ready; {flow_name} keeps protecting {failed}), "
        f"or, once consumers drained {', '.join(back_remote)}, remove {reverse} from the config and "
        f"`bin/pulumi up`. Resume {flow_name} if it was paused (`bin/connectors resume --flow {flow_name}`). "
        "Then run `bin/drill` on a throwaway stack to prove the runbook again.",
    ]


def render_failback(steps: Sequence[str], *, failed: str, to: str) -> str:
    lines = [f"Failback plan: move producers and consumers from {to} back to {failed}", ""]
    lines += [f"{i}. {step}" for i, step in enumerate(steps, 1)]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# I/O: observe the clusters, commit offsets
# --------------------------------------------------------------------------------------------


def resolve_flow(outputs: Mapping[str, Any], failed: str, to: str, flow_name: str | None) -> str:
    flows = outputs["flows"]
    if flow_name:
        f = flow(outputs, flow_name)
        if (f.get("source"), f.get("target")) != (failed, to):
            raise OpsError(
                f"flow {flow_name} replicates {f.get('source')} -> {f.get('target')}, not {failed} -> {to}. "
                "Next step: give --failed and --to matching the flow, or another --flow."
            )
        return flow_name
    matches = [name for name, f in flows.items() if f.get("source") == failed and f.get("target") == to]
    if not matches:
        have = ", ".join(f"{n} ({f.get('source')}->{f.get('target')})" for n, f in sorted(flows.items())) or "none"
        raise OpsError(
            f"no enabled flow replicates {failed} -> {to} in the stack outputs (flows: {have}). "
            "Next step: check --failed/--to; consumers can only fail over to a cluster that receives the flow."
        )
    return sorted(matches)[0]


def read_checkpoints(
    outputs: Mapping[str, Any], alias: str, topic: str, timeout_s: float = 30.0
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
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    pending.discard(msg.partition())
                continue
            if msg.key() is None or msg.value() is None:
                continue  # a tombstone: compaction's delete marker, not a checkpoint
            try:
                records.append(decode_checkpoint(msg.key(), msg.value(), msg.timestamp()[1]))
            except CheckpointFormatError as exc:
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
    outputs: Mapping[str, Any], alias: str, groups: Sequence[str], remote_topics: Sequence[str], timeout_s: float
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


def probe_source(outputs: Mapping[str, Any], alias: str, timeout_s: float = 5.0) -> str:
    """'' when cluster `alias` answers a metadata request within timeout_s, else why not."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(kafka_config(outputs, alias, **{"socket.timeout.ms": int(timeout_s * 1000), "log_level": 0}))
    try:
        md = admin.list_topics(timeout=timeout_s)
    except Exception as exc:
        return f"metadata request to {cluster_bootstrap(outputs, alias)} failed after {timeout_s:.0f}s: {exc}"
    return "" if md.brokers else f"{cluster_bootstrap(outputs, alias)} answered with no brokers"


def cluster_bootstrap(outputs: Mapping[str, Any], alias: str) -> str:
    return str(outputs["clusters"][alias]["bootstrap"])


def end_offsets(
    outputs: Mapping[str, Any], alias: str, topics: Iterable[str], timeout_s: float
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
    outputs: Mapping[str, Any], alias: str, groups: Sequence[str], topics: Sequence[str], timeout_s: float
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


def checkpoint_connector_warning(outputs: Mapping[str, Any], flow_name: str) -> str:
    """A warning when the flow's checkpoint connector is not RUNNING (its checkpoints may be stale)."""
    f = flow(outputs, flow_name)
    name = (f.get("connectors") or {}).get("checkpoint")
    group = f.get("workerGroup")
    if not name or not group:
        return ""
    try:
        with connect_client(outputs, str(group), retry_budget_s=5.0, timeout=5.0) as client:
            status = client.get_status(str(name))
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
    outputs: Mapping[str, Any],
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
    topics = {str(k): str(v) for k, v in (f.get("topics") or {}).items()}
    remote_topics = sorted(topics.values())
    lag_max = int(f.get("offsetLagMax") or 100)
    cp_topic = str(f.get("checkpointsTopic") or f"{failed}.checkpoints.internal")

    say(f"reading checkpoints from {cp_topic} on {to} ...")
    checkpoints = read_checkpoints(outputs, to, cp_topic, timeout_s)
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


def execute(outputs: Mapping[str, Any], plan: FailoverPlan, timeout_s: float = 30.0) -> list[CommitResult]:
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
    outputs: Mapping[str, Any],
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
        outputs = load_outputs(args.stack, args.outputs)
        if args.failback_plan:
            name = resolve_flow(outputs, args.failed, args.to, args.flow)
            f = flow(outputs, name)
            group = str(f.get("workerGroup", ""))
            steps = failback_steps(
                flow_name=name,
                failed=args.failed,
                to=args.to,
                topics={str(k): str(v) for k, v in (f.get("topics") or {}).items()},
                worker_group=group,
                worker_group_cluster=str((outputs["connect"].get(group) or {}).get("cluster", args.to)),
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
    except OpsError as exc:
        print(f"failover: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
