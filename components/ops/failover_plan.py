"""The failover plan, pure: where each consumer group resumes on the DR cluster, and what it costs.

From what was observed on both clusters (the newest checkpoints, group positions, end offsets)
`build_plan` decides per group and partition whether to commit MM2's translated offset or keep a
DR position already past it, estimates the re-read (expected duplicates) and the records not yet
replicated, and lists the problems that refuse the failover. `render_plan` prints it for an
operator. No I/O: `components/ops/failover.py` observes the clusters and commits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from components.mm2_records import Checkpoint

# Group states in which members are (or are about to be) consuming: a commit would be refused
# by the broker (UNKNOWN_MEMBER_ID) or would race the running consumers.
ACTIVE_STATES = frozenset({"STABLE", "PREPARING_REBALANCING", "COMPLETING_REBALANCING", "ASSIGNING", "RECONCILING"})

CheckpointKey = tuple[str, str, int]  # (group, remote topic, partition)


def latest_checkpoints(records: Iterable[Checkpoint]) -> dict[CheckpointKey, Checkpoint]:
    """The newest checkpoint per key, records given in topic order (what compaction keeps)."""
    newest: dict[CheckpointKey, Checkpoint] = {}
    for cp in records:
        newest[(cp.group, cp.topic, cp.partition)] = cp
    return newest


class FailoverAction(str, Enum):
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
    action: FailoverAction
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
            if p.action is FailoverAction.COMMIT and p.start_offset is not None
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
                part["action"] = part["action"].value if isinstance(part["action"], FailoverAction) else part["action"]
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
            FailoverAction.NO_CHECKPOINT,
            None,
            target_committed,
            target_committed,
            source_committed,
            None,
            None,
        )
    d = checkpoint.downstream_offset
    if target_committed is not None and target_committed >= d:
        action, start = FailoverAction.KEEP, target_committed
    else:
        action, start = FailoverAction.COMMIT, d
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
    warnings = _observation_warnings(failed, to, sorted(remote_to_source), remote_partitions, source, source_error)
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
        plan = GroupPlan(
            group,
            tgroup.state,
            tgroup.members,
            _plan_partitions(group, own, tgroup, remote_to_source, remote_partitions, source, offset_lag_max),
        )
        group_plans.append(plan)
        problems.extend(_group_problems(plan, to))
        warnings.extend(_group_warnings(plan, failed, to, source, offset_lag_max))
    if not groups:
        problems.append(
            f"flow {flow_name}: the checkpoints topic on {to} holds no checkpoint for any group yet. Next step: "
            f"check that the checkpoint connector runs (`bin/connectors status --flow {flow_name}`) and that the "
            "groups committed offsets on the replicated topics"
        )
    lag = replication_lag(topics, remote_partitions, checkpoints, source, remote_ends, offset_lag_max)

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
        lag=lag,
        problems=tuple(problems),
        warnings=tuple(warnings),
    )


def _observation_warnings(
    failed: str,
    to: str,
    remote_topics: Sequence[str],
    remote_partitions: Mapping[str, int],
    source: SourceView | None,
    source_error: str,
) -> list[str]:
    warnings: list[str] = []
    if source is None:
        warnings.append(
            f"source {failed} does not answer ({source_error or 'no reason given'}): the groups' last positions "
            f"on {failed} and the replication lag at the failure are unknown; records produced to {failed} "
            "after the last replicated one stay there until it is back (see --failback-plan)"
        )
    for remote in remote_topics:
        if not remote_partitions.get(remote):
            warnings.append(f"remote topic {remote} does not exist on {to}: nothing of it was replicated yet")
    return warnings


def _plan_partitions(
    group: str,
    own: Mapping[tuple[str, int], Checkpoint],
    tgroup: TargetGroup,
    remote_to_source: Mapping[str, str],
    remote_partitions: Mapping[str, int],
    source: SourceView | None,
    offset_lag_max: int,
) -> tuple[PartitionPlan, ...]:
    """Every partition of the remote topics the group has checkpoints for, checkpointed or not."""
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
    return tuple(parts)


def _group_problems(plan: GroupPlan, to: str) -> list[str]:
    if not plan.active:
        return []
    return [
        f"group {plan.group} is active on {to} ({plan.target_state}, {plan.target_members} member(s)): its "
        f"consumers already read from {to}, and committing under them would fail or rewind them. Next step: stop "
        f"those consumers and run the failover again, or leave the group out (--group)"
    ]


def _group_warnings(plan: GroupPlan, failed: str, to: str, source: SourceView | None, offset_lag_max: int) -> list[str]:
    group, parts = plan.group, plan.partitions
    warnings: list[str] = []
    # A partition the group never committed on the source behaves on DR as it did there.
    blank = [
        f"{p.remote_topic}-{p.partition}"
        for p in parts
        if p.action is FailoverAction.NO_CHECKPOINT and (source is None or p.source_committed is not None)
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
            p.action is FailoverAction.KEEP
            and p.checkpoint is not None
            and p.start_offset is not None
            and p.start_offset > p.checkpoint.downstream_offset + offset_lag_max
        ):
            warnings.append(
                f"group {group}: {p.remote_topic}-{p.partition} on {to} is already at {p.start_offset}, "
                f"{p.start_offset - p.checkpoint.downstream_offset} past the translated offset; kept "
                "(the group consumed there before); reset it by hand if that position is not its own"
            )
    return warnings


def replication_lag(
    topics: Mapping[str, str],
    remote_partitions: Mapping[str, int],
    checkpoints: Mapping[CheckpointKey, Checkpoint],
    source: SourceView | None,
    remote_ends: Mapping[tuple[str, int], int],
    offset_lag_max: int,
) -> tuple[PartitionLag, ...]:
    """Records per partition not (yet) on DR, anchored on the most advanced checkpoint of any group."""
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
    return tuple(lag)


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
