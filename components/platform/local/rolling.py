"""Rolling restarts of the local platform's processes (the effects of components/topology/restarts.py).

A process whose `rolling` input is set belongs to a group restarted one at a time (a worker
group or a multi-broker cluster with more than one process). Its update takes the group's
restart turn (`process.restart_turn`, a lock on the group's directory), restarts, and keeps the
turn until the process is back:
- a worker: it answers on REST, has rejoined its group (it holds a share of the group's
  connectors and tasks when there are enough to share) and every connector and task that ran
  before the restart runs again (`restarts.group_settled`);
- a broker: it is back in the ISR of every partition it hosts (`restarts.missing_from_isr`).
Only then may the next process of the group stop. Every wait is bounded.

A process that does not come back (it exits or is not ready at start, dies after, or is not back
within SETTLE_TIMEOUT_S) stops the roll: its update fails with its error and log, and every
process of the group whose turn comes later refuses to restart (`restarts.refused_after_stop`),
so the rest of the group keeps running. Where a roll stopped is kept in this module, per group
directory: the updates of one `up` run as threads of one dynamic-provider process, and the next
`up` (a new process) starts with no stop recorded, so it retries the whole roll.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from components.platform.local import process as proc
from components.rpc_values import plain
from components.topology import restarts
from components.topology.model import RestartMode
from components.topology.traces import first_line

# How long a restarted process may take to be "back" after it is ready (rejoin, rebalance, ISR).
SETTLE_TIMEOUT_S = 180.0
POLL_S = 0.5
# How long asking Connect to restart what a turn failed may retry a busy (rebalancing) group.
RESTART_BUDGET_S = 15.0
# Messages for the `pulumi up` output (the dynamic-provider host forwards this logger to the engine).
LOG = logging.getLogger("dynamic_provider.rolling")

# Group directory -> where its roll stopped in this provider process (this `up`).
_STOPS: dict[str, restarts.RollStop] = {}
_STOPS_LOCK = threading.Lock()


def rolling_input(
    mode: RestartMode, lock_dir: str, processes: int, node_id: int | None = None
) -> dict[str, Any] | None:
    """The `rolling` input of a process or container: None when its group restarts all at once;
    else the directory whose lock is the group's restart turn, the group's size, a broker's id."""
    if mode is not RestartMode.ROLLING:
        return None
    return {"lock": lock_dir, "processes": processes, **({"node_id": node_id} if node_id is not None else {})}


def rolling_update(
    news: Mapping[str, Any],
    restart: Callable[[], dict[str, Any]],
    log_tail: Callable[[], str] = lambda: "(no log)",
) -> dict[str, Any]:
    """Run `restart` (stop, start, wait ready) inside the group's restart turn, then wait until
    the process is back before giving the turn to the next one. A process that does not come back
    stops the roll of its group (module docstring); `log_tail` is its log, for that error."""
    rolling = plain(news["rolling"])
    ready = plain(news["ready"])
    component = str(news["component"])
    group = str(rolling["lock"])
    per_process = float(news.get("timeout_seconds") or 180) + SETTLE_TIMEOUT_S + 35  # + stop's grace
    turn_timeout = per_process * max(1, int(rolling.get("processes") or 1))
    with proc.restart_turn(group, component, turn_timeout):
        with _STOPS_LOCK:
            refusal = restarts.refused_after_stop(component, _STOPS.get(group))
        if refusal:
            raise proc.ProcessError(refusal)
        try:
            before = _connect_status(ready) if ready["kind"] == "connect" else {}
            outs = restart()
            pid = int(outs.get("pid") or 0)
            if ready["kind"] == "connect":
                settle = _WorkerSettle(component, ready, before or {}, int(rolling.get("processes") or 1))
                _wait(component, pid, settle.check, log_tail)
            else:
                _wait(component, pid, lambda: _broker_back(ready, int(rolling["node_id"])), log_tail)
        except Exception as exc:
            with _STOPS_LOCK:
                _STOPS.setdefault(group, restarts.RollStop(component, first_line(str(exc), 300) or "no reason given"))
            raise proc.ProcessError(
                f"{exc}\nThe rolling restart of its group stopped here: the processes whose turn comes later "
                "were left running, not restarted. Once fixed, run `pulumi up --refresh`: the refresh finds "
                "this process stopped, so the up starts it."
            ) from exc
    return outs


def _wait(component: str, pid: int, check: Callable[[], str | None], log_tail: Callable[[], str]) -> None:
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while True:
        if pid and not proc.is_alive(pid):
            raise proc.ProcessError(
                f"{component}: restarted and ready, then exited before it was back in its group.\n{log_tail()}\n"
                "Fix: read the log above, correct the stack config or the machine, then run `pulumi up` again."
            )
        reason = check()
        if reason is None:
            return
        if time.monotonic() >= deadline:
            raise proc.ProcessError(
                f"{component}: restarted, but not back after {SETTLE_TIMEOUT_S:.0f}s ({reason}).\n{log_tail()}\n"
                "Fix: check its log above and the connectors' state (`bin/connectors --stack <stack> status`), "
                "then run `pulumi up` again."
            )
        time.sleep(POLL_S)


def _credentials(ready: Mapping[str, Any]) -> tuple[str, str] | None:
    auth = ready.get("auth")
    return (auth["username"], auth["password"]) if auth else None


def _connect_status(ready: Mapping[str, Any]) -> dict[str, Any] | None:
    """The group's connectors and their status (`GET /connectors?expand=status`), None if the
    worker does not answer."""
    import ssl

    import httpx

    ca_pem = ready.get("ca_pem")
    verify: ssl.SSLContext | bool = ssl.create_default_context(cadata=ca_pem) if ca_pem else True
    try:
        with httpx.Client(timeout=5, auth=_credentials(ready), verify=verify) as http:
            answer = http.get(f"{ready['url']}/connectors", params={"expand": "status"})
    except httpx.HTTPError:
        return None
    if answer.status_code != 200:
        return None
    return {name: entry.get("status") or {} for name, entry in answer.json().items()}


def _restart_failed(ready: Mapping[str, Any], connector: str) -> str | None:
    """`POST /connectors/{name}/restart?includeTasks=true&onlyFailed=true` through ConnectClient
    (which retries a group still rebalancing, for RESTART_BUDGET_S); None when Connect accepted
    it, else why not (the settle wait goes on and names the instance if it stays FAILED)."""
    from components.connect.client import ConnectClient
    from components.connect.errors import ConnectError

    try:
        with ConnectClient(
            str(ready["url"]),
            auth=_credentials(ready),
            ca_pem=ready.get("ca_pem") or None,
            retry_budget_s=RESTART_BUDGET_S,
        ) as client:
            client.restart(connector, include_tasks=True, only_failed=True)
    except ConnectError as exc:
        return str(exc)
    return None


class _WorkerSettle:
    """The check `_wait` polls for a restarted worker: back in its group, and everything that ran
    before the restart runs again. An instance that was RUNNING before and FAILED during the
    restart (restarts.failed_during_roll) is restarted, once per connector in this turn, and
    the `pulumi up` output says so."""

    def __init__(self, component: str, ready: Mapping[str, Any], before: Mapping[str, Any], processes: int) -> None:
        self.component, self.ready, self.before, self.processes = component, ready, before, processes
        self.restarted: set[str] = set()

    def check(self) -> str | None:
        now = _connect_status(self.ready)
        if now is None:
            return f"{self.ready['url']} does not list its group's connectors"
        for name, instances in restarts.failed_during_roll(self.before, now).items():
            if name not in self.restarted:
                self.restarted.add(name)
                refused = _restart_failed(self.ready, name)
                LOG.warning(restarts.restart_during_roll_text(self.component, name, instances, refused))
        reason = _worker_back(self.ready, self.before, self.processes, now)
        if reason and any(f"connector {name} " in reason for name in self.restarted):
            return f"{reason}; restarted once during this turn, it failed again or has not recovered yet"
        return reason


def _worker_back(
    ready: Mapping[str, Any], before: Mapping[str, Any], processes: int, now: Mapping[str, Any]
) -> str | None:
    reason = restarts.group_settled(before, now)
    if reason:
        return reason
    worker_id = str(ready["url"]).split("://", 1)[-1]
    held = restarts.assignments_of(worker_id, now)
    total = restarts.assignments_of(None, now)
    # Rejoined: with at least as many assignments as workers, Connect's balancing gives it a share.
    if total >= processes and held == 0:
        return f"worker {worker_id} holds no connector or task yet"
    return None


def _broker_back(ready: Mapping[str, Any], node_id: int) -> str | None:
    from confluent_kafka.admin import AdminClient  # imported here: only the provider needs it

    conf: dict[str, Any] = {
        "bootstrap.servers": ready["bootstrap"],
        "socket.timeout.ms": 3000,
        "log_level": 0,
        **dict(ready.get("client") or {}),
    }
    try:
        md = AdminClient(conf).list_topics(timeout=5)
    except Exception as exc:
        return f"metadata request to {ready['bootstrap']} failed: {exc}"
    if node_id not in md.brokers:  # registered and unfenced: its metadata has caught up
        return f"broker {node_id} is not among the brokers the cluster lists yet"
    partitions = [
        (str(topic.topic), p.id, p.replicas, p.isrs) for topic in md.topics.values() for p in topic.partitions.values()
    ]
    missing = restarts.missing_from_isr(node_id, partitions)
    if missing:
        return f"broker {node_id} is not in the ISR of {len(missing)} partition(s), e.g. {missing[0]}"
    return None
