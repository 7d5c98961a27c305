"""How a change that restarts a group of processes restarts them: the decision and the checks
that say when the next one may stop. Pure: no I/O; the local platform's process provider does the
restarting (components/platform/local/provider.py), the preview text reads `restart_summary`.

The rule: a worker group with more than one worker, and a cluster with more than one broker,
restart one process at a time (rolling), each waiting until it is back (a worker has rejoined
its group and the group's connectors and tasks run again; a broker is back in the ISR of every
partition it hosts) before the next stops. A single process restarts as before: there is no
other process to keep the work going. A worker group may ask for `restarts: all-at-once`
(every worker at the same moment: the behaviour before rolling restarts, kept for comparison).

A roll stops at the first process that does not come back within its bound (`RollStop`): that
process's error fails the `up` (component, cause, log tail, next step), and every process of the
group whose turn comes after it is left untouched and running, refusing its restart with
`refused_after_stop`. A group stays at worst one process short, never emptied by a roll that
goes on restarting members whose predecessor never returned.

Two-broker clusters: every local broker is a combined broker+controller node, so two brokers are
two KRaft voters, and a quorum of two has no majority while one restarts. They still roll (one
at a time is never worse than both at once: the survivor keeps serving reads from the
partitions it leads and the restarted node rejoins a quorum that kept its log), but the preview
warns that metadata changes and `acks=all` produces pause while each restarts
(`quorum_pause`), and suggests 3 brokers, which roll with 2 of 3 voters up throughout.

Kubernetes does the same with StatefulSet rolling updates (one pod at a time, the next after the
previous is Ready); docker containers are replaced by the engine in parallel (see the report of
issue 16: not rolled yet).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from components.topology.model import Cluster, RestartMode, WorkerGroup
from components.topology.traces import first_line

# Connect's states (GET /connectors?expand=status) that count as "working again".
RUNNING = "RUNNING"
UNASSIGNED = "UNASSIGNED"
FAILED = "FAILED"


def restart_mode(processes: int, requested: RestartMode | None = None) -> RestartMode:
    """Rolling when there is more than one process (unless all-at-once is asked for)."""
    if processes <= 1:
        return RestartMode.ALL_AT_ONCE
    return requested or RestartMode.ROLLING


def worker_group_restarts(group: WorkerGroup) -> RestartMode:
    return restart_mode(group.workers, group.restarts)


def cluster_restarts(cluster: Cluster) -> RestartMode:
    return restart_mode(cluster.brokers)


def restart_summary(what: str, processes: int, mode: RestartMode) -> str:
    """One line for the preview, e.g. "worker group 'mm2': 2 workers restart one at a time".

    `what` names the group ("worker group 'mm2'", "cluster 'dr'")."""
    if processes <= 1:
        return f"{what}: its only process restarts (replication pauses until it is back)"
    if mode is RestartMode.ROLLING:
        return f"{what}: {processes} processes restart one at a time, each waiting until it is back"
    return f"{what}: all {processes} processes restart at once (replication pauses until they are back)"


def _task_states(status: Mapping[str, Any]) -> dict[int, str]:
    return {int(t.get("id", -1)): str(t.get("state")) for t in status.get("tasks") or []}


def group_settled(before: Mapping[str, Mapping[str, Any]], now: Mapping[str, Mapping[str, Any]]) -> str | None:
    """None when the group's connectors and tasks are back, else the first reason they are not.

    `before` and `now` map connector name -> its status (Connect's `GET /connectors?expand=status`
    entry's "status"). Back means: every connector that was RUNNING before the restart is
    RUNNING with all the tasks it had, each RUNNING; no connector or task is UNASSIGNED. A task
    that had already FAILED before the restart is not waited for (repairing it is `pulumi up`'s
    job, not the restart's)."""
    for name in sorted(set(before) | set(now)):
        status = now.get(name)
        if status is None:
            return f"connector {name} not listed yet"
        state = str((status.get("connector") or {}).get("state"))
        tasks = _task_states(status)
        if state == UNASSIGNED:
            return f"connector {name} is UNASSIGNED"
        unassigned = sorted(i for i, s in tasks.items() if s == UNASSIGNED)
        if unassigned:
            return f"connector {name} task {unassigned[0]} is UNASSIGNED"
        was = before.get(name)
        if was is None or str((was.get("connector") or {}).get("state")) != RUNNING:
            continue
        if state != RUNNING:
            return f"connector {name} is {state}, was RUNNING"
        for task_id, task_state in sorted(_task_states(was).items()):
            if task_state == RUNNING and tasks.get(task_id) != RUNNING:
                return f"connector {name} task {task_id} is {tasks.get(task_id, 'missing')}, was RUNNING"
    return None


def failed_during_roll(
    before: Mapping[str, Mapping[str, Any]], now: Mapping[str, Mapping[str, Any]]
) -> dict[str, list[str]]:
    """The connectors with an instance that was RUNNING before the restart and is FAILED now:
    connector name -> those instances ("connector", "task 0", ...), with the first line of each
    failure's trace. A restart can fail work it did not touch: a task that asks the group leader
    to fence its zombies while the leader stops for its own turn is killed by Connect ("will not
    recover until manually restarted"). Failures from before the restart are not listed."""
    failed: dict[str, list[str]] = {}
    for name in sorted(set(before) & set(now)):
        was, status = before[name], now[name]
        found = []
        connector = status.get("connector") or {}
        if str((was.get("connector") or {}).get("state")) == RUNNING and str(connector.get("state")) == FAILED:
            found.append(_with_cause("connector", connector))
        was_tasks = _task_states(was)
        for task in sorted(status.get("tasks") or [], key=lambda t: int(t.get("id", -1))):
            task_id = int(task.get("id", -1))
            if was_tasks.get(task_id) == RUNNING and str(task.get("state")) == FAILED:
                found.append(_with_cause(f"task {task_id}", task))
        if found:
            failed[name] = found
    return failed


def restart_during_roll_text(component: str, connector: str, instances: list[str], refused: str | None) -> str:
    """The line `pulumi up` shows when a roll restarts what failed during a process's turn."""
    what = ", ".join(instances)
    if refused:
        return (
            f"{component}: {connector}: {what} failed during this restart turn; asking Connect to restart it "
            f"failed ({refused}). The roll waits for it, bounded; if it stays FAILED, run "
            f"`bin/connectors --stack <stack> status` and `pulumi up` again."
        )
    return f"{component}: {connector}: {what} failed during this restart turn; restarted it once"


def _with_cause(instance: str, entry: Mapping[str, Any]) -> str:
    trace = str(entry.get("trace") or "").strip()
    return f"{instance} ({first_line(trace, 160)})" if trace else instance


def missing_from_isr(node_id: int, partitions: Iterable[tuple[str, int, Iterable[int], Iterable[int]]]) -> list[str]:
    """The partitions (as "topic-partition") that `node_id` hosts but is not in the ISR of.

    `partitions`: (topic, partition, replicas, isr) for every partition of the cluster."""
    missing = []
    for topic, partition, replicas, isr in partitions:
        if node_id in set(replicas) and node_id not in set(isr):
            missing.append(f"{topic}-{partition}")
    return sorted(missing)


def assignments_of(worker_id: str | None, statuses: Mapping[str, Mapping[str, Any]]) -> int:
    """How many connectors and tasks `worker_id` runs (None: on any worker), by their status."""
    count = 0
    for status in statuses.values():
        entries = [status.get("connector") or {}, *(status.get("tasks") or [])]
        count += sum(1 for e in entries if e.get("worker_id") and worker_id in (None, e.get("worker_id")))
    return count


def quorum_pause(brokers: int) -> str | None:
    """Why a rolling restart of a cluster of `brokers` combined broker+controller nodes pauses it,
    None when the quorum keeps a majority with one node down (1 node restarts alone anyway)."""
    if brokers != 2:
        return None
    return (
        "its 2 brokers are its 2 KRaft controllers, and 1 of 2 is no majority: while each restarts, "
        "leader elections, ISR changes and acks=all produces wait until it is back "
        "(3 brokers keep serving through a roll)"
    )


@dataclass(frozen=True)
class RollStop:
    """Where a roll stopped: the process that did not come back, and the first line of why."""

    component: str
    cause: str


def refused_after_stop(component: str, stop: RollStop | None) -> str | None:
    """None when `component` may take its restart turn; otherwise the error that says it was left
    running because the roll of its group stopped at another process."""
    if stop is None:
        return None
    return (
        f"{component}: not restarted, left running: the rolling restart of its group stopped at "
        f"{stop.component}, which did not come back ({stop.cause}). Next step: fix that process first "
        "(its error in this run shows its log), then run `pulumi up` again to finish the roll."
    )
