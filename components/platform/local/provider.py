"""Dynamic provider for JVM processes of the `local` platform (type ``pulumi-python:dynamic/local:Process``).

- create: check the ports are free, write the config, format KRaft storage (brokers), start the
  JVM, wait (bounded) until it is ready; on any failure stop it and remove its directory.
- read: reports ``running: false`` for a dead process, so ``pulumi refresh`` shows the drift and
  the next ``pulumi up`` restarts it (an in-place update: data is kept).
- update: restart with the new config, keeping the data directory.
- delete: stop (SIGTERM, SIGKILL after a bound) and remove the run directory.

The provider object is pickled into the program's state by Pulumi: it holds no client or handle,
only code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.dynamic import (
    CheckResult,
    CreateResult,
    DiffResult,
    ReadResult,
    Resource,
    ResourceProvider,
    UpdateResult,
)

from components.platform.local import process as proc
from components.platform.local.process_diff import group_size, process_diff
from components.platform.local.rolling import rolling_update
from components.platform.readiness import readiness_probe
from components.rpc_values import plain
from components.topology.model import LOOPBACK

# Inputs whose change restarts the process in place; run_dir and cluster_id replace it.
# A changed secret file restarts too: brokers and workers read JAAS settings once, at start.
# `restart_on` carries fingerprints of the certificates the process loads (components/platform/local/tls.py).
RESTART_KEYS = (
    "properties",
    "main_class",
    "classpath_dir",
    "heap",
    "ready",
    "jvm_options",
    "secret_files",
    "restart_on",
    "netns",
)
REPLACE_KEYS = ("run_dir", "marker", "cluster_id")


def _spec(props: Mapping[str, Any]) -> proc.JvmSpec:
    return proc.JvmSpec(
        component=props["component"],
        marker=props["marker"],
        main_class=props["main_class"],
        classpath_dir=props["classpath_dir"],
        run_dir=props["run_dir"],
        properties=dict(props["properties"]),
        heap=props.get("heap") or "512m",
        java=proc.find_java(),
        jvm_options=tuple(str(o) for o in plain(props.get("jvm_options")) or ()),
        secret_files={str(k): str(v) for k, v in (plain(props.get("secret_files")) or {}).items()},
        netns=props.get("netns") or None,
    )


def _launch(props: Mapping[str, Any], *, fresh: bool) -> dict[str, Any]:
    """Start the process and wait until ready. On failure stop it; if `fresh`, remove its directory."""
    spec = _spec(props)
    if fresh:
        # Pulumi carries numbers as floats (protobuf Struct): ports must become ints again.
        ports = [int(p) for p in props.get("ports") or []]
        host = props.get("host") or LOOPBACK
        proc.check_ports_free(spec.component, ports, props.get("config_key", "the ports"), host)
    try:
        proc.prepare_run_dir(spec)
        if props.get("cluster_id"):
            proc.format_storage(spec, props["cluster_id"])
        pid = proc.start(spec)
        proc.wait_ready(spec, pid, readiness_probe(props), float(props.get("timeout_seconds") or 180))
    except BaseException:
        proc.stop_for_good(spec.run_dir, spec.marker, grace_s=5)  # a failed start is not restarted
        if fresh:
            proc.remove_run_dir(spec.run_dir)
        raise
    return {**props, "pid": pid, "running": True, "log_file": str(spec.log_file)}


class ProcessProvider(ResourceProvider):
    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        return CheckResult(news, [])

    def create(self, props: dict[str, Any]) -> CreateResult:
        outs = _launch(props, fresh=True)
        return CreateResult(id_=props["marker"], outs=outs)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return process_diff(olds, news, restart_keys=RESTART_KEYS, replace_keys=REPLACE_KEYS, peers=_peers(olds, news))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        def restart() -> dict[str, Any]:
            proc.stop_for_good(olds["run_dir"], olds["marker"], olds.get("pid"))
            return _launch(news, fresh=False)

        # `rolling`: one process of its group at a time (components/topology/restarts.py).
        if not plain(news.get("rolling")):
            return UpdateResult(outs=restart())
        return UpdateResult(outs=rolling_update(news, restart, lambda: proc.log_tail(_spec(news))))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        running = proc.is_running(props.get("pid"), props.get("marker", id_))
        return ReadResult(id_=id_, outs={**props, "running": running})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        proc.stop_for_good(props["run_dir"], props["marker"], props.get("pid"))
        proc.remove_run_dir(props["run_dir"])


def _peers(olds: Mapping[str, Any], news: Mapping[str, Any]) -> int:
    """How many processes the cluster or group of this one runs, for the blast radius the preview
    reports: the `group_size` input the platform sets; for state written before that input, a
    broker's quorum voters. Pure: diff reads nothing but its inputs."""
    declared = plain(news.get("group_size"))
    if isinstance(declared, (int, float)) and declared >= 1:
        return int(declared)  # Pulumi carries numbers as floats
    return group_size(news) or group_size(olds) or 1


class LocalProcess(Resource, module="local", name="Process"):
    """One JVM (a KRaft broker or a Connect worker) managed on this machine."""

    pid: pulumi.Output[int]
    running: pulumi.Output[bool]
    log_file: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        component: str,
        marker: str,
        main_class: str,
        classpath_dir: str,
        run_dir: str,
        properties: pulumi.Input[Mapping[str, str]],
        ports: list[int],
        config_key: str,
        ready: pulumi.Input[Mapping[str, Any]],
        cluster_id: str | None = None,
        heap: str = "512m",
        timeout_seconds: int = 180,
        jvm_options: list[str] | None = None,
        secret_files: pulumi.Input[Mapping[str, str]] | None = None,
        restart_on: pulumi.Input[Mapping[str, str]] | None = None,
        opts: pulumi.ResourceOptions | None = None,
        rolling: Mapping[str, Any] | None = None,
        group_size: int | None = None,
        host: str = LOOPBACK,
        netns: str | None = None,
    ) -> None:
        # `ready` may carry the probe's credentials and `secret_files` are secrets by definition:
        # both are stored encrypted in state, inputs and outputs alike.
        opts = pulumi.ResourceOptions.merge(
            pulumi.ResourceOptions(additional_secret_outputs=["ready", "secret_files"]), opts
        )
        super().__init__(
            ProcessProvider(),
            resource_name,
            {
                "component": component,
                "marker": marker,
                "main_class": main_class,
                "classpath_dir": classpath_dir,
                "run_dir": run_dir,
                "properties": properties,
                "ports": ports,
                "config_key": config_key,
                "ready": pulumi.Output.secret(ready),
                "cluster_id": cluster_id,
                "heap": heap,
                "timeout_seconds": timeout_seconds,
                "jvm_options": list(jvm_options or []),
                "secret_files": pulumi.Output.secret(secret_files or {}),
                "restart_on": restart_on or {},
                # Not a restart key: how the process restarts, not what it runs (rolling.py).
                "rolling": dict(rolling) if rolling else None,
                # Not a restart key either: how many processes its cluster or group runs, which
                # the preview's blast radius names ("all 2 together").
                "group_size": group_size,
                # Where it listens, and the network namespace it runs in (an emulated datacenter's).
                "host": host,
                "netns": netns,
                "pid": None,
                "running": None,
                "log_file": None,
            },
            opts,
        )
