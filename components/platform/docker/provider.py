"""The docker platform's containers as a Pulumi dynamic resource over the Docker Engine API.

Why not pulumi_docker: its resources need the docker provider plugin, which cannot be obtained
on a machine that reaches only the package registries (the Go module proxy refuses
`github.com/pulumi/pulumi-docker/provider` at every major version). The project already speaks to
the engine (`engine.DockerEngine`), so `pulumi up` runs the same calls its tests do.

- create: a container left behind under the same name (a failed run) is removed; the spec's
  ports must be free on the host (host network); the container is run and `up` waits until the
  `ready` probe passes (components/platform/readiness.py). A failed create removes what it made.
- diff: the local platform's (`process_diff`): what restarts, what replaces, the blast radius,
  and a container that refresh found stopped is started again.
- update: the container is removed and run from the new inputs; one whose group rolls
  (`rolling`) takes its group's turn and keeps it until it is back (local/rolling.py).
- read: whether the container runs (refresh finds one killed behind the stack's back).
- delete: the container and its data volume are removed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
from pulumi.dynamic import CheckResult, CreateResult, DiffResult, ReadResult, Resource, ResourceProvider, UpdateResult

from components.platform.docker.engine import DockerEngine, DockerEngineError
from components.platform.docker.specs import RESTART_POLICY, ContainerSpec
from components.platform.local import process as proc
from components.platform.local.process_diff import process_diff
from components.platform.local.rolling import rolling_update
from components.platform.readiness import readiness_probe
from components.rpc_values import plain

# What the container runs: a change restarts it (removed and run again from the new inputs).
RESTART_KEYS = ("image", "command", "env", "uploads", "secret_files", "healthcheck", "restart", "volume_path", "ready")
# Where and under which name it runs: a change replaces it (the old one is deleted first).
REPLACE_KEYS = ("engine", "name", "volume", "stack")
_POLL_S = 0.5
_STOP_GRACE_S = 30  # SIGTERM, then SIGKILL: a broker's controlled shutdown fits in it


def _spec(props: Mapping[str, Any]) -> ContainerSpec:
    p = plain(props)
    return ContainerSpec(
        name=str(p["name"]),
        image=str(p["image"]),
        command=tuple(str(c) for c in p.get("command") or ()),
        env={str(k): str(v) for k, v in (p.get("env") or {}).items()},
        uploads={str(k): str(v) for k, v in (p.get("uploads") or {}).items()},
        volume=p.get("volume") or None,
        volume_path=p.get("volume_path") or None,
        healthcheck=tuple(str(c) for c in p.get("healthcheck") or ()),
        restart=str(p.get("restart") or RESTART_POLICY),
        stack=str(p.get("stack") or ""),
    )


def _logs(engine: DockerEngine, name: str) -> str:
    try:
        return f"--- last lines of container {name} ---\n{engine.logs(name, tail=40)}"
    except DockerEngineError as exc:
        return f"(its log could not be read: {exc})"


def _wait_ready(engine: DockerEngine, props: Mapping[str, Any]) -> dict[str, Any]:
    """Until the `ready` probe passes; the container's inspect then. Bounded by timeout_seconds."""
    name, component = str(props["name"]), str(props["component"])
    probe = readiness_probe(props)
    timeout_s = float(props.get("timeout_seconds") or 180)
    deadline = time.monotonic() + timeout_s
    while True:
        info = engine.container(name) or {}
        state = info.get("State") or {}
        if not state.get("Running") and not state.get("Restarting"):
            raise proc.ProcessError(
                f"{component}: container {name} exited (code {state.get('ExitCode')}) before it was ready.\n"
                f"{_logs(engine, name)}\nFix: read its log above, correct the stack config, then run `pulumi up` again."
            )
        why = probe()
        if why is None:
            return info
        if time.monotonic() >= deadline:
            raise proc.ProcessError(
                f"{component}: container {name} not ready after {timeout_s:.0f}s ({why}).\n{_logs(engine, name)}\n"
                "Fix: read its log above; then run `pulumi up` again."
            )
        time.sleep(_POLL_S)


def _launch(props: Mapping[str, Any], *, fresh: bool) -> dict[str, Any]:
    """Run the container and wait until ready; on failure remove it (and, if `fresh`, the volume
    this call created)."""
    spec = _spec(props)
    secret_files = {str(k): str(v) for k, v in (plain(props.get("secret_files")) or {}).items()}
    with DockerEngine(str(props["engine"])) as engine:
        engine.remove(spec.name, grace_s=5)  # one left behind by a failed run of this stack
        volume_existed = bool(spec.volume) and engine.volume_stack(str(spec.volume)) is not None
        if fresh:
            ports = [int(p) for p in props.get("ports") or []]  # Pulumi carries numbers as floats
            proc.check_ports_free(str(props["component"]), ports, str(props.get("config_key") or "the ports"))
        try:
            engine.run(spec, secret_files)
            info = _wait_ready(engine, props)
        except BaseException:
            engine.remove(spec.name, grace_s=5)
            if fresh and spec.volume and not volume_existed:
                engine.remove_volume(spec.volume)
            raise
    return {**props, "container_id": info.get("Id", ""), "pid": int(info["State"].get("Pid") or 0), "running": True}


class ContainerProvider(ResourceProvider):
    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        return CheckResult(news, [])

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=str(props["name"]), outs=_launch(props, fresh=True))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        rolling = plain(news.get("rolling"))
        peers = int(rolling["processes"]) if rolling else int(plain(news.get("group_size")) or 1)
        return process_diff(olds, news, restart_keys=RESTART_KEYS, replace_keys=REPLACE_KEYS, peers=peers)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        def restart() -> dict[str, Any]:
            with DockerEngine(str(olds["engine"])) as engine:
                engine.remove(str(olds["name"]), grace_s=_STOP_GRACE_S)
            return _launch(news, fresh=False)

        if not plain(news.get("rolling")):
            return UpdateResult(outs=restart())

        def log_tail() -> str:
            with DockerEngine(str(news["engine"])) as engine:
                return _logs(engine, str(news["name"]))

        return UpdateResult(outs=rolling_update(news, restart, log_tail))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        try:
            with DockerEngine(str(props["engine"])) as engine:
                info = engine.container(str(props.get("name") or id_)) or {}
        except DockerEngineError:
            info = {}  # no engine answering: nothing of the stack runs
        running = bool((info.get("State") or {}).get("Running"))
        return ReadResult(id_=id_, outs={**props, "running": running})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        with DockerEngine(str(props["engine"])) as engine:
            engine.remove(str(props["name"]), grace_s=_STOP_GRACE_S)
            if props.get("volume"):
                engine.remove_volume(str(props["volume"]))


class DockerContainer(Resource, module="docker", name="Container"):
    """One container (a KRaft broker or a Connect worker) on the stack's Docker engine."""

    running: pulumi.Output[bool]
    container_id: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        engine: str,
        spec: ContainerSpec,
        component: str,
        ports: Sequence[int],
        config_key: str,
        ready: pulumi.Input[Mapping[str, Any]],
        secret_files: pulumi.Input[Mapping[str, str]] | None = None,
        rolling: Mapping[str, Any] | None = None,
        group_size: int = 1,
        timeout_seconds: int = 240,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        # `ready` may carry the probe's credentials and `secret_files` are secrets by definition.
        opts = pulumi.ResourceOptions.merge(
            pulumi.ResourceOptions(additional_secret_outputs=["ready", "secret_files"]), opts
        )
        props: dict[str, Any] = {
            "engine": engine,
            "name": spec.name,
            "image": spec.image,
            "command": list(spec.command),
            "env": dict(spec.env),
            "uploads": dict(spec.uploads),
            "volume": spec.volume,
            "volume_path": spec.volume_path,
            "healthcheck": list(spec.healthcheck),
            "restart": spec.restart,
            "stack": spec.stack,
            "secret_files": pulumi.Output.secret(secret_files or {}),
            "component": component,
            "ports": list(ports),
            "config_key": config_key,
            "ready": pulumi.Output.secret(ready),
            "rolling": dict(rolling) if rolling else None,
            "group_size": group_size,
            "timeout_seconds": timeout_seconds,
            "running": None,
            "container_id": None,
            "pid": None,
        }
        super().__init__(ContainerProvider(), resource_name, props, opts)
