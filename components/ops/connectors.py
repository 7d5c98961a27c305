"""Connector lifecycle for a stack's flows: status, restart, pause, resume, stop.

    bin/connectors --stack dev status [--flow primary->dr] [--failed-only]
    bin/connectors --stack dev restart [--flow F] [--failed-only] [--role source]
    bin/connectors --stack dev pause|resume|stop [--flow F] [--role checkpoint]
    bin/connectors --outputs outputs.json status --json

Every call goes through ConnectClient (retries on rebalances, errors with method, path, status and
Connect's message) to the worker group that runs the flow, with basic auth when the stack outputs
carry credentials for it.

These are operator actions outside Pulumi: a paused or stopped connector keeps its config and
stays so until `pulumi up --refresh` (or a change to that connector) puts back the state the
stack declares (`mm2:flows.<flow>.state`, running unless said otherwise).

Exit codes: 0 done (status: everything RUNNING), 1 an error, 3 status found a connector or task
not RUNNING (FAILED, PAUSED, STOPPED, UNASSIGNED, or missing).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any

from components.ops.clients import connect_client, flow
from components.ops.errors import OpsError
from components.outputs.contract import OutputsError, StackExports
from components.outputs.loader import load_exports
from components.topology.model import ROLE_NAMES

# The stack outputs key connectors by the role's value, in the model's order.
POLL_S = 1.0  # between status polls while waiting for a state


class Operation(str, Enum):
    STATUS = "status"
    RESTART = "restart"
    PAUSE = "pause"
    RESUME = "resume"
    STOP = "stop"


@dataclass(frozen=True)
class Target:
    """One connector of one flow, and the worker group that runs it."""

    flow: str
    role: str
    name: str
    worker_group: str


@dataclass(frozen=True)
class TaskState:
    id: int
    state: str
    worker: str
    trace: str = ""


@dataclass(frozen=True)
class ConnectorStatus:
    flow: str
    role: str
    name: str
    state: str  # RUNNING, PAUSED, STOPPED, FAILED, UNASSIGNED, or MISSING (Connect has no such connector)
    worker: str
    tasks: tuple[TaskState, ...]

    @property
    def failed(self) -> bool:
        return self.state == "FAILED" or any(t.state == "FAILED" for t in self.tasks)

    @property
    def healthy(self) -> bool:
        return self.state == "RUNNING" and all(t.state == "RUNNING" for t in self.tasks)


def select_targets(outputs: StackExports, flow_names: Sequence[str] = (), roles: Sequence[str] = ()) -> list[Target]:
    """The connectors of the named flows (all flows when none), restricted to `roles`."""
    names = list(flow_names) or sorted(outputs.flows)
    for role in roles:
        if role not in ROLE_NAMES:
            raise OpsError(f"--role {role!r}: not a connector role; use one of {', '.join(ROLE_NAMES)}")
    targets = []
    for name in names:
        f = flow(outputs, name)
        for role in ROLE_NAMES:
            if role in f.connectors and (not roles or role in roles):
                targets.append(Target(name, role, f.connectors[role], f.worker_group))
    return targets


def parse_status(target: Target, status: Mapping[str, Any] | None) -> ConnectorStatus:
    """Connect's GET status answer (or None for 404) as a ConnectorStatus."""
    if status is None:
        return ConnectorStatus(target.flow, target.role, target.name, "MISSING", "", ())
    connector = status.get("connector") or {}
    tasks = tuple(
        TaskState(
            int(t.get("id", -1)), str(t.get("state", "UNKNOWN")), str(t.get("worker_id", "")), str(t.get("trace", ""))
        )
        for t in status.get("tasks") or []
    )
    return ConnectorStatus(
        target.flow,
        target.role,
        target.name,
        str(connector.get("state", "UNKNOWN")),
        str(connector.get("worker_id", "")),
        tasks,
    )


def render_states(states: Sequence[ConnectorStatus]) -> str:
    lines = []
    for s in states:
        tasks = ", ".join(f"task {t.id} {t.state}@{t.worker}" for t in s.tasks) or "no tasks"
        lines.append(f"{s.flow:<20} {s.role:<10} {s.name:<40} {s.state:<10} {s.worker:<22} {tasks}")
        for t in s.tasks:
            if t.state == "FAILED" and t.trace:
                lines.append("    " + "\n    ".join(t.trace.strip().splitlines()[:4]))
    return "\n".join(lines) or "(no connectors)"


def run(
    outputs: StackExports,
    op: Operation,
    *,
    flows: Sequence[str] = (),
    roles: Sequence[str] = (),
    failed_only: bool = False,
    wait_s: float = 0.0,
    log: Any = print,
) -> list[ConnectorStatus]:
    """Apply `op` to the selected connectors; returns their status afterwards."""
    targets = select_targets(outputs, flows, roles)
    if failed_only and op not in (Operation.STATUS, Operation.RESTART):
        raise OpsError(f"--failed-only applies to status and restart, not {op.value}")
    by_group: dict[str, list[Target]] = {}
    for t in targets:
        by_group.setdefault(t.worker_group, []).append(t)
    states: list[ConnectorStatus] = []
    for group, members in by_group.items():
        with connect_client(outputs, group) as client:
            for t in members:
                before = parse_status(t, client.get_status(t.name))
                if op is not Operation.STATUS:
                    if before.state == "MISSING":
                        raise OpsError(
                            f"connector {t.name} (flow {t.flow}, {t.role}) does not exist on worker group {group}. "
                            "Next step: `bin/pulumi up` for the stack creates it."
                        )
                    if failed_only and not before.failed:
                        log(f"{t.name}: not failed, left alone")
                        states.append(before)
                        continue
                    log(f"{op.value} {t.name} (flow {t.flow}, {t.role}) ...")
                    if op is Operation.RESTART:
                        client.restart(t.name, include_tasks=True, only_failed=failed_only)
                    else:
                        getattr(client, op.value)(t.name)
                    if wait_s and op in (Operation.RESTART, Operation.RESUME):
                        client.wait_running(t.name, wait_s, min_tasks=0 if t.role == "checkpoint" else 1)
                    elif wait_s and op in (Operation.PAUSE, Operation.STOP):
                        _wait_state(client, t, "PAUSED" if op is Operation.PAUSE else "STOPPED", wait_s)
                after = parse_status(t, client.get_status(t.name)) if op is not Operation.STATUS else before
                if op is Operation.STATUS and failed_only and not after.failed:
                    continue
                states.append(after)
    return states


def wait_healthy(
    outputs: StackExports, flows: Sequence[str], timeout_s: float, *, log: Any = print
) -> list[ConnectorStatus]:
    """Poll the flows' connectors until every one and its tasks are RUNNING; returns the last status.

    Right after a deploy or a rebalance a task is briefly UNASSIGNED (MM2's source connector
    reconfigures its tasks once it has listed the topics), so one status read is not a verdict.
    A FAILED connector or task ends the wait at once: it does not recover by itself."""
    deadline = time.monotonic() + timeout_s
    waited = False
    while True:
        states = run(outputs, Operation.STATUS, flows=flows, log=log)
        unhealthy = [s for s in states if not s.healthy]
        if not unhealthy or any(s.failed for s in unhealthy) or time.monotonic() >= deadline:
            return states
        if not waited:
            log(f"waiting up to {timeout_s:.0f}s for {describe(unhealthy)} to be RUNNING ...")
            waited = True
        time.sleep(POLL_S)


def describe(states: Sequence[ConnectorStatus]) -> str:
    """One line per connector: its state and every task not RUNNING, e.g. `x RUNNING (task 0 UNASSIGNED)`."""
    parts = []
    for s in states:
        off = [f"task {t.id} {t.state}" for t in s.tasks if t.state != "RUNNING"]
        parts.append(f"{s.name} {s.state}" + (f" ({', '.join(off)})" if off else ""))
    return ", ".join(parts)


def _wait_state(client: Any, target: Target, wanted: str, timeout_s: float) -> None:
    # Pause and stop are asynchronous: Connect answers 202 and the workers act on it afterwards.
    # Stopped connectors shut their tasks down; paused ones keep them, paused too.
    def reached(s: ConnectorStatus) -> bool:
        return s.state == wanted and all(t.state == wanted for t in s.tasks)

    deadline = time.monotonic() + timeout_s
    state = parse_status(target, client.get_status(target.name))
    while not reached(state) and time.monotonic() < deadline:
        time.sleep(POLL_S)
        state = parse_status(target, client.get_status(target.name))
    if not reached(state):
        raise OpsError(
            f"connector {target.name}: still {state.state} {timeout_s:.0f}s after the {wanted.lower()} request. "
            "Next step: check the worker logs, or `bin/connectors status` again in a moment."
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bin/connectors", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stack", help="stack name (outputs via bin/pulumi stack output)")
    parser.add_argument("--outputs", help="JSON file from `pulumi stack output --json --show-secrets`")
    parser.add_argument("operation", choices=[o.value for o in Operation])
    parser.add_argument("--flow", action="append", default=[], help="flow name, e.g. primary->dr (repeatable)")
    parser.add_argument("--role", action="append", default=[], choices=ROLE_NAMES, help="only this connector role")
    parser.add_argument("--failed-only", action="store_true", help="status: show only failed; restart: only failed")
    parser.add_argument("--wait", type=float, default=60.0, help="restart/resume: wait up to N s for RUNNING (0: no)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    op = Operation(args.operation)
    log = (lambda msg: print(msg, file=sys.stderr)) if args.json else print
    try:
        outputs = load_exports(args.stack, args.outputs)
        states = run(
            outputs,
            op,
            flows=args.flow,
            roles=args.role,
            failed_only=args.failed_only,
            wait_s=args.wait,
            log=log,
        )
    except (OpsError, OutputsError) as exc:
        print(f"connectors: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # ConnectError and friends already name method, path and cause
        from components.connect.errors import ConnectError

        if not isinstance(exc, ConnectError):
            raise
        print(f"connectors: {op.value} failed: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([asdict(s) for s in states], indent=2))
    else:
        print(render_states(states))
    if op is Operation.STATUS and any(not s.healthy for s in states):
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
