"""Rolling restarts of the local platform's processes (the effects of components/platform/restarts.py).

A process whose `rolling` input is set belongs to a group restarted one at a time (a worker
group or a multi-broker cluster with more than one process). Its update takes the group's
restart turn (`process.restart_turn`, a lock on the group's directory), restarts, and keeps the
turn until the process is back:
- a worker: it answers on REST, has rejoined its group (it holds a share of the group's
  connectors and tasks when there are enough to share) and every connector and task that ran
  before the restart runs again (`restarts.group_settled`);
- a broker: it is back in the ISR of every partition it hosts (`restarts.missing_from_isr`).
Only then may the next process of the group stop. Every wait is bounded.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from components.platform import restarts
from components.platform.local import process as proc
from components.rpc_values import plain

# How long a restarted process may take to be "back" after it is ready (rejoin, rebalance, ISR).
SETTLE_TIMEOUT_S = 180.0
POLL_S = 0.5


def rolling_update(news: Mapping[str, Any], restart: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run `restart` (stop, start, wait ready) inside the group's restart turn, then wait until
    the process is back before giving the turn to the next one."""
    rolling = plain(news["rolling"])
    ready = plain(news["ready"])
    component = str(news["component"])
    per_process = float(news.get("timeout_seconds") or 180) + SETTLE_TIMEOUT_S + 35  # + stop's grace
    turn_timeout = per_process * max(1, int(rolling.get("processes") or 1))
    with proc.restart_turn(str(rolling["lock"]), component, turn_timeout):
        before = _connect_status(ready) if ready["kind"] == "connect" else {}
        outs = restart()
        if ready["kind"] == "connect":
            _wait(component, lambda: _worker_back(ready, before or {}, int(rolling.get("processes") or 1)))
        else:
            _wait(component, lambda: _broker_back(ready, int(rolling["node_id"])))
    return outs


def _wait(component: str, check: Callable[[], str | None]) -> None:
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while True:
        reason = check()
        if reason is None:
            return
        if time.monotonic() >= deadline:
            raise proc.ProcessError(
                f"{component}: restarted, but not back after {SETTLE_TIMEOUT_S:.0f}s ({reason}); the rest of its "
                "group was not restarted while it waited. Fix: check its log and the connectors' state "
                "(`bin/connectors --stack <stack> status`), then run `pulumi up` again."
            )
        time.sleep(POLL_S)


def _connect_status(ready: Mapping[str, Any]) -> dict[str, Any] | None:
    """The group's connectors and their status (`GET /connectors?expand=status`), None if the
    worker does not answer."""
    import ssl

    import httpx

    auth = ready.get("auth")
    creds = (auth["username"], auth["password"]) if auth else None
    ca_pem = ready.get("ca_pem")
    verify: ssl.SSLContext | bool = ssl.create_default_context(cadata=ca_pem) if ca_pem else True
    try:
        with httpx.Client(timeout=5, auth=creds, verify=verify) as http:
            answer = http.get(f"{ready['url']}/connectors", params={"expand": "status"})
    except httpx.HTTPError:
        return None
    if answer.status_code != 200:
        return None
    return {name: entry.get("status") or {} for name, entry in answer.json().items()}


def _worker_back(ready: Mapping[str, Any], before: Mapping[str, Any], processes: int) -> str | None:
    now = _connect_status(ready)
    if now is None:
        return f"{ready['url']} does not list its group's connectors"
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
    partitions = [
        (topic.topic, p.id, p.replicas, p.isrs) for topic in md.topics.values() for p in topic.partitions.values()
    ]
    missing = restarts.missing_from_isr(node_id, partitions)
    if missing:
        return f"broker {node_id} is not in the ISR of {len(missing)} partition(s), e.g. {missing[0]}"
    return None
