"""The lag exporter of one local worker group, run as a process of the stack
(``pulumi-python:dynamic/local:LagExporter``; what it serves: components/ops/lag_exporter.py).

Its files, under the stack's run directory:

- `lag-exporter-<group>/plan.json`: what it reads (components/watch/lag_plan.py; no secret);
- `lag-exporter-<group>/clients-secrets.json` (0600): the clusters' secret client settings;
- `lag-exporter-<group>/state.json`: the sentinel's memory and every expiry it found (kept
  across restarts and updates, removed with the stack);
- `lag-exporter-<group>/lag-exporter.log`: one line per expiry, reading error and start;
- `lag-exporter-<group>/status.json`: its URL and the last reading's figures.

It listens on a free loopback port; the URL is its `url` output and the stack exports it as
`connect.<group>.lagUrl`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.dynamic import Resource

from components.platform.lag_exporter import POLL_S, plan_for, secret_clients
from components.platform.local.layout import LAG_EXPORTER_STATE_FILE, LocalPlatform, lag_exporter_path
from components.platform.local.service import ServiceProvider, service_inputs, service_options
from components.topology import Topology
from components.watch.lag_plan import plan_document, split_client


class LagExporterProvider(ServiceProvider):
    MODULE = "components.ops.lag_exporter"
    WHAT = "the lag exporter"
    LOG_FILE = "lag-exporter.log"
    SECRETS_FILE = "clients-secrets.json"
    SECRETS_PLAN_KEY = "secretsFile"
    HINT = "`python -m components.ops.lag_exporter --plan <its plan.json>` runs it in the foreground"

    def secrets_text(self, secrets: Mapping[str, Any]) -> str:
        return json.dumps(secrets, sort_keys=True)

    def outputs_from_status(self, status: Mapping[str, Any]) -> dict[str, Any]:
        return {"url": status.get("url")}


class LocalLagExporter(Resource, module="local", name="LagExporter"):
    """The lag exporter of one local worker group."""

    pid: pulumi.Output[int]
    running: pulumi.Output[bool]
    url: pulumi.Output[str]
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
        secrets: pulumi.Input[Mapping[str, Any]],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        inputs = service_inputs(component, marker, run_dir, plan, secrets, "url")
        super().__init__(LagExporterProvider(), resource_name, inputs, service_options(opts))


def deploy_local_lag_exporter(
    parent: pulumi.ComponentResource,
    name: str,
    topology: Topology,
    group: str,
    local: LocalPlatform,
    clients: Mapping[str, pulumi.Input[Mapping[str, str]]],
    workers: list[pulumi.Resource],
) -> LocalLagExporter:
    """The group's lag exporter; `clients` holds each cluster's librdkafka settings (secret)."""
    path = lag_exporter_path(group)
    run_dir = local.run_dir(path)
    aliases = sorted(clients)
    every = pulumi.Output.all(*[clients[a] for a in aliases]).apply(lambda got: dict(zip(aliases, got, strict=True)))
    public = every.apply(lambda c: {a: split_client(v or {})[0] for a, v in c.items()})

    def document(public_clients: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
        plan = plan_for(topology, group, public_clients, listen="127.0.0.1:0", poll_s=POLL_S)
        return {**plan_document(plan), "stateFile": f"{run_dir}/{LAG_EXPORTER_STATE_FILE}"}

    return LocalLagExporter(
        f"{name}-lag-exporter",
        component=f"ConnectWorkerGroup {group!r}, lag exporter",
        marker=local.marker(path),
        run_dir=run_dir,
        plan=pulumi.Output.unsecret(public.apply(document)),
        secrets=every.apply(lambda c: secret_clients(topology, group, c)),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=workers),
    )
