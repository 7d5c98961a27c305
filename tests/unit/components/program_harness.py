"""The real program (`components.program`) under Pulumi's mocks: a recording monitor, mocks that
answer like the providers, and stack configs read from the project's YAML files."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import mocks as pmocks

from components.program import SECTIONS, Deployed, StackConfig, program
from components.rpc_values import plain

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class Registration:
    type: str
    name: str
    parent: str
    dependencies: list[str]
    inputs: dict[str, Any] = field(default_factory=dict)


class RecordingMonitor(pmocks.MockMonitor):
    """MockMonitor that also keeps parent and dependency URNs of every registration."""

    def __init__(self, mocks: pmocks.Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []

    def RegisterResource(self, request: Any) -> Any:
        self.registrations.append(Registration(request.type, request.name, request.parent, list(request.dependencies)))
        return super().RegisterResource(request)


class EchoMocks(pmocks.Mocks):
    def new_resource(self, args: pmocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        outs = dict(args.inputs)
        if args.typ == "pulumi-python:dynamic/connect:Connector":
            outs.setdefault("state", "RUNNING")
        if args.typ == "pulumi-python:dynamic/security:Credentials":
            # As the provider: the given passwords, and one for every other key it generates or needs.
            keys = [*args.inputs.get("generated", []), *args.inputs.get("required", [])]
            outs["values"] = {k: f"pw-{k}" for k in keys} | dict(plain(args.inputs.get("given")) or {})
        return f"{args.name}-id", outs

    def call(self, args: pmocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None


@contextmanager
def mocked(stack: str = "unit") -> Iterator[RecordingMonitor]:
    mon = RecordingMonitor(EchoMocks())
    pulumi.runtime.set_mocks(EchoMocks(), project="mm2-replication", stack=stack, preview=False, monitor=mon)
    try:
        yield mon
    finally:
        pulumi.runtime.settings.reset_options()


def yaml_config(path: Path) -> dict[str, Any]:
    """A stack file's `config:` as written (`mm2:clusters`, `mm2-platform:kubernetes`, ...)."""
    return yaml.safe_load(path.read_text())["config"]


def namespace(config: dict[str, Any], ns: str) -> dict[str, Any]:
    return {k.split(":", 1)[1]: v for k, v in config.items() if k.split(":", 1)[0] == ns}


def stack_config(
    config: dict[str, Any],
    project_dir: Path,
    stack: str = "unit",
    mm2: dict[str, Any] | None = None,
    given: dict[str, str] | None = None,
) -> StackConfig:
    """What `read_stack_config` would read from a stack file, run under `project_dir` with
    Kafka jars present (an empty directory: nothing runs under the mocks)."""
    libs = project_dir / "kafka-libs"
    libs.mkdir(parents=True, exist_ok=True)
    sections = mm2 if mm2 is not None else namespace(config, "mm2")
    return StackConfig(
        stack=stack,
        mm2={k: v for k, v in sections.items() if k in SECTIONS},
        platform=namespace(config, "mm2-platform"),
        project_dir=str(project_dir),
        kafka_libs=str(libs),
        given=given if given is not None else sections.get("secrets"),
        rotate=sections.get("rotate") or {},
    )


def settled(config: StackConfig) -> pulumi.Output[Any]:
    """Run the program; the flow summaries and group URLs once every resource is registered
    (the credential rollouts come last)."""
    deployed: Deployed = program(config)
    flows = list(deployed.flows.values())
    rollouts = [f.rollout.urn for f in flows if f.rollout is not None]
    return pulumi.Output.all(*[f.summary for f in flows], *[g.url for g in deployed.groups.values()], *rollouts)
