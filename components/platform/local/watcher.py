"""The auto-restart watcher as a managed process of a local stack (``pulumi-python:dynamic/local:Watcher``).

One per local worker group, started and stopped by the stack like the workers: it starts a
worker process that died on its own again, with the back-off of components/watch/backoff.py (as
Kubernetes restarts a pod), and restarts the group's autoRestart connectors when they fail. Run as:
`python -m components.ops.watcher --plan <run>/watcher-<group>/plan.json`, in its own
session, carrying the stack's process marker (so `bin/drill`, the tests' safety net and destroy
find it). Its files, under the stack's run directory:

- `watcher-<group>/plan.json`: what it watches (no secret);
- `watcher-<group>/rest-secrets.properties` (0600): the REST credentials with restAuth;
- `watcher-<group>/watcher.log`: one line per worker or connector restart, give-up, reset or lost endpoint;
- `watcher-<group>/status.json`: its status, replaced atomically after every poll
  (format: docs/day2-operations.md).

read reports ``running: false`` for a dead watcher, so refresh shows it and `up` starts it again.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CheckResult, CreateResult, DiffResult, ReadResult, Resource, ResourceProvider, UpdateResult

from components.platform.local import process as proc
from components.platform.local.layout import WATCHER_STATUS_FILE as STATUS_FILE
from components.platform.local.layout import LocalPlatform, watcher_path, worker_path
from components.rpc_values import plain
from components.topology import Topology, worker_rest_urls
from components.topology.auto_restart import watched_connectors

PLAN_FILE = "plan.json"
AUTH_FILE = "rest-secrets.properties"
LOG_FILE = "watcher.log"
_RESTART_KEYS = ("plan", "auth", "python", "project_dir")
_START_S = 30.0  # the first status file appears after one poll


def _start(props: Mapping[str, Any]) -> dict[str, Any]:
    run_dir = Path(props["run_dir"])
    run_dir.mkdir(parents=True, exist_ok=True)
    plan = dict(plain(props["plan"]))
    auth = plain(props.get("auth"))
    plan["statusFile"] = str(run_dir / STATUS_FILE)
    plan["authFile"] = None
    if auth:
        proc.write_private(run_dir / AUTH_FILE, f"username={auth['username']}\npassword={auth['password']}\n")
        plan["authFile"] = str(run_dir / AUTH_FILE)
    (run_dir / PLAN_FILE).write_text(json.dumps(plan, indent=2, sort_keys=True) + "\n")
    (run_dir / STATUS_FILE).unlink(missing_ok=True)
    cmd = [
        props["python"],
        "-m",
        "components.ops.watcher",
        "--plan",
        str(run_dir / PLAN_FILE),
        f"{proc.MARKER_FLAG}{props['marker']}",
    ]
    pid = proc.spawn(cmd, run_dir / LOG_FILE, props["project_dir"])
    deadline = time.monotonic() + _START_S
    while not (run_dir / STATUS_FILE).exists():
        if not proc.is_alive(pid) or time.monotonic() > deadline:
            proc.stop(props["marker"], pid, grace_s=5)
            tail = (run_dir / LOG_FILE).read_text(errors="replace")[-2000:]
            raise proc.ProcessError(
                f"{props['component']}: the watcher did not write its first status within {_START_S:g}s.\n{tail}\n"
                "Fix: read the log above (`bin/watcher --plan` runs the same thing in the foreground)."
            )
        time.sleep(0.2)
    return {
        **props,
        "pid": pid,
        "running": True,
        "log_file": str(run_dir / LOG_FILE),
        "status_file": str(run_dir / STATUS_FILE),
    }


class WatcherProvider(ResourceProvider):
    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        return CheckResult(news, [])

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=props["marker"], outs=_start(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        olds, news = plain(olds), plain(news)
        changed = [k for k in _RESTART_KEYS if (olds.get(k) or None) != (news.get(k) or None)]
        if olds.get("running") is False:
            changed.append("running")  # found dead by refresh: start it again
        replaces = ["run_dir"] if olds.get("run_dir") != news.get("run_dir") else []
        return DiffResult(changes=bool(changed or replaces), replaces=replaces, delete_before_replace=True)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        proc.stop(olds["marker"], olds.get("pid"), grace_s=10)
        return UpdateResult(outs=_start(news))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(
            id_=id_, outs={**props, "running": proc.is_running(props.get("pid"), props.get("marker", id_))}
        )

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        proc.stop(props["marker"], props.get("pid"), grace_s=10)
        proc.remove_run_dir(props["run_dir"])


class LocalWatcher(Resource, module="local", name="Watcher"):
    """The auto-restart watcher of one local worker group, run as a process of the stack."""

    pid: pulumi.Output[int]
    running: pulumi.Output[bool]
    log_file: pulumi.Output[str]
    status_file: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        component: str,
        marker: str,
        run_dir: str,
        plan: pulumi.Input[Mapping[str, Any]],
        auth: pulumi.Input[Mapping[str, str]] | None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        opts = pulumi.ResourceOptions.merge(pulumi.ResourceOptions(additional_secret_outputs=["auth"]), opts)
        super().__init__(
            WatcherProvider(),
            resource_name,
            {
                "component": component,
                "marker": marker,
                "run_dir": run_dir,
                "plan": plan,
                "auth": pulumi.Output.secret(auth) if auth is not None else None,
                "python": sys.executable,
                "project_dir": str(Path(__file__).resolve().parents[3]),
                "pid": None,
                "running": None,
                "log_file": None,
                "status_file": None,
            },
            opts,
        )


def deploy_local_watcher(
    parent: pulumi.ComponentResource,
    name: str,
    topology: Topology,
    group: str,
    local: LocalPlatform,
    auth: pulumi.Input[Mapping[str, str]] | None,
    ca_pem: pulumi.Input[str] | None,
    workers: list[pulumi.Resource],
) -> LocalWatcher:
    """The group's watcher: it restarts dead worker processes, and the connectors of flows with
    autoRestart on."""
    from components.watch.plan import WatchPlan, WorkerProcess, plan_document

    connectors = watched_connectors(topology, group)
    path = watcher_path(group)
    declared = topology.worker_groups[group]
    first, *others = worker_rest_urls(declared)
    processes = tuple(
        WorkerProcess(f"worker {i}", local.run_dir(worker_path(group, i)), local.marker(worker_path(group, i)))
        for i in range(declared.workers)
    )
    plan = pulumi.Output.from_input(ca_pem).apply(
        lambda ca: plan_document(
            WatchPlan(
                group=group, url=first, connectors=connectors, ca_pem=ca, other_urls=tuple(others), workers=processes
            )
        )
    )
    return LocalWatcher(
        f"{name}-watcher",
        component=f"ConnectWorkerGroup {group!r}, auto-restart watcher",
        marker=local.marker(path),
        run_dir=local.run_dir(path),
        plan=plan,
        auth=auth,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=workers),
    )
