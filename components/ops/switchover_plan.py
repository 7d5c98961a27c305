"""A planned switchover of a cluster pair, pure: the cut, the divergence, the plan's lines.

`pulumi up` switches a pair (`mm2:failover.<a><->b>`, components/topology/model.py `Pair`) from
the old active side to the new one in this order (components/ops/switchover.py runs it):

1. fence: DENY WRITE for the application principals on the old side's replicated topics;
2. drain: wait (bounded) until the flow old->new has copied everything, proven by MM2's commit or,
   sooner, by the records themselves (components/ops/drain.py); the ends it reached are the cut,
   kept in the resource's state;
3. check the consumer groups (none may be active on the new side): anything wrong stops here,
   the fence is lifted and nothing else has changed; then commit them on the new side at MM2's
   translated offsets (and, on the way back, on the new side's own topics from the cut of the
   earlier switchover);
4. lift the fence on the new side: the application writes there;
5. stop the flow old->new (the fenced side has nothing left to copy; Connect commits its position
   as it stops, the RPO is read from that commit); the flow new->old starts (its Connector
   resources, after this one).

Steps 1-4 are the time the application's writes are refused (`fencedSeconds`).

The divergence: records the new side took while it was passive (its writes fenced), past the
cut of its outbound flow. Only a principal the fence does not hold (a super user) can write
them, and they never reached the other side: the plan names them, and `divergence` says whether
the groups and the restarted flow take them (keep) or resume after them (discard).
No I/O here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from components.ops.failover_plan import FailoverPlan, GroupPlan
from components.outputs.contract import PartitionCut
from components.topology.model import Divergence


@dataclass(frozen=True)
class Divergent:
    """Records [start, end) of a partition on the side that was passive, written after its cut."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def count(self) -> int:
        return self.end - self.start

    def describe(self) -> str:
        return f"{self.topic} p{self.partition} offsets {self.start}..{self.end - 1} ({self.count} record(s))"


def divergence(cut: Iterable[PartitionCut], ends: Mapping[tuple[str, int], int]) -> tuple[Divergent, ...]:
    """The records past each partition's cut (ends: the partitions' log ends now)."""
    found = []
    for c in sorted(cut):
        end = ends.get((c.topic, c.partition))
        if end is not None and end > c.source_end:
            found.append(Divergent(c.topic, c.partition, c.source_end, end))
    return tuple(found)


def origin_positions(
    cut: Iterable[PartitionCut],
    remote_of: Mapping[str, str],
    read_on_old: Mapping[tuple[str, int], int],
    ends: Mapping[tuple[str, int], int],
    policy: Divergence | None,
) -> tuple[dict[tuple[str, int], int], list[str]]:
    """Where a group resumes on the new side's own topics, which it read on the old side as
    remote topics since the earlier switchover (MM2 cannot translate that way: KIP-1098).

    The cut pairs each partition's source end with its remote end: a group that read its remote
    partition up to the remote end resumes at the source end (keep) or after the divergent
    records (discard: the log end now). A group short of the remote end keeps the position it had
    before the earlier switchover (at least once: it re-reads what it read meanwhile); a warning
    names it. Returns (commits, warnings); `read_on_old` maps (remote topic, partition) -> offset.
    """
    commits: dict[tuple[str, int], int] = {}
    warnings: list[str] = []
    for c in sorted(cut):
        remote = remote_of.get(c.topic)
        at = read_on_old.get((remote, c.partition)) if remote else None
        if at is None:
            continue
        if at >= c.remote_end:
            end = ends.get((c.topic, c.partition), c.source_end)
            commits[(c.topic, c.partition)] = end if policy is Divergence.DISCARD else c.source_end
        else:
            warnings.append(
                f"{remote} p{c.partition}: read up to {at} of {c.remote_end}; the group keeps its earlier position "
                f"on {c.topic} p{c.partition} and re-reads from there"
            )
    return commits, warnings


def matching_groups(groups: Sequence[GroupPlan], patterns: Sequence[str]) -> tuple[list[GroupPlan], list[str]]:
    """(the groups the patterns select, the patterns that select none); no pattern: every group."""
    if not patterns:
        return list(groups), []
    compiled = [(p, re.compile(p)) for p in patterns]
    chosen = [g for g in groups if any(rx.fullmatch(g.group) for _, rx in compiled)]
    unmatched = [p for p, rx in compiled if not any(rx.fullmatch(g.group) for g in groups)]
    return chosen, unmatched


@dataclass(frozen=True)
class Direction:
    """A switchover's sides: the flow old->new stops, the flow new->old starts."""

    old: str  # the active side before
    new: str  # the active side after

    @property
    def stops(self) -> str:
        return f"{self.old}->{self.new}"

    @property
    def starts(self) -> str:
        return f"{self.new}->{self.old}"


@dataclass(frozen=True)
class Request(Direction):
    """One switchover: the pair's declared fields and what the stack knows of its flows."""

    pair: str
    principals: tuple[str, ...]
    groups: tuple[str, ...]
    drain_timeout_s: int
    policy: Divergence | None
    patterns: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]  # flow -> (topics, topicsExclude)
    cuts: Mapping[str, tuple[PartitionCut, ...]]  # flow -> where it stopped at an earlier switchover
    unplanned: bool = False  # the old side is lost: bin/failover moved the groups


Identity = tuple[Any, ...]  # what MM2 copies of a record: (key, value, timestamp, headers)


def unprovable(config: Mapping[str, str]) -> str:
    """Why the records cannot prove a drain for a source connector with this config (empty: they
    can): the proof needs each partition's copies in order with none skipped, which holds with
    Connect's producer idempotent (or one request in flight) and failed sends failing the task."""
    if config.get("errors.tolerance", "none") != "none":
        return "errors.tolerance=all may skip a record that failed to send"
    if config.get("producer.override.enable.idempotence") == "true":
        return ""
    if config.get("producer.override.max.in.flight.requests.per.connection") == "1":
        return ""
    return "its producer is neither idempotent nor limited to one request in flight, so retries may reorder"


def tail_proven(source: Sequence[Identity], target: Sequence[Identity] | None) -> bool:
    """Whether the new side's remote partition ends with the old side's last records (`source`,
    read after the fence: nothing follows them), in order: then MM2 copied the last of them, and
    its producer keeps a partition's order, so everything before too. A window that holds one
    record identity only (a single record, or the same record repeated) proves nothing: an
    earlier copy would look the same. `target`: the remote partition's last records (None: not read)."""
    if target is None or len(set(source)) < 2 or len(target) < len(source):
        return False
    return tuple(target[len(target) - len(source) :]) == tuple(source)


@dataclass(frozen=True)
class SwitchoverPlan(Direction):
    pair: str
    principals: tuple[str, ...]
    fence_topics: tuple[str, ...]  # on old: the outbound flow's source topics
    lift_topics: tuple[str, ...]  # on new: its own outbound flow's source topics
    drain_timeout_s: int
    lag: Mapping[tuple[str, int], int]  # records the flow old->new has still to copy now
    groups: FailoverPlan | None
    moved: tuple[GroupPlan, ...]
    divergent: tuple[Divergent, ...]
    policy: Divergence | None
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    # the way back: group -> where it resumes on the new side's own topics (origin_positions)
    origin: Mapping[str, Mapping[tuple[str, int], int]] = field(default_factory=dict)


def divergence_problem(pair: str, old: str, divergent: Sequence[Divergent], policy: Divergence | None) -> str:
    """A problem when records diverged and the config does not say what to do with them."""
    if not divergent or policy is not None:
        return ""
    return (
        f"{sum(d.count for d in divergent)} record(s) were written on {old} while it was passive and never reached "
        f"the other side ({'; '.join(d.describe() for d in divergent)}). Fix: set mm2:failover.{pair}.divergence "
        "to keep (the groups and the restarted flow take them) or discard (they resume after them)"
    )


def source_problem(pair: str, flow: str, connector: str, status: Mapping[str, Any] | None) -> str:
    """Why a switchover cannot start while the old flow's source connector is FAILED (its Connect
    status, None: not read): a flow that copies nothing never drains, and the fence would hold the
    application's writes until the drain's bound. Empty when nothing is FAILED."""
    if not status:
        return ""

    def first_line(part: Mapping[str, Any]) -> str:
        return (str(part.get("trace") or "").strip().splitlines() or ["no trace"])[0]

    failed = []
    if (status.get("connector") or {}).get("state") == "FAILED":
        failed.append(f"the connector: {first_line(status['connector'])}")
    for task in status.get("tasks") or ():
        if task.get("state") == "FAILED":
            failed.append(f"task {task.get('id')} on {task.get('worker_id')}: {first_line(task)}")
    if not failed:
        return ""
    return (
        f"switchover {pair}: flow {flow} copies nothing, its source connector {connector} is FAILED "
        f"({'; '.join(failed)}), so its drain could never finish. Fix: `bin/status` shows the cause; "
        "fix it and restart the failed tasks (Connect's `POST /connectors/<name>/restart?includeTasks=true"
        "&onlyFailed=true`, or mm2:flows.<flow>.autoRestart), then `pulumi up` again"
    )


def plan_lines(plan: SwitchoverPlan) -> list[str]:
    """The plan as blast-radius lines of the preview (and of the pull-request comment)."""
    who = ", ".join(plan.principals)
    behind = sum(plan.lag.values())
    lines = [
        f"switchover {plan.pair}: {plan.new} becomes active (was {plan.old})",
        f"  1. fence: deny WRITE to {who} on {plan.old} topics {', '.join(plan.fence_topics) or '(none yet)'}",
        f"  2. wait up to {plan.drain_timeout_s}s until {plan.stops} has copied everything "
        f"(now {behind} record(s) behind); RPO must be 0",
    ]
    lines += [f"  3. {line}" for line in _group_lines(plan)]
    lines += [
        f"  4. lift the fence on {plan.new} topics {', '.join(plan.lift_topics) or '(none)'}: {who} may write there",
        f"  5. stop flow {plan.stops} (its offsets are kept for the way back)",
        f"  6. start flow {plan.starts}: records written on {plan.new} flow back to {plan.old}",
    ]
    if plan.divergent:
        verb = {Divergence.KEEP: "kept", Divergence.DISCARD: "discarded", None: "UNDECIDED"}[plan.policy]
        lines.append(f"  divergence on {plan.new} ({verb}): " + "; ".join(d.describe() for d in plan.divergent))
    lines += [f"  warning: {w}" for w in plan.warnings]
    lines += [f"  REFUSED: {p}" for p in plan.problems]
    return lines


def _group_lines(plan: SwitchoverPlan) -> list[str]:
    if not plan.moved:
        return [f"no consumer group to move to {plan.new}"]
    lines = []
    for g in plan.moved:
        low, high = g.reread_range
        where = ", ".join(f"{p.remote_topic} p{p.partition} -> {p.start_offset}" for p in g.partitions if p.checkpoint)
        bound = f"{low}" if low == high else f"{low}..{high if high is not None else '?'}"
        lines.append(f"move group {g.group} to {plan.new} ({where}); re-read {bound}")
        own = plan.origin.get(g.group)
        if own:
            at = ", ".join(f"{t} p{p} -> {o}" for (t, p), o in sorted(own.items()))
            lines.append(
                f"group {g.group} resumes on {plan.new}'s own topics after what it read of them on {plan.old} ({at})"
            )
    return lines
