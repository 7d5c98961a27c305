"""The real program (`components.program`) under Pulumi's mocks (tests/unit/mocks.py): stack
configs read from the project's YAML files, and the program run to its end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import yaml

from components.program import SECTIONS, Deployed, StackConfig, program

ROOT = Path(__file__).resolve().parents[3]


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
