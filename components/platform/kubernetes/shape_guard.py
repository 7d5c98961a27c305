"""The dynamic resource that refuses, at preview, a change Kubernetes forbids in a cluster's
StatefulSet (type `pulumi-python:dynamic/kubernetes:StatefulSetShape`; the check itself is pure,
components/platform/kubernetes/fixed_fields.py). No I/O: create and update keep the inputs, diff
raises with the key, what would happen and the fix. The StatefulSet depends on it, so `up` stops
here too, before anything changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

from components.platform.kubernetes.fixed_fields import fixed_field_problems
from components.rpc_values import Refused


class StatefulSetShapeProvider(ResourceProvider):  # type: ignore[misc]
    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=f"{props['namespace']}/{props['statefulset']}", outs=props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        problems = fixed_field_problems(olds, news)
        if problems:
            raise Refused("\n".join(problems))
        changed = any(olds.get(key) != value for key, value in news.items())
        return DiffResult(changes=changed, replaces=[], stables=[], delete_before_replace=False)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=news)


class StatefulSetShape(Resource, module="kubernetes", name="StatefulSetShape"):  # type: ignore[misc]
    def __init__(self, name: str, props: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(StatefulSetShapeProvider(), name, dict(props), opts)
