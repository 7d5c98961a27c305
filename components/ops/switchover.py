"""A planned switchover of a cluster pair against the live clusters (Kafka and Connect I/O).

`pulumi up` runs it through the Switchover resource (components/switchover.py) when a pair's
`active` changes; the preview calls `preview` for the plan. The order and why: the docstring of
components/ops/switchover_plan.py; the drain: components/ops/drain.py. Consumer groups move with
bin/failover's engine (components/ops/failover.py: MM2's checkpoints, never a group moved backwards).

A switchover that cannot finish raises SwitchoverStopped naming the step it stopped at, what
it left behind and how to go on. Before the first group moves it puts everything back (the old
side's fence is lifted): nothing has changed. After that it lifts nothing: `pulumi up` again
continues where it stopped (every step is idempotent).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from components.ops.clients import connect_client, flow, kafka_config
from components.ops.drain import DrainTimedOut, committed_cut, drain, lag, lag_ends
from components.ops.errors import OpsError
from components.ops.failover import (
    commit_offsets,
    describe_target_groups,
    end_offsets,
    execute,
    observe,
    probe_source,
)
from components.ops.lag_exporter import replicated_topics
from components.ops.switchover_plan import (
    Request,
    SwitchoverPlan,
    divergence,
    divergence_problem,
    matching_groups,
    origin_positions,
    source_problem,
)
from components.outputs.contract import PairExport, PartitionCut, StackExports
from components.topology.model import Divergence
from components.watch.lag_plan import LagFlow

_TIMEOUT_S = 30.0
_STOP_TIMEOUT_S = 60.0
_TASKS_GONE_S = 1.0  # how long an unplanned failover gives the lost source's tasks (stop_lost_source)
_REGEX_CHARS = set("*+?[](){}|^$\\")


class SwitchoverStopped(OpsError):
    """A switchover stopped before its end; the message says where, what it left and what next."""


@dataclass(frozen=True)
class Report:
    cut: tuple[PartitionCut, ...]
    fenced_s: float  # from the fence on the old side to the fence lifted on the new one
    rpo_records: int | None  # records of the old side not on the new one when its flow stopped (None: unknown)
    moved: tuple[str, ...]
    divergent: int
    seconds: Mapping[str, float] = field(default_factory=dict)  # the fence's parts: drain, groups


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
    remote_of = {c.topic: back.remote_topic_of(c.topic) for c in cut}
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


def failed_source(outputs: StackExports, request: Request) -> str:
    """The problem of a switchover whose old flow's source connector is FAILED (`source_problem`)."""
    f = flow(outputs, request.stops)
    name = f.connectors["source"]
    with connect_client(outputs, f.worker_group, retry_budget_s=10.0) as client:
        return source_problem(request.pair, request.stops, name, client.get_status(name))


def stop_flow(outputs: StackExports, flow_name: str) -> None:
    f = flow(outputs, flow_name)
    with connect_client(outputs, f.worker_group, retry_budget_s=30.0) as client:
        for name in f.connector_names:
            client.stop(name)
        for name in f.connector_names:
            client.wait_state(name, "STOPPED", _STOP_TIMEOUT_S)


def stop_lost_source(outputs: StackExports, flow_name: str) -> str:
    """Ask Connect to stop the source connector of a flow whose source cluster is lost; wait
    briefly (_TASKS_GONE_S) for its tasks to go, so that a task that stops at once adds its last
    commit to the cut. A task that does not (MirrorSourceTask's stop closes clients of the lost
    cluster) holds Connect for task.shutdown.graceful.timeout.ms (5 s) and is then cancelled
    without a commit: waiting for it adds nothing. The cut, MM2's last commit, never claims more
    than was copied; what it misses counts as divergence on the way back. Returns '' or what was
    still listed at the bound."""
    from components.connect.errors import ConnectError

    f = flow(outputs, flow_name)
    source = f.connectors.get("source", "")
    with connect_client(outputs, f.worker_group, retry_budget_s=30.0) as client:
        client.stop(source)
    deadline = time.monotonic() + _TASKS_GONE_S
    left = "its tasks' state not read"
    # Status calls can hang while Connect stops the tasks: each is bounded, none retried.
    with connect_client(outputs, f.worker_group, retry_budget_s=0.0, timeout=_TASKS_GONE_S) as poll:
        while time.monotonic() < deadline:
            try:
                tasks = (poll.get_status(source) or {}).get("tasks") or []
            except ConnectError:
                continue
            left = f"{len(tasks)} task(s) of {source} still stopping" if tasks else ""
            if not tasks:
                break
            time.sleep(0.2)
    return left


def stop_lost_rest(outputs: StackExports, flow_name: str) -> None:
    """Ask Connect to stop the lost flow's other connectors, all at once: Connect's herder takes
    the requests that wait for it in one go, whereas one sent after another would wait behind the
    tasks the first stops (their calls to the lost cluster hold the herder up to 5 s). The
    connectors finish stopping in Connect's time (up to admin.timeout.ms); nothing waits on them."""
    from concurrent.futures import ThreadPoolExecutor

    f = flow(outputs, flow_name)
    others = [n for n in f.connector_names if n != f.connectors.get("source")]

    def ask(name: str) -> None:
        with connect_client(outputs, f.worker_group, retry_budget_s=30.0) as client:
            client.stop(name)

    with ThreadPoolExecutor(max_workers=max(len(others), 1)) as pool:
        list(pool.map(ask, others))


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


def _not_drained(request: Request, timed_out: DrainTimedOut) -> SwitchoverStopped:
    return SwitchoverStopped(
        f"switchover {request.pair} stopped at step 2 (drain): {request.stops} did not copy everything within "
        f"{request.drain_timeout_s}s ({sum(timed_out.left.values())} record(s) left: {timed_out}). Nothing was "
        f"moved: the fence on {request.old} is lifted again, {request.old} stays active and {request.stops} keeps "
        f"running. Next step: `bin/connectors status --flow {request.stops}`, fix what holds it, then `pulumi up` "
        f"again to continue; or set active back to {request.old} to give up the switchover"
    )


def run(outputs: StackExports, request: Request, say: Callable[[str], None]) -> Report:
    """Fence, drain, check and move the groups, lift; then stop the old flow (switchover_plan.py)."""
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
        try:
            cut = drain(outputs, request, say)
        except DrainTimedOut as exc:
            raise _not_drained(request, exc) from exc
        drained_at = time.monotonic()
        plan, moved, problems = plan_groups(outputs, request)
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
        f"switchover {request.pair}: step 2, {request.stops} copied everything in {drained_at - fenced_at:.1f}s: cut "
        + ", ".join(f"{c.topic} p{c.partition}@{c.source_end}" for c in cut)
    )
    moved_names = _move(outputs, request, plan, moved, divergent, say)
    moved_at = time.monotonic()
    fence_side(outputs, request, request.new, on=False)
    fenced_s = time.monotonic() - fenced_at
    say(
        f"switchover {request.pair}: step 4, {request.new} takes writes: they were fenced {fenced_s:.1f}s (drain "
        f"{drained_at - fenced_at:.1f}s, groups {moved_at - drained_at:.1f}s)"
    )
    rpo = _stop_old(outputs, request, say)
    say(
        f"switchover {request.pair}: done, {request.new} is active; writes were fenced {fenced_s:.1f}s, "
        f"RPO {'unknown' if rpo is None else rpo} record(s); {request.starts} starts next"
    )
    timings = {"drain": drained_at - fenced_at, "groups": moved_at - drained_at}
    return Report(cut, fenced_s, rpo, tuple(moved_names), sum(d.count for d in divergent), timings)


def _move(
    outputs: StackExports,
    request: Request,
    plan: Any,
    moved: Sequence[Any],
    divergent: Sequence[Any],
    say: Callable[[str], None],
) -> list[str]:
    """Step 3, the point of no return: commit the groups on the new side (the plan read after the drain)."""
    chosen = {g.group for g in moved}
    try:
        execute(outputs, replace(plan, groups=tuple(g for g in plan.groups if g.group in chosen), problems=()))
        for w in _origin_commits(outputs, request, sorted(chosen)):
            say(f"switchover {request.pair}: warning: {w}")
        if divergent and request.policy is Divergence.DISCARD:
            skip_divergent(outputs, request, request.cuts.get(request.starts) or ())
    except Exception as exc:
        raise SwitchoverStopped(
            f"switchover {request.pair} stopped while moving the groups: {exc}. Left: writes fenced on both sides, "
            "some groups may be moved. Next step: fix the cause and `pulumi up` again, which continues (every "
            "step is idempotent)"
        ) from exc
    say(f"switchover {request.pair}: step 3, groups moved to {request.new}: {', '.join(sorted(chosen)) or 'none'}")
    return sorted(chosen)


def _stop_old(outputs: StackExports, request: Request, say: Callable[[str], None]) -> int | None:
    """Step 5, after the new side takes writes (the fenced side has nothing left to copy): stop the
    old flow. Connect commits its position as the tasks stop, so the RPO is read from that commit:
    records of the old side not on the new one (None: unknown, the stop failed)."""
    try:
        stop_flow(outputs, request.stops)
    except Exception as exc:  # its Connector resources stop it next in this `up`
        say(
            f"switchover {request.pair}: warning: stopping {request.stops} failed ({exc}); its connectors' "
            "resources stop it next in this `up`"
        )
        return None
    say(f"switchover {request.pair}: step 5, {request.stops} stopped")
    return sum(n for n, _end in lag(outputs, request, request.stops).values())


# -- unplanned: the old side is lost --------------------------------------------------------


def unplanned_lines(request: Request, why: str) -> list[str]:
    """The preview of an unplanned failover (nothing can be asked of the old side)."""
    return [
        f"unplanned failover {request.pair}: {request.new} becomes active ({request.old} is lost: {why})",
        f"  1. nothing is fenced or drained on {request.old}; what it took after MM2's last committed position "
        "is reported as divergence by the way back",
        f"  2. stop flow {request.stops}'s tasks; its cut is MM2's last committed position (its connectors finish "
        "stopping in Connect's time: up to admin.timeout.ms, waiting on the lost cluster)",
        f"  3. consumer groups: moved by `bin/failover --failed {request.old} --to {request.new}`, not by up",
        f"  4. lift the fence on {request.new} topics; {request.starts} stays stopped until {request.old} is back "
        f"and unplanned is removed",
    ]


# alias -> (monotonic time, why) of the last probe that found a cluster lost, in this provider
# host: `up` runs the resource's diff (the preview's probe, 5 s) moments before its update.
_FOUND_LOST: dict[str, tuple[float, str]] = {}
_FOUND_LOST_FOR_S = 60.0


def preview_unplanned(outputs: StackExports, request: Request, probe_s: float = 5.0) -> list[str]:
    """The unplanned plan, refused while the old side answers (probed, or found lost by this
    process's probe less than a minute ago)."""
    at, why = _FOUND_LOST.get(request.old, (0.0, ""))
    if time.monotonic() - at > _FOUND_LOST_FOR_S:
        why = probe_source(outputs, request.old, probe_s)
        if why:
            _FOUND_LOST[request.old] = (time.monotonic(), why)
    if not why:
        raise SwitchoverStopped(
            f"unplanned failover {request.pair}: {request.old} answers. Fix: remove mm2:failover.{request.pair}"
            ".unplanned for a planned switchover, which fences and drains it first and loses nothing"
        )
    return unplanned_lines(request, why)


def run_unplanned(outputs: StackExports, request: Request, say: Callable[[str], None]) -> Report:
    """Record a switch to the new side whose old side is lost: stop the old flow (its source
    first), read its cut (MM2's last commit) while Connect takes the other stops, lift the new
    side's fence. The groups were moved by bin/failover. The old flow's connectors finish stopping
    in Connect's time: nothing waits on them."""
    from concurrent.futures import ThreadPoolExecutor

    took: list[str] = []  # each step's seconds, printed: what bounds the time of `up`
    lap = time.monotonic()

    def step(name: str) -> None:
        nonlocal lap
        took.append(f"{name} {time.monotonic() - lap:.1f}s")
        lap = time.monotonic()

    say("\n".join(preview_unplanned(outputs, request)))
    step(f"{request.old} found lost")
    left = stop_lost_source(outputs, request.stops)
    step(f"{request.stops}'s source asked to stop" + (f" ({left})" if left else ", its tasks gone"))
    with ThreadPoolExecutor(max_workers=1) as pool:
        rest = pool.submit(stop_lost_rest, outputs, request.stops)
        cut = committed_cut(outputs, request)
        step("cut read")
        rest.result()  # Connect accepted every stop of the old flow before the new side takes writes
    step("its other connectors asked to stop")
    fence_side(outputs, request, request.new, on=False)
    step("fence lifted")
    say(
        f"unplanned failover {request.pair}: done, {request.new} is active; cut "
        + (", ".join(f"{c.topic} p{c.partition}@{c.source_end}" for c in cut) or "unknown")
        + f" ({', '.join(took)})"
    )
    return Report(cut, 0.0, None, (), 0)
