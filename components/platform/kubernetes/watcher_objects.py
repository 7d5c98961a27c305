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

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from components.platform.kubernetes.metadata import (
    Labelled,
    label_selector,
    object_labels,
)
from components.platform.kubernetes.shipped_code import (
    code_volumes,
    module_container,
    one_pod_deployment,
    shipped_code,
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
PASSWORD_KEY = "password"

# What the watcher's pod asks of a node (the preview's capacity check counts it too).
WATCHER_REQUESTS: Mapping[str, str] = MappingProxyType({"cpu": "20m", "memory": "64Mi"})


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
    code = shipped_code(f"watcher of worker group {group}", WATCHER_SOURCES, WATCHER_PACKAGES, sources, plan)
    deployment_name, config_name, secret_name = watcher_names(group)
    labelled = Labelled(
        namespace,
        object_labels(deployment_name, group, "connect-watcher", image),
        label_selector(deployment_name, group),
    )
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": labelled.meta(config_name),
        "data": code.data,
    }
    container = _container(image, rest_username, secret_name)
    deployment = one_pod_deployment(labelled, deployment_name, code, container, code_volumes(config_name, code))
    return WatcherObjects(config_map, deployment, secret_name if rest_username else None)


def _container(image: str, rest_username: str | None, secret_name: str) -> dict[str, Any]:
    """The watcher container: the plan from the ConfigMap, the REST password from the Secret."""
    env: list[dict[str, Any]] = []
    if rest_username:
        env += [
            {"name": "MM2_WATCHER_REST_USERNAME", "value": rest_username},
            {
                "name": "MM2_WATCHER_REST_PASSWORD",
                "valueFrom": {"secretKeyRef": {"name": secret_name, "key": PASSWORD_KEY}},
            },
        ]
    container = module_container("watcher", image, "components.ops.watcher", CODE_DIR, env)
    container["resources"] = {"requests": dict(WATCHER_REQUESTS), "limits": {"memory": "128Mi"}}
    return container
