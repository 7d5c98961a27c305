"""The auto-restart watcher of one worker group on Kubernetes, as plain data: a ConfigMap and a Deployment.

Pure: no pulumi import and no I/O; `deploy.py` reads the watcher's source files and registers
the objects. The pod runs `python -m components.ops.watcher --plan` in a stock Python image,
with the watcher's few modules mounted from the ConfigMap. They import only the standard
library (the watcher speaks REST through urllib: components/connect/stdlib_client.py), so the pod
installs nothing at start: it needs no PyPI (an air-gapped cluster only mirrors the image) and
starts in a second. One replica, `Recreate`: two watchers of one group would count restarts
twice. The REST password comes from a Secret as an
environment variable, never from the ConfigMap.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.platform.kubernetes.metadata import (
    Labelled,
    config_hash,
    container_security,
    label_selector,
    object_labels,
    pod_security,
)
from components.platform.settings import DEFAULT_WATCHER_IMAGE

WATCHER_IMAGE = DEFAULT_WATCHER_IMAGE  # `watcherImage` in mm2-platform:kubernetes.connect overrides it
# The files the pod needs, relative to the project root; the packages' __init__ files are
# replaced by empty ones (the real ones import pulumi, which the pod does not have).
WATCHER_SOURCES = (
    "components/connect/errors.py",
    "components/connect/health.py",
    "components/connect/stdlib_client.py",
    "components/ops/errors.py",
    "components/ops/watcher.py",
    "components/topology/traces.py",
    "components/watch/backoff.py",
    "components/watch/plan.py",
)
WATCHER_PACKAGES = (
    "components/__init__.py",
    "components/connect/__init__.py",
    "components/ops/__init__.py",
    "components/topology/__init__.py",
    "components/watch/__init__.py",
)
CODE_DIR = "/opt/mm2-watcher"
PLAN_KEY = "plan.json"
PASSWORD_KEY = "password"


def watcher_names(group: str) -> tuple[str, str, str]:
    """(Deployment, ConfigMap, Secret) names of the group's watcher."""
    base = f"{group}-connect-watcher"
    return base, f"{base}-config", f"{base}-rest"


@dataclass(frozen=True)
class WatcherObjects:
    config_map: dict[str, Any]
    deployment: dict[str, Any]
    secret_name: str | None  # the Secret deploy.py registers with the REST password, if any

    def all(self) -> tuple[dict[str, Any], ...]:
        return (self.config_map, self.deployment)


def _key(path: str) -> str:
    # ConfigMap keys may not contain "/".
    return path.replace("/", "__")


def watcher_objects(
    group: str,
    namespace: str,
    plan: Mapping[str, Any],
    sources: Mapping[str, str],
    *,
    rest_username: str | None,
    image: str = WATCHER_IMAGE,
) -> WatcherObjects:
    """`plan`: `components.ops.watcher.plan_document` of the group (no secret); `sources`: the
    text of every WATCHER_SOURCES path."""
    missing = [p for p in WATCHER_SOURCES if p not in sources]
    if missing:
        raise ValueError(f"watcher of worker group {group}: source files missing: {', '.join(missing)}")
    deployment_name, config_name, secret_name = watcher_names(group)
    labelled = Labelled(
        namespace,
        object_labels(deployment_name, group, "connect-watcher", image),
        label_selector(deployment_name, group),
    )
    files = {**{p: sources[p] for p in WATCHER_SOURCES}, **dict.fromkeys(WATCHER_PACKAGES, "")}
    data = {
        PLAN_KEY: json.dumps(dict(plan), indent=2, sort_keys=True),
        **{_key(p): t for p, t in sorted(files.items())},
    }
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": labelled.meta(config_name),
        "data": data,
    }
    container = _container(image, rest_username, secret_name)
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": labelled.meta(deployment_name),
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": labelled.match(),
            "template": {
                "metadata": {
                    "labels": labelled.labels,
                    "annotations": {"mm2.io/config-hash": config_hash(data)},
                },
                "spec": {
                    "securityContext": pod_security(),
                    "containers": [container],
                    "volumes": [
                        {
                            "name": "code",
                            "configMap": {
                                "name": config_name,
                                "items": [{"key": PLAN_KEY, "path": PLAN_KEY}]
                                + [{"key": _key(p), "path": p} for p in sorted(files)],
                            },
                        },
                        {"name": "tmp", "emptyDir": {}},
                    ],
                },
            },
        },
    }
    return WatcherObjects(config_map, deployment, secret_name if rest_username else None)


def _container(image: str, rest_username: str | None, secret_name: str) -> dict[str, Any]:
    """The watcher container: the plan from the ConfigMap, the REST password from the Secret."""
    env: list[dict[str, Any]] = [
        {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
        {"name": "PYTHONUNBUFFERED", "value": "1"},
    ]
    if rest_username:
        env += [
            {"name": "MM2_WATCHER_REST_USERNAME", "value": rest_username},
            {
                "name": "MM2_WATCHER_REST_PASSWORD",
                "valueFrom": {"secretKeyRef": {"name": secret_name, "key": PASSWORD_KEY}},
            },
        ]
    return {
        "name": "watcher",
        "image": image,
        # No shell and no installer: the image's python runs the mounted modules as they are.
        "command": ["python", "-m", "components.ops.watcher", "--plan", f"{CODE_DIR}/{PLAN_KEY}"],
        "workingDir": CODE_DIR,
        "env": env,
        "volumeMounts": [
            {"name": "code", "mountPath": CODE_DIR, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
        "resources": {"requests": {"cpu": "20m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
        "securityContext": container_security(),
    }
