"""The project's own modules a pod runs from a ConfigMap (the watcher's, the lag exporter's), in
the project's Python image that installs nothing at start. Pure: no pulumi import and no I/O.

The packages' real __init__ files import pulumi, which the pod does not have: empty ones stand in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from components.platform.kubernetes.metadata import (
    READY_ONCE_APPLIED,
    Labelled,
    config_hash,
    container_security,
    pod_security,
)

PLAN_KEY = "plan.json"


def config_key(path: str) -> str:
    # ConfigMap keys may not contain "/".
    return path.replace("/", "__")


@dataclass(frozen=True)
class ShippedCode:
    data: dict[str, str]  # the ConfigMap's data: the plan and every file
    items: list[dict[str, str]]  # the configMap volume's items: each key at its path under the code dir


def shipped_code(
    what: str, paths: Sequence[str], packages: Sequence[str], sources: Mapping[str, str], plan: Mapping[str, Any]
) -> ShippedCode:
    """`sources`: the text of every path in `paths`; `packages`: the __init__ files shipped empty."""
    missing = [p for p in paths if p not in sources]
    if missing:
        raise ValueError(f"{what}: source files missing: {', '.join(missing)}")
    files = {**{p: sources[p] for p in paths}, **dict.fromkeys(packages, "")}
    data = {
        PLAN_KEY: json.dumps(dict(plan), indent=2, sort_keys=True),
        **{config_key(p): t for p, t in sorted(files.items())},
    }
    items = [{"key": PLAN_KEY, "path": PLAN_KEY}] + [{"key": config_key(p), "path": p} for p in sorted(files)]
    return ShippedCode(data, items)


def code_volumes(config_map: str, code: ShippedCode) -> list[dict[str, Any]]:
    """The pod's `code` volume (the ConfigMap's files at their paths) and a writable /tmp."""
    return [{"name": "code", "configMap": {"name": config_map, "items": code.items}}, {"name": "tmp", "emptyDir": {}}]


def module_container(
    name: str,
    image: str,
    module: str,
    code_dir: str,
    env: Sequence[Mapping[str, Any]] = (),
    mounts: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """A container running `python -m <module> --plan <code_dir>/plan.json` from the mounted code."""
    return {
        "name": name,
        "image": image,
        # No shell and no installer: the image's python runs the mounted modules as they are.
        "command": ["python", "-m", module, "--plan", f"{code_dir}/{PLAN_KEY}"],
        "workingDir": code_dir,
        # No bytecode next to the read-only modules; log lines reach `kubectl logs` at once.
        "env": [
            {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
            {"name": "PYTHONUNBUFFERED", "value": "1"},
            *(dict(e) for e in env),
        ],
        "volumeMounts": [
            {"name": "code", "mountPath": code_dir, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
            *(dict(m) for m in mounts),
        ],
        "securityContext": container_security(),
    }


def one_pod_deployment(
    labelled: Labelled, name: str, code: ShippedCode, container: Mapping[str, Any], volumes: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """One replica, `Recreate`: never two pods at once, which would act twice (a watcher's
    restarts, a lag exporter's counts); a changed ConfigMap rolls the pod."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": labelled.meta(name, annotations=dict(READY_ONCE_APPLIED)),  # the start watch waits
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": labelled.match(),
            "template": {
                "metadata": {
                    "labels": dict(labelled.labels),
                    "annotations": {"mm2.io/config-hash": config_hash(code.data)},
                },
                "spec": {
                    "securityContext": pod_security(),
                    "containers": [dict(container)],
                    "volumes": [dict(v) for v in volumes],
                },
            },
        },
    }
