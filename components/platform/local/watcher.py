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

from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.dynamic import Resource

from components.platform.local.layout import WATCHER_STATUS_FILE as STATUS_FILE
from components.platform.local.layout import LocalPlatform, watcher_path, worker_path
from components.platform.local.service import PLAN_FILE, ServiceProvider, service_inputs, service_options
from components.topology import Topology, worker_rest_urls
from components.topology.auto_restart import watched_connectors


class WatcherProvider(ServiceProvider):
    """The watcher's process: its REST credentials in `rest-secrets.properties` (0600)."""

    MODULE = "components.ops.watcher"
    WHAT = "the watcher"
    LOG_FILE = "watcher.log"
    SECRETS_FILE = "rest-secrets.properties"
    SECRETS_PLAN_KEY = "authFile"
    HINT = "`bin/watcher --plan` runs the same thing in the foreground"

    def secrets_text(self, auth: Mapping[str, Any]) -> str:
        return f"username={auth['username']}\npassword={auth['password']}\n"


LOG_FILE = WatcherProvider.LOG_FILE
AUTH_FILE = WatcherProvider.SECRETS_FILE
__all__ = [
    "AUTH_FILE",
    "LOG_FILE",
    "PLAN_FILE",
    "STATUS_FILE",
    "LocalWatcher",
    "WatcherProvider",
    "deploy_local_watcher",
]


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
        inputs = service_inputs(component, marker, run_dir, plan, auth)
        super().__init__(WatcherProvider(), resource_name, inputs, service_options(opts))


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
