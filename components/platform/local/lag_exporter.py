"""The lag exporter of one local worker group, run as a process of the stack
(``pulumi-python:dynamic/local:LagExporter``; what it serves: components/ops/lag_exporter.py).

Its files, under the stack's run directory:

- `lag-exporter-<group>/plan.json`: what it reads (components/watch/lag_plan.py; no secret);
- `lag-exporter-<group>/clients-secrets.json` (0600): the clusters' secret client settings;
- `lag-exporter-<group>/state.json`: the sentinel's memory and every expiry it found (kept
  across restarts and updates, removed with the stack);
- `lag-exporter-<group>/lag-exporter.log`: one line per expiry, reading error and start;
- `lag-exporter-<group>/status.json`: its URL and the last reading's figures.

It listens on 127.0.0.1:<lagPort> when the group sets `lagPort`, so a restart keeps its URL (a
Prometheus scrape job written from the outputs stays right); without it, on a free loopback port
chosen at each start. The URL is its `url` output and the stack exports it as
`connect.<group>.lagUrl`. A lagPort another program holds fails the start naming the key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.dynamic import Resource

from components.platform.lag_exporter import plan_for, secret_clients
from components.platform.local import process as proc
from components.platform.local.layout import LAG_EXPORTER_STATE_FILE, LocalPlatform, lag_exporter_path
from components.platform.local.service import ServiceProvider, service_inputs, service_options
from components.rpc_values import plain
from components.topology import Topology
from components.watch.lag_plan import POLL_S, plan_document, split_client


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

    def _start(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Started as every service is, on its lagPort when it has one: a port another program
        holds fails here, naming the key, rather than as a start that timed out."""
        plan = plain(props["plan"])
        port = listen_port(str(plan.get("listen") or ""))
        if not port:
            return super()._start(props)
        key = lag_port_key(str(plan["group"]))
        proc.check_ports_free(props["component"], [port], key)
        try:
            return super()._start(props)
        except proc.ProcessError as exc:
            if not proc.port_in_use(port):  # our exporter is stopped by now: anyone there is another program
                raise
            raise proc.ProcessError(
                f"{exc}\n{props['component']}: port {port} on 127.0.0.1 already in use, taken by another "
                f"program as the exporter started. Fix: stop whatever listens there (`ss -ltnp | grep :{port}`) "
                f"or choose another port with `{key}` in the stack config."
            ) from exc


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

    listen = f"127.0.0.1:{topology.worker_groups[group].lag_port or 0}"

    def document(public_clients: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
        plan = plan_for(topology, group, public_clients, listen=listen, poll_s=POLL_S)
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


def lag_port_key(group: str) -> str:
    """The stack config key that sets the group's exporter port, as messages name it."""
    return f"mm2:workerGroups.{group}.lagPort"


def listen_port(listen: str) -> int:
    """The port of a plan's `host:port` listen address; 0 for any free port."""
    return int(listen.rpartition(":")[2] or 0)
