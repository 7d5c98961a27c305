"""Reading what the platform functions registered under Pulumi's mocks (tests/unit/mocks.py:
resource types, names, parents, dependencies and secrets as the engine would record them; no
provider plugin, cluster or docker engine)."""

from __future__ import annotations

from typing import Any

import pulumi

from tests.unit.mocks import RecordingMonitor, Registration


class Parent(pulumi.ComponentResource):
    def __init__(self, type_: str, name: str) -> None:
        super().__init__(type_, name)


def regs(mon: RecordingMonitor) -> dict[str, Registration]:
    return {r.name: r for r in mon.registrations}


def states(mon: RecordingMonitor) -> dict[str, dict[str, Any]]:
    """Each registered resource's inputs as the engine recorded them, by resource name."""
    return {urn.rsplit("::", 1)[-1]: res.state for urn, res in mon.resources.items()}


def urn_of(mon: RecordingMonitor, name: str) -> str:
    return next(urn for urn in mon.resources if urn.endswith(f"::{name}"))


def settle(outputs: list[pulumi.Output[Any]], resources: list[pulumi.Resource]) -> pulumi.Output[Any]:
    """The outputs' values, once every resource is registered (its id is known)."""
    return pulumi.Output.all(*outputs, *[r.id for r in resources if isinstance(r, pulumi.CustomResource)]).apply(
        lambda values: values[: len(outputs)]
    )
