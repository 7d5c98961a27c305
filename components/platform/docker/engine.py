"""A Docker Engine, spoken to over its API on a unix socket (httpx): the docker platform's effects
outside Pulumi.

- `missing_images`: which images a docker stack runs are absent from the engine (checked at
  preview: no registry is assumed, so a missing image is an error naming the command that
  builds it, not a pull that fails minutes into `up`).
- `DockerEngine.run_container`: run one `ContainerSpec` exactly as its fields say (host network,
  uploads, secret uploads owned by the image user, named volume, health check, restart policy),
  the fields `provider` runs it from under `pulumi up`.
- `docker_problems`: at preview, the image missing, a port a container needs held by another
  program, a data volume another stack made.

Errors are `DockerEngineError` and carry the call, the engine's status and its message.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from components.platform.docker.specs import ContainerSpec, DockerClaim
from components.platform.errors import PlatformError
from components.platform.image_layout import IMAGE_GROUP_ID, IMAGE_USER_ID
from components.platform.local.process import port_in_use

DEFAULT_SOCKET = "/var/run/docker.sock"
BUILD_COMMAND = "bin/bootstrap --images"
_SECOND_NS = 1_000_000_000


class DockerEngineError(PlatformError, RuntimeError):
    """A Docker Engine call failed: the call, the engine's status and message."""


def engine_socket(environ: Mapping[str, str] | None = None) -> str:
    """The engine's unix socket: DOCKER_HOST (unix://...) or Docker's default."""
    host = (environ if environ is not None else os.environ).get("DOCKER_HOST", "")
    if not host:
        return DEFAULT_SOCKET
    if not host.startswith("unix://"):
        raise DockerEngineError(
            f"DOCKER_HOST={host}: only a local engine on a unix socket is supported. "
            "Fix: set DOCKER_HOST=unix:///path/to/docker.sock, or unset it for /var/run/docker.sock."
        )
    return host.removeprefix("unix://")


class DockerEngine:
    """One Docker Engine. A context manager: it owns an httpx.Client on the socket."""

    def __init__(self, socket: str, *, timeout: float = 30.0, transport: httpx.BaseTransport | None = None) -> None:
        self.socket = socket
        self._http = httpx.Client(
            transport=transport or httpx.HTTPTransport(uds=socket), base_url="http://docker", timeout=timeout
        )

    def __enter__(self) -> DockerEngine:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, *, ok: Sequence[int] = (200, 201, 204), **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise DockerEngineError(
                f"{method} {path}: the Docker engine at {self.socket} did not answer ({exc}). "
                "Fix: start dockerd, or point DOCKER_HOST at a running engine."
            ) from exc
        if response.status_code not in ok:
            try:
                message = response.json().get("message", response.text)
            except ValueError:
                message = response.text
            raise DockerEngineError(f"{method} {path}: HTTP {response.status_code}: {message.strip()}")
        return response

    def version(self) -> str:
        return str(self._call("GET", "/version").json()["Version"])

    def image_id(self, name: str) -> str | None:
        response = self._call("GET", f"/images/{name}/json", ok=(200, 404))
        return None if response.status_code == 404 else str(response.json()["Id"])

    def load(self, archive: Path) -> None:
        """`docker load -i archive`; the engine's stream reports errors inside a 200."""

        def chunks() -> Iterator[bytes]:
            with archive.open("rb") as f:
                yield from iter(lambda: f.read(1 << 20), b"")

        response = self._call("POST", "/images/load?quiet=1", content=chunks(), timeout=600.0)
        for line in response.text.splitlines():
            if line.strip() and (error := json.loads(line).get("error")):
                raise DockerEngineError(f"POST /images/load {archive}: {error}")

    def run_container(self, spec: ContainerSpec, secret_values: Mapping[str, str]) -> str:
        """Create, fill and start one container as `spec` says, its secret files rendered from
        `secret_values`; returns its id."""
        return self.run(spec, {u.path: u.render(secret_values) for u in spec.secret_uploads})

    def run(self, spec: ContainerSpec, secret_files: Mapping[str, str]) -> str:
        """Create, fill and start one container as `spec` says, with `secret_files` (path -> text,
        rendered) uploaded 0600 for the image user; returns its id."""
        mounts = []
        if spec.volume and spec.volume_path:
            self._call("POST", "/volumes/create", json={"Name": spec.volume, "Labels": {"mm2.io/stack": spec.stack}})
            mounts.append({"Type": "volume", "Source": spec.volume, "Target": spec.volume_path})
        body: dict[str, Any] = {
            "Image": spec.image,
            "Cmd": list(spec.command) or None,
            "Env": [f"{k}={v}" for k, v in sorted(spec.env.items())],
            "Labels": {"mm2.io/stack": spec.stack},
            "HostConfig": {"NetworkMode": "host", "RestartPolicy": {"Name": spec.restart}, "Mounts": mounts},
        }
        if spec.healthcheck:
            body["Healthcheck"] = {
                "Test": list(spec.healthcheck),
                "Interval": 5 * _SECOND_NS,
                "Timeout": 3 * _SECOND_NS,
                "Retries": 30,
            }
        created = self._call("POST", "/containers/create", params={"name": spec.name}, json=body).json()
        files = {path: (text, 0o644) for path, text in spec.uploads.items()}
        files.update({path: (text, 0o600) for path, text in secret_files.items()})
        self._call("PUT", f"/containers/{created['Id']}/archive", params={"path": "/"}, content=_tar(files))
        self._call("POST", f"/containers/{created['Id']}/start")
        return str(created["Id"])

    def container(self, name: str) -> dict[str, Any] | None:
        """`docker inspect` of a container, None when there is none of that name."""
        response = self._call("GET", f"/containers/{name}/json", ok=(200, 404))
        return None if response.status_code == 404 else dict(response.json())

    def remove(self, name: str, grace_s: int = 30) -> None:
        """Stop a container (SIGTERM, then SIGKILL after `grace_s`) and remove it; none is fine."""
        self._call("POST", f"/containers/{name}/stop", params={"t": grace_s}, ok=(204, 304, 404), timeout=grace_s + 30)
        self._call("DELETE", f"/containers/{name}", params={"force": 1}, ok=(204, 404))

    def remove_volume(self, name: str) -> None:
        self._call("DELETE", f"/volumes/{name}", ok=(204, 404))

    def volume_stack(self, name: str) -> str | None:
        """The `mm2.io/stack` label of volume `name` ('' when unlabelled), None when there is none."""
        response = self._call("GET", f"/volumes/{name}", ok=(200, 404))
        if response.status_code == 404:
            return None
        return str((response.json().get("Labels") or {}).get("mm2.io/stack", ""))

    def inspect(self, name: str) -> dict[str, Any]:
        return dict(self._call("GET", f"/containers/{name}/json").json())

    def kill(self, name: str, signal: str = "KILL") -> None:
        self._call("POST", f"/containers/{name}/kill", params={"signal": signal})

    def start(self, name: str) -> None:
        self._call("POST", f"/containers/{name}/start", ok=(204, 304))

    def wait(self, name: str, timeout: float = 120.0) -> int:
        """Until the container exits; its exit code."""
        return int(self._call("POST", f"/containers/{name}/wait", timeout=timeout).json()["StatusCode"])

    def logs(self, name: str, tail: int = 60) -> str:
        raw = self._call("GET", f"/containers/{name}/logs", params={"stdout": 1, "stderr": 1, "tail": tail}).content
        return _demux(raw)

    def stack_objects(self, stack: str) -> tuple[list[str], list[str]]:
        """The names of the containers (running or not) and volumes labelled `mm2.io/stack=<stack>`."""
        label = json.dumps({"label": [f"mm2.io/stack={stack}"]})
        containers = self._call("GET", "/containers/json", params={"all": 1, "filters": label}).json()
        volumes = self._call("GET", "/volumes", params={"filters": label}).json().get("Volumes") or []
        return sorted(c["Names"][0].lstrip("/") for c in containers), sorted(v["Name"] for v in volumes)

    def file_owner_and_mode(self, name: str, path: str) -> tuple[int, int, int]:
        """(uid, gid, permission bits) of the file at `path` inside container `name`."""
        raw = self._call("GET", f"/containers/{name}/archive", params={"path": path}).content
        with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
            info = tar.getmembers()[0]
        return info.uid, info.gid, info.mode & 0o777

    def remove_all(self, stack: str | None = None) -> list[str]:
        """Every container and volume (labelled with `stack`, when given), removed (forced);
        returns the containers' names."""
        label = json.dumps({"label": [f"mm2.io/stack={stack}"]} if stack else {})
        names = []
        for c in self._call("GET", "/containers/json", params={"all": 1, "filters": label}).json():
            self._call("DELETE", f"/containers/{c['Id']}", params={"force": 1, "v": 1}, ok=(204, 404))
            names.append(c["Names"][0].lstrip("/"))
        for v in self._call("GET", "/volumes", params={"filters": label}).json().get("Volumes") or []:
            self._call("DELETE", f"/volumes/{v['Name']}", ok=(204, 404))
        return names


def missing_images(engine: DockerEngine, images: Sequence[str]) -> list[str]:
    """A problem line per image the engine lacks (none can be pulled: every image is built here)."""
    return [
        f"mm2-platform:docker.image: image {image} is not on the Docker engine at {engine.socket}, and no registry "
        f"is assumed. Fix: run `{BUILD_COMMAND}` then `docker load -i` the archive it names, or set "
        "mm2-platform:docker.image to an image the engine has."
        for image in sorted(set(images))
        if engine.image_id(image) is None
    ]


def claim_problems(engine: DockerEngine, claims: Sequence[DockerClaim]) -> list[str]:
    """A problem per container that could not start where the stack wants it: a port on the host
    taken by something else (its container is not there yet, so it is not the stack's own), or
    a data volume of the same name that another stack, or no stack, made."""
    problems = []
    for claim in claims:
        if engine.container(claim.container) is None:
            busy = [p for p in claim.ports if port_in_use(p)]
            if busy:
                problems.append(
                    f"{claim.config_key}: port(s) {', '.join(map(str, busy))} on 127.0.0.1 are taken, and container "
                    f"{claim.container} listens there (host network). Fix: stop what listens there "
                    f"(`ss -ltnp | grep :{busy[0]}`) or choose other ports with {claim.config_key}."
                )
        owner = engine.volume_stack(claim.volume) if claim.volume else None
        if owner is not None and owner != claim.stack:
            made = f"stack {owner!r}" if owner else "something outside any stack (it has no mm2.io/stack label)"
            problems.append(
                f"{claim.config_key}: volume {claim.volume}, the data of container {claim.container}, exists and was "
                f"made by {made}: the stack will not take over its data. Fix: remove it (`docker volume rm "
                f"{claim.volume}`) if nothing needs it, or deploy this stack under another name."
            )
    return problems


def docker_problems(images: Sequence[str], claims: Sequence[DockerClaim]) -> list[str]:
    """`missing_images` and `claim_problems` on the engine DOCKER_HOST names; an engine that does
    not answer is one problem too (the program checks this at preview, before registering anything)."""
    try:
        with DockerEngine(engine_socket()) as engine:
            return missing_images(engine, images) + claim_problems(engine, claims)
    except DockerEngineError as exc:
        return [f"mm2-platform:docker: {exc}"]


def _tar(files: Mapping[str, tuple[str, int]]) -> bytes:
    """The uploads as one tar, owned by the image user (secret files readable by it alone)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for path, (text, mode) in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode, info.uid, info.gid = len(data), mode, IMAGE_USER_ID, IMAGE_GROUP_ID
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _demux(raw: bytes) -> str:
    """The engine's multiplexed log stream (8-byte frame headers) as text."""
    out, i = [], 0
    while i + 8 <= len(raw):
        size = int.from_bytes(raw[i + 4 : i + 8], "big")
        out.append(raw[i + 8 : i + 8 + size])
        i += 8 + size
    return b"".join(out).decode(errors="replace")
