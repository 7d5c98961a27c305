"""Pulumi's mocks, recording what the platform functions register: resource types, names,
parents, dependencies and secrets as the engine would record them (no provider plugin, cluster
or docker engine)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import mocks as pmocks

SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"


@dataclass
class Registration:
    type: str
    name: str
    parent: str
    dependencies: list[str]
    provider: str
    secret_paths: list[str] = field(default_factory=list)
    create_timeout: str = ""  # customTimeouts.create, "" when unset


def _secret_paths(value: Any, path: str = "") -> list[str]:
    if isinstance(value, dict):
        if value.get("4dabf18193072939515e22adb298388d") == SECRET_SIG:
            return [path]
        return [p for k, v in value.items() for p in _secret_paths(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _secret_paths(v, f"{path}[{i}]")]
    return []


class RecordingMonitor(pmocks.MockMonitor):
    def __init__(self, mocks: pmocks.Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []

    def RegisterResource(self, request: Any) -> Any:
        from google.protobuf import json_format

        inputs = json_format.MessageToDict(request.object)
        self.registrations.append(
            Registration(
                request.type,
                request.name,
                request.parent,
                list(request.dependencies),
                request.provider,
                _secret_paths(inputs),
                request.customTimeouts.create,
            )
        )
        return super().RegisterResource(request)


class EchoMocks(pmocks.Mocks):
    def new_resource(self, args: pmocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pmocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None


class Parent(pulumi.ComponentResource):
    def __init__(self, type_: str, name: str) -> None:
        super().__init__(type_, name)


def regs(mon: RecordingMonitor) -> dict[str, Registration]:
    return {r.name: r for r in mon.registrations}


def urn_of(mon: RecordingMonitor, name: str) -> str:
    return next(urn for urn in mon.resources if urn.endswith(f"::{name}"))


def settle(outputs: list[pulumi.Output[Any]], resources: list[pulumi.Resource]) -> pulumi.Output[Any]:
    """The outputs' values, once every resource is registered (its id is known)."""
    return pulumi.Output.all(*outputs, *[r.id for r in resources if isinstance(r, pulumi.CustomResource)]).apply(
        lambda values: values[: len(outputs)]
    )
