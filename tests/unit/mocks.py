"""Pulumi's mocks, the one way unit tests run components and the program without an engine: a
monitor recording every registration (type, name, parent, dependencies, provider, which inputs are
secret, the create timeout, and the raw request), mocks answering as the providers do, and
`mocked()` to install them and restore the settings afterwards (the SDK's own test fixture, see
pulumi/pulumi sdk/python/lib/test)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import mocks as pmocks

from components.rpc_values import plain

# How the engine's wire format marks a secret value.
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
_SIG_KEY = "4dabf18193072939515e22adb298388d"


# The cluster aliases of the unit tests' stacks: a worker group's client TLS Secret read in a
# test holds every store the group's pods may mount for them.
TEST_ALIASES = ("a", "b", "c", "us", "eu", "us-east", "eu-west", "primary", "backup", "src", "dst")


def tls_secret_data(where: str) -> dict[str, str]:
    """What a TLS Secret read (namespace/name) finds: a group's client stores per cluster for
    `<group>-connect-tls`, the brokers' stores for any other."""
    if where.endswith("-connect-tls"):
        kinds = ("truststore.p12", "keystore.p12", "ca.crt")
        return {f"{alias}.{kind}": "c3RvcmU=" for alias in TEST_ALIASES for kind in kinds}
    return {"keystore.p12": "a2V5", "truststore.p12": "dHJ1c3Q="}


@dataclass
class Registration:
    type: str
    name: str
    parent: str
    dependencies: list[str]
    provider: str = ""
    secret_paths: list[str] = field(default_factory=list)
    create_timeout: str = ""  # customTimeouts.create, "" when unset


def _secret_paths(value: Any, path: str = "") -> list[str]:
    if isinstance(value, dict):
        if value.get(_SIG_KEY) == SECRET_SIG:
            return [path]
        return [p for k, v in value.items() for p in _secret_paths(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _secret_paths(v, f"{path}[{i}]")]
    return []


class RecordingMonitor(pmocks.MockMonitor):
    """MockMonitor that also keeps each RegisterResource request, raw and as a Registration."""

    def __init__(self, mocks: pmocks.Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []
        self.requests: list[Any] = []

    def RegisterResource(self, request: Any) -> Any:  # the gRPC method's name
        from google.protobuf import json_format

        self.requests.append(request)
        secret_paths = _secret_paths(json_format.MessageToDict(request.object))
        self.registrations.append(
            Registration(
                request.type,
                request.name,
                request.parent,
                list(request.dependencies),
                request.provider,
                secret_paths,
                request.customTimeouts.create,
            )
        )
        return super().RegisterResource(request)


class EchoMocks(pmocks.Mocks):
    """Every resource's outputs are its inputs, plus what our dynamic providers add: a connector's
    state, and the credentials' passwords."""

    def new_resource(self, args: pmocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        outs = dict(args.inputs)
        if args.typ == "pulumi-python:dynamic/connect:Connector":
            outs.setdefault("state", "RUNNING")
        if args.typ == "kubernetes:core/v1:Secret" and args.resource_id:  # a Secret read (Secret.get)
            outs["data"] = tls_secret_data(args.resource_id)
        if args.typ == "pulumi-python:dynamic/security:Credentials":
            # As the provider: the given passwords, and one for every other key it generates or needs.
            keys = [*args.inputs.get("generated", []), *args.inputs.get("required", [])]
            outs["values"] = {k: f"pw-{k}" for k in keys} | dict(plain(args.inputs.get("given")) or {})
        return f"{args.name}-id", outs

    def call(self, args: pmocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None


@contextmanager
def mocked(
    mocks: pmocks.Mocks | None = None, stack: str = "unit", project: str = "mm2-replication"
) -> Iterator[RecordingMonitor]:
    """`mocks` (EchoMocks by default) behind a RecordingMonitor for the block; settings restored after."""
    mocks = mocks or EchoMocks()
    mon = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=False, monitor=mon)
    try:
        yield mon
    finally:
        pulumi.runtime.settings.reset_options()
