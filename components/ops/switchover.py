"""A planned switchover of a cluster pair against the live clusters (Kafka and Connect I/O).

`pulumi up` runs it through the Switchover resource (components/switchover.py) when a pair's
`active` changes; the preview calls `observe` for the plan. The order and why: the docstring of
components/ops/switchover_plan.py. Consumer groups move with bin/failover's engine
(components/ops/failover.py: MM2's checkpoints, never a group moved backwards).

A switchover that cannot finish raises SwitchoverStopped naming the step it stopped at, what
it left behind and how to go on. Before the old flow stops it puts everything back (the old
side's fence is lifted): nothing has changed. After that it lifts nothing: `pulumi up` again
continues where it stopped (every step is idempotent).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from components.ops.clients import connect_client, flow, kafka_config
from components.ops.errors import OpsError
from components.ops.failover import (
    commit_offsets,
    describe_target_groups,
    end_offsets,
    execute,
    observe,
    probe_source,
)
from components.ops.lag_exporter import Kafka, replicated_topics
from components.ops.switchover_plan import (
    Direction,
    SwitchoverPlan,
    divergence,
    divergence_problem,
    matching_groups,
    origin_positions,
    source_problem,
)
from components.outputs.contract import PairExport, PartitionCut, StackExports
from components.topology.model import Divergence
from components.watch.lag import next_offset
from components.watch.lag_plan import LagFlow, LagPlan

_TIMEOUT_S = 30.0
_STOP_TIMEOUT_S = 60.0
_DRAIN_POLL_S = 1.0
_REGEX_CHARS = set("*+?[](){}|^$\\")


class SwitchoverStopped(OpsError):
    """A switchover stopped before its end; the message says where, what it left and what next."""


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


@dataclass(frozen=True)
class Report:
    cut: tuple[PartitionCut, ...]
    fenced_s: float  # from the fence on the old side to the fence lifted on the new one
    rpo_records: int | None  # records of the old side not on the new one when its flow stopped (None: unknown)
    moved: tuple[str, ...]
    divergent: int


# -- the fence -----------------------------------------------------------------------------


def flow_topics(outputs: StackExports, request: Request, flow_name: str) -> list[str]:
    """The source topics of `flow_name`: the live ones its patterns select, and every pattern
    that names one topic (fenced before the topic exists)."""
    topics, exclude = request.patterns[flow_name]
    f = flow(outputs, flow_name)
    lag_flow = LagFlow(flow_name, f.source, f.target, f.connectors.get("source", ""), topics, exclude, 0)
    from confluent_kafka.admin import AdminClient

    listing = AdminClient(kafka_config(outputs, f.source, log_level=0)).list_topics(timeout=_TIMEOUT_S).topics
    counts = {name: len(t.partitions or {}) for name, t in listing.items() if t.error is None}
    literal = {t for t in topics if not _REGEX_CHARS & set(t) and t not in exclude}
    return sorted(set(replicated_topics(lag_flow, counts, set())) | literal)


def _bindings(principals: Iterable[str], topics: Iterable[str]) -> list[Any]:
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    return [
        AclBinding(
            ResourceType.TOPIC,
            topic,
            ResourcePatternType.LITERAL,
            principal,
            "*",
            AclOperation.WRITE,
            AclPermissionType.DENY,
        )
        for principal in principals
        for topic in topics
    ]


def set_fence(outputs: StackExports, alias: str, principals: Sequence[str], topics: Sequence[str], on: bool) -> None:
    """Deny (on) or allow again (off) the principals' writes to the topics on cluster `alias`."""
    from confluent_kafka.admin import AclBindingFilter, AclPermissionType, AdminClient

    deny = AclPermissionType.DENY
    bindings = _bindings(principals, topics)
    if not bindings:
        return
    admin = AdminClient(kafka_config(outputs, alias, log_level=0))
    futures: Mapping[Any, Any]
    if on:
        futures = admin.create_acls(bindings, request_timeout=_TIMEOUT_S)
    else:
        filters = [
            AclBindingFilter(b.restype, b.name, b.resource_pattern_type, b.principal, b.host, b.operation, deny)
            for b in bindings
        ]
        futures = admin.delete_acls(filters, request_timeout=_TIMEOUT_S)
    for binding, future in futures.items():
        try:
            future.result()
        except Exception as exc:
            verb = "fencing" if on else "lifting the fence on"
            raise OpsError(
                f"{verb} {binding.principal}'s writes to {binding.name} on {alias} failed: {exc}. Next step: check "
                f"that {alias} runs an authorizer and the stack's admin is a super user, then run `pulumi up` again"
            ) from exc


def fence_side(outputs: StackExports, request: Request, alias: str, on: bool) -> list[str]:
    """Fence (or lift) the source topics of cluster `alias`'s outbound flow of the pair, on `alias`;
    returns the topics. The passive side stays fenced: only MM2 writes there."""
    other = request.new if alias == request.old else request.old
    topics = flow_topics(outputs, request, f"{alias}->{other}")
    set_fence(outputs, alias, request.principals, topics, on)
    return topics


def missing_fence(outputs: StackExports, request: Request, alias: str) -> list[str]:
    """The DENY WRITE bindings of cluster `alias`'s fence that are not on the cluster: drift, for
    example one deleted behind the stack's back ("User:app on orders")."""
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    other = request.new if alias == request.old else request.old
    topics = flow_topics(outputs, request, f"{alias}->{other}")
    anything: Any = None  # librdkafka: None matches any name, principal and host
    wanted = AclBindingFilter(
        ResourceType.TOPIC,
        anything,
        ResourcePatternType.LITERAL,
        anything,
        anything,
        AclOperation.WRITE,
        AclPermissionType.DENY,
    )
    # Kept alive until the answer: a collected client destroys its handle under the future.
    admin = AdminClient(kafka_config(outputs, alias, log_level=0))
    present = {(b.principal, b.name) for b in admin.describe_acls(wanted, request_timeout=_TIMEOUT_S).result()}
    return [f"{p} on {t}" for p in request.principals for t in topics if (p, t) not in present]


def fence_gaps(outputs: StackExports, pair: PairExport) -> list[str]:
    """What the passive side's fence of `pair` lacks on the cluster now (`bin/status`)."""
    request = Request(
        old=pair.passive,
        new=pair.active,
        pair=pair.name,
        principals=pair.principals,
        groups=(),
        drain_timeout_s=0,
        policy=None,
        patterns=pair.patterns,
        cuts=pair.cuts,
    )
    return missing_fence(outputs, request, pair.passive)


# -- drain and cut -------------------------------------------------------------------------


def _lag_plan(outputs: StackExports, request: Request, flow_name: str) -> tuple[LagPlan, LagFlow]:
    f = flow(outputs, flow_name)
    group = outputs.connect[f.worker_group]
    topics, exclude = request.patterns[flow_name]
    lag_flow = LagFlow(flow_name, f.source, f.target, f.connectors.get("source", ""), topics, exclude, 0)
    aliases = {f.source, group.cluster}
    plan = LagPlan(
        group=f.worker_group,
        storage_cluster=group.cluster,
        offsets_topic=group.offset_topic,
        clusters={a: {k: str(v) for k, v in kafka_config(outputs, a).items()} for a in aliases},
        flows=(lag_flow,),
    )
    return plan, lag_flow


Lag = dict[tuple[str, int], tuple[int, int]]  # (topic, partition) -> (records left to copy, the end)


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
            for r in kafka.read_flow(lag_flow)
            if _selects(lag_flow.topics, lag_flow.topics_exclude, r.topic)
        }

    try:
        yield read
    finally:
        kafka.close()


def lag(outputs: StackExports, request: Request, flow_name: str) -> Lag:
    """The flow's lag, read once."""
    with lag_reader(outputs, request, flow_name) as read:
        return read()


def _selects(topics: Sequence[str], exclude: Sequence[str], topic: str) -> bool:
    """Whether a flow's own patterns select `topic` (Python regexes on the whole name)."""
    return any(re.fullmatch(p, topic) for p in topics) and not any(re.fullmatch(p, topic) for p in exclude)


def _drained(read: Callable[[], Lag], request: Request, say: Callable[[str], None]) -> Lag:
    """Poll `read` until nothing is left to copy, within the request's drain bound."""
    deadline = time.monotonic() + request.drain_timeout_s
    started = time.monotonic()
    while True:
        behind = read()
        left = {tp: n for tp, (n, _end) in behind.items() if n}
        if not left:
            return behind
        if time.monotonic() > deadline:
            where = ", ".join(f"{t} p{p}: {n}" for (t, p), n in sorted(left.items()))
            raise SwitchoverStopped(
                f"switchover {request.pair} stopped at step 2 (drain): {request.stops} did not copy everything "
                f"within {request.drain_timeout_s}s ({sum(left.values())} record(s) left: {where}). Nothing was "
                f"moved: the fence on {request.old} is lifted again, {request.old} stays active and {request.stops} "
                f"keeps running. Next step: `bin/connectors status --flow {request.stops}`, fix what holds it, then "
                f"`pulumi up` again to continue; or set active back to {request.old} to give up the switchover"
            )
        say(
            f"switchover {request.pair}: {request.stops} has {sum(left.values())} record(s) left to copy "
            f"({time.monotonic() - started:.0f}s of {request.drain_timeout_s}s)"
        )
        time.sleep(_DRAIN_POLL_S)


def drain(outputs: StackExports, request: Request, say: Callable[[str], None]) -> tuple[PartitionCut, ...]:
    """Wait (bounded) until the flow old->new has copied everything; the cut it reached."""
    with lag_reader(outputs, request, request.stops) as read:
        behind = _drained(read, request, say)
    f = flow(outputs, request.stops)
    remote = {src: f.topics.get(src) or f"{f.source}{f.separator}{src}" for src, _p in behind}
    _counts, remote_ends = end_offsets(outputs, request.new, sorted(set(remote.values())), _TIMEOUT_S)
    return tuple(
        PartitionCut(t, p, end, remote_ends.get((remote[t], p), 0)) for (t, p), (_n, end) in sorted(behind.items())
    )


# -- groups --------------------------------------------------------------------------------


def plan_groups(outputs: StackExports, request: Request) -> tuple[Any, list[Any], list[str]]:
    """(the failover plan of flow old->new, the groups that move, problems) read live."""
    plan = observe(outputs, failed=request.old, to=request.new, flow_name=request.stops, source_probe_s=5.0)
    moved, unmatched = matching_groups(plan.groups, request.groups)
    problems = [
        f"mm2:failover.{request.pair}.groups: {p!r} matches no consumer group checkpointed by {request.stops} "
        f"(groups: {', '.join(g.group for g in plan.groups) or 'none'}). Fix: name a group the flow checkpoints"
        for p in unmatched
    ]
    problems += [
        f"group {g.group} is active on {request.new} ({g.target_state}, {g.target_members} member(s)): its "
        f"consumers already read there. Next step: stop them, then `pulumi up` again"
        for g in moved
        if g.active
    ]
    return plan, moved, problems


def origin_plan(
    outputs: StackExports, request: Request, groups: Sequence[str]
) -> dict[str, tuple[dict[tuple[str, int], int], list[str]]]:
    """The way back: each moved group's position on the new side's own topics, from the cut of
    the flow new->old (stopped at the earlier switchover): group -> (commits, warnings)."""
    cut = request.cuts.get(request.starts) or ()
    if not cut or not groups:
        return {}
    back = flow(outputs, request.starts)
    remote_of = {c.topic: back.topics.get(c.topic) or f"{back.source}{back.separator}{c.topic}" for c in cut}
    _counts, ends = end_offsets(outputs, request.new, sorted(remote_of), _TIMEOUT_S)
    on_old = describe_target_groups(outputs, request.old, list(groups), sorted(set(remote_of.values())), _TIMEOUT_S)
    found = {}
    for group in groups:
        read = on_old.get(group)
        found[group] = origin_positions(cut, remote_of, read.committed if read else {}, ends, request.policy)
    return found


def _origin_commits(outputs: StackExports, request: Request, groups: Sequence[str]) -> list[str]:
    """Commit what origin_plan says; returns its warnings."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(kafka_config(outputs, request.new, log_level=0))
    warnings = []
    for group, (commits, notes) in origin_plan(outputs, request, groups).items():
        warnings += [f"group {group}: {n}" for n in notes]
        if commits:
            commit_offsets(admin, group, [TopicPartition(t, p, o) for (t, p), o in sorted(commits.items())], _TIMEOUT_S)
    return warnings


def skip_divergent(outputs: StackExports, request: Request, cut: Sequence[PartitionCut]) -> None:
    """discard: the stopped flow new->old resumes after the divergent records (Connect's offsets API)."""
    back = flow(outputs, request.starts)
    ends = dict(lag_ends(outputs, request, request.starts))
    offsets = [
        {
            "partition": {"cluster": back.source, "topic": c.topic, "partition": c.partition},
            "offset": {"offset": ends[(c.topic, c.partition)] - 1},
        }
        for c in divergence(cut, ends)
    ]
    if offsets:
        with connect_client(outputs, back.worker_group, retry_budget_s=30.0) as client:
            client.alter_offsets(back.connectors["source"], offsets)


def lag_ends(outputs: StackExports, request: Request, flow_name: str) -> dict[tuple[str, int], int]:
    return {tp: end for tp, (_n, end) in lag(outputs, request, flow_name).items()}


def failed_source(outputs: StackExports, request: Request) -> str:
    """The problem of a switchover whose old flow's source connector is FAILED (`source_problem`)."""
    f = flow(outputs, request.stops)
    name = f.connectors["source"]
    with connect_client(outputs, f.worker_group, retry_budget_s=10.0) as client:
        return source_problem(request.pair, request.stops, name, client.get_status(name))


def stop_flow(outputs: StackExports, flow_name: str) -> None:
    f = flow(outputs, flow_name)
    names = [*f.connectors.values(), *([f.reverse_heartbeats_connector] if f.reverse_heartbeats_connector else [])]
    with connect_client(outputs, f.worker_group, retry_budget_s=30.0) as client:
        for name in names:
            client.stop(name)
        for name in names:
            client.wait_state(name, "STOPPED", _STOP_TIMEOUT_S)


# -- the whole -----------------------------------------------------------------------------


def preview(outputs: StackExports, request: Request) -> SwitchoverPlan:
    """The plan from live reads; changes nothing."""
    fence = flow_topics(outputs, request, request.stops)
    lift = flow_topics(outputs, request, request.starts)
    behind = {tp: n for tp, (n, _end) in lag(outputs, request, request.stops).items()}
    groups, moved, problems = plan_groups(outputs, request)
    divergent = divergence(request.cuts.get(request.starts) or (), lag_ends(outputs, request, request.starts))
    problem = divergence_problem(request.pair, request.new, divergent, request.policy)
    origin = origin_plan(outputs, request, [g.group for g in moved])
    failed = failed_source(outputs, request)
    return SwitchoverPlan(
        pair=request.pair,
        old=request.old,
        new=request.new,
        principals=request.principals,
        fence_topics=tuple(fence),
        lift_topics=tuple(lift),
        drain_timeout_s=request.drain_timeout_s,
        lag=behind,
        groups=groups,
        moved=tuple(moved),
        divergent=divergent,
        policy=request.policy,
        problems=tuple([*problems, *([problem] if problem else []), *([failed] if failed else [])]),
        warnings=tuple([*groups.warnings, *(f"group {g}: {n}" for g, (_c, notes) in origin.items() for n in notes)]),
        origin={g: commits for g, (commits, _n) in origin.items() if commits},
    )


def run(outputs: StackExports, request: Request, say: Callable[[str], None]) -> Report:
    """Fence, drain, check the groups, stop, move, lift: see the module docstring."""
    divergent = divergence(request.cuts.get(request.starts) or (), lag_ends(outputs, request, request.starts))
    problem = divergence_problem(request.pair, request.new, divergent, request.policy) or failed_source(
        outputs, request
    )
    if problem:
        raise SwitchoverStopped(f"switchover {request.pair} did not start: {problem}")
    fenced_at = time.monotonic()
    topics = fence_side(outputs, request, request.old, on=True)
    say(
        f"switchover {request.pair}: step 1, writes of {', '.join(request.principals)} to {', '.join(topics)} "
        f"on {request.old} are denied"
    )
    try:
        cut = drain(outputs, request, say)
        _plan, moved, problems = plan_groups(outputs, request)
        if problems:
            raise SwitchoverStopped(
                f"switchover {request.pair} stopped at step 3 (groups), before anything moved: "
                + "; ".join(problems)
                + f". The fence on {request.old} is lifted again; {request.old} stays active"
            )
    except Exception:
        fence_side(outputs, request, request.old, on=False)
        raise
    say(
        f"switchover {request.pair}: step 2, {request.stops} copied everything: cut "
        + ", ".join(f"{c.topic} p{c.partition}@{c.source_end}" for c in cut)
    )
    moved_names = _move(outputs, request, moved, divergent, say)
    fence_side(outputs, request, request.new, on=False)
    fenced_s = time.monotonic() - fenced_at
    rpo = sum(n for n, _end in lag(outputs, request, request.stops).values())
    say(
        f"switchover {request.pair}: done, {request.new} is active; writes were fenced {fenced_s:.1f}s, "
        f"RPO {rpo} record(s); {request.starts} starts next"
    )
    return Report(cut, fenced_s, rpo, tuple(moved_names), sum(d.count for d in divergent))


def _move(
    outputs: StackExports, request: Request, moved: Sequence[Any], divergent: Sequence[Any], say: Callable[[str], None]
) -> list[str]:
    """Steps 3-4 past the point of no return: stop the old flow, move the groups."""
    where = f"switchover {request.pair} stopped after {request.stops} was stopped"
    try:
        stop_flow(outputs, request.stops)
        say(f"switchover {request.pair}: step 3, {request.stops} stopped")
        plan, groups, _problems = plan_groups(outputs, request)
        chosen = {g.group for g in groups}
        execute(outputs, replace(plan, groups=tuple(g for g in plan.groups if g.group in chosen), problems=()))
        for w in _origin_commits(outputs, request, sorted(chosen)):
            say(f"switchover {request.pair}: warning: {w}")
        if divergent and request.policy is Divergence.DISCARD:
            skip_divergent(outputs, request, request.cuts.get(request.starts) or ())
    except Exception as exc:
        raise SwitchoverStopped(
            f"{where}: {exc}. Left: writes fenced on both sides, {request.stops} stopped, some groups may be moved. "
            "Next step: fix the cause and `pulumi up` again, which continues (every step is idempotent)"
        ) from exc
    say(f"switchover {request.pair}: step 4, groups moved to {request.new}: {', '.join(sorted(chosen)) or 'none'}")
    return sorted(chosen)


# -- unplanned: the old side is lost --------------------------------------------------------


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
    wanted = {t for t, _p in committed if _selects(topics, exclude, t)}
    committed = {tp: o for tp, o in committed.items() if tp[0] in wanted}
    remote = {t: f.topics.get(t) or f"{f.source}{f.separator}{t}" for t in wanted}
    _counts, ends = end_offsets(outputs, request.new, sorted(set(remote.values())), _TIMEOUT_S)
    return tuple(
        PartitionCut(t, p, offset + 1, ends.get((remote[t], p), 0)) for (t, p), offset in sorted(committed.items())
    )


def unplanned_lines(request: Request, why: str) -> list[str]:
    """The preview of an unplanned failover (nothing can be asked of the old side)."""
    return [
        f"unplanned failover {request.pair}: {request.new} becomes active ({request.old} is lost: {why})",
        f"  1. nothing is fenced or drained on {request.old}; what it took after MM2's last committed position "
        "is reported as divergence by the way back",
        f"  2. stop flow {request.stops}; its cut is MM2's last committed position",
        f"  3. consumer groups: moved by `bin/failover --failed {request.old} --to {request.new}`, not by up",
        f"  4. lift the fence on {request.new} topics; {request.starts} stays stopped until {request.old} is back "
        f"and unplanned is removed",
    ]


def preview_unplanned(outputs: StackExports, request: Request) -> list[str]:
    why = probe_source(outputs, request.old, 5.0)
    if not why:
        raise SwitchoverStopped(
            f"unplanned failover {request.pair}: {request.old} answers. Fix: remove mm2:failover.{request.pair}"
            ".unplanned for a planned switchover, which fences and drains it first and loses nothing"
        )
    return unplanned_lines(request, why)


def run_unplanned(outputs: StackExports, request: Request, say: Callable[[str], None]) -> Report:
    """Record a switch to the new side whose old side is lost: stop the old flow at MM2's cut, lift
    the new side's fence. The groups were moved by bin/failover."""
    took: list[str] = []  # each step's seconds, printed: what bounds the time of `up`
    lap = time.monotonic()

    def step(name: str) -> None:
        nonlocal lap
        took.append(f"{name} {time.monotonic() - lap:.1f}s")
        lap = time.monotonic()

    say("\n".join(preview_unplanned(outputs, request)))
    step(f"{request.old} found lost")
    cut = committed_cut(outputs, request)
    step("cut read")
    stop_flow(outputs, request.stops)
    step(f"{request.stops} stopped")
    fence_side(outputs, request, request.new, on=False)
    step("fence lifted")
    say(
        f"unplanned failover {request.pair}: done, {request.new} is active; cut "
        + (", ".join(f"{c.topic} p{c.partition}@{c.source_end}" for c in cut) or "unknown")
        + f" ({', '.join(took)})"
    )
    return Report(cut, 0.0, None, (), 0)
