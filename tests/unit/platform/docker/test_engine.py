"""The Docker Engine client against httpx.MockTransport: the calls `run_container` makes for a
spec, what the uploads carry, and the errors that name the engine, the call and the fix."""

from __future__ import annotations

import io
import json
import tarfile
from typing import Any

import httpx
import pytest

from components.platform.docker.engine import DockerEngine, DockerEngineError, engine_socket, missing_images
from components.platform.docker.specs import docker_broker_specs
from components.platform.settings import DockerSettings

from ..helpers import DOCKER, SECRET_VALUES, topology


class FakeEngine:
    def __init__(self, images: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.images = images
        self.calls: list[tuple[str, str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.calls.append((request.method, path, request))
        if path.startswith("/images/") and path.endswith("/json"):
            name = path.removeprefix("/images/").removesuffix("/json")
            if name in self.images:
                return httpx.Response(200, json={"Id": f"sha256:{name}"})
            return httpx.Response(404, json={"message": f"No such image: {name}"})
        if path == "/containers/create":
            return httpx.Response(201, json={"Id": "c1"})
        if path == "/containers/missing/json":
            return httpx.Response(404, json={"message": "No such container: missing"})
        return httpx.Response(204)


def engine(fake: FakeEngine) -> DockerEngine:
    return DockerEngine("/run/test.sock", transport=httpx.MockTransport(fake))


def test_run_container_creates_fills_and_starts_exactly_the_spec() -> None:
    [spec, _] = docker_broker_specs(topology(DOCKER).clusters["kafka2"], "unit", DockerSettings())
    fake = FakeEngine()
    assert engine(fake).run_container(spec, SECRET_VALUES) == "c1"
    assert [(m, p) for m, p, _ in fake.calls] == [
        ("POST", "/volumes/create"),
        ("POST", "/containers/create"),
        ("PUT", "/containers/c1/archive"),
        ("POST", "/containers/c1/start"),
    ]
    body = json.loads(fake.calls[1][2].content)
    assert body["Image"] == spec.image and body["Cmd"] == list(spec.command)
    assert body["HostConfig"]["NetworkMode"] == "host"
    assert body["HostConfig"]["RestartPolicy"] == {"Name": "unless-stopped"}
    assert body["HostConfig"]["Mounts"] == [{"Type": "volume", "Source": spec.volume, "Target": spec.volume_path}]
    assert body["Labels"] == {"mm2.io/stack": "unit"}
    assert not any(v in json.dumps(body) for v in SECRET_VALUES.values())  # secrets only in files
    with tarfile.open(fileobj=io.BytesIO(fake.calls[2][2].content)) as tar:
        members = {m.name: m for m in tar.getmembers()}
        secrets = members["etc/kafka/secrets/secrets.properties"]
        assert (secrets.mode, secrets.uid) == (0o600, 1000)  # the image user's, and only its
        assert tar.extractfile(secrets).read() == b"kafka2.mm2.password=k2-Zq89\n"  # type: ignore[union-attr]
        assert members["etc/mm2/config/start.sh"].mode == 0o644


def test_missing_images_name_the_image_and_the_build_command() -> None:
    fake = FakeEngine({"mm2-iac/kafka:4.3.1"})
    assert missing_images(engine(fake), ["mm2-iac/kafka:4.3.1"]) == []
    [problem] = missing_images(engine(fake), ["mm2-iac/kafka:4.3.1", "registry.example.com/kafka:9"])
    assert "registry.example.com/kafka:9" in problem and "bin/bootstrap --images" in problem


def test_errors_carry_the_call_status_and_message() -> None:
    with pytest.raises(DockerEngineError, match=r"GET /containers/missing/json: HTTP 404: No such container"):
        engine(FakeEngine()).inspect("missing")

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("no socket", request=request)

    with pytest.raises(DockerEngineError, match=r"did not answer.*Fix: start dockerd"):
        DockerEngine("/run/none.sock", transport=httpx.MockTransport(refuse)).version()


def test_engine_socket_reads_docker_host() -> None:
    assert engine_socket({}) == "/var/run/docker.sock"
    assert engine_socket({"DOCKER_HOST": "unix:///tmp/d.sock"}) == "/tmp/d.sock"
    with pytest.raises(DockerEngineError, match="only a local engine"):
        engine_socket({"DOCKER_HOST": "tcp://10.0.0.1:2375"})


def test_a_port_taken_by_another_program_and_a_volume_another_stack_made_are_named_with_the_fix() -> None:
    import socket

    from components.platform.docker.engine import claim_problems
    from components.platform.docker.specs import DockerClaim

    def answer(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/containers/mm2-unit-ours-0/json":  # already the stack's: its ports are its own
            return httpx.Response(200, json={"Id": "x", "State": {"Running": True}})
        if path.startswith("/containers/"):
            return httpx.Response(404, json={"message": "No such container"})
        owners = {"/volumes/mm2-unit-a-0-data": "other", "/volumes/mm2-unit-ours-0-data": "unit"}
        if path in owners:
            return httpx.Response(200, json={"Labels": {"mm2.io/stack": owners[path]}})
        return httpx.Response(404, json={"message": "No such volume"})

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        claims = [
            DockerClaim("mm2-unit-a-0", "unit", (port,), "mm2:clusters.a.port", "mm2-unit-a-0-data"),
            DockerClaim("mm2-unit-ours-0", "unit", (port,), "mm2:clusters.ours.port", "mm2-unit-ours-0-data"),
        ]
        with DockerEngine("/run/test.sock", transport=httpx.MockTransport(answer)) as client:
            problems = claim_problems(client, claims)
    assert len(problems) == 2, problems
    assert problems[0].startswith(f"mm2:clusters.a.port: port(s) {port} on 127.0.0.1 are taken")
    assert "choose other ports with mm2:clusters.a.port" in problems[0]
    assert "volume mm2-unit-a-0-data" in problems[1] and "made by stack 'other'" in problems[1]
    assert "docker volume rm mm2-unit-a-0-data" in problems[1]
