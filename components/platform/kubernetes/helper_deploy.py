"""A worker group's helpers on the `kubernetes` platform: the auto-restart watcher and the lag
exporter, each a Deployment in the watcher image (watcher_objects.py, lag_exporter_objects.py)
placed as the group's workers are, with the watch on its pod starting."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from components.platform.contract import WorkerRequest
from components.platform.kubernetes.deploy import (
    KubernetesConnect,
    SecretValues,
    child_opts,
    files_secret,
    follow_secrets,
    follow_tls,
    register,
    start_watch,
)
from components.platform.kubernetes.metadata import placement_spec, with_placement
from components.platform.kubernetes.names import ConnectNames
from components.platform.kubernetes.scheduling import stamped
from components.platform.settings import KubernetesSettings


def deploy_watcher_kubernetes(
    parent: pulumi.ComponentResource,
    name: str,
    request: WorkerRequest,
    settings: KubernetesSettings,
    secret_values: SecretValues | None,
    after: list[pulumi.Resource] | None = None,
) -> list[pulumi.Resource]:
    """autoRestart: the group's watcher Deployment (watcher_objects.py), none without autoRestart;
    after `after` (the workers' objects, their priority class among them)."""
    from pathlib import Path

    from components.platform.kubernetes.watcher_objects import PASSWORD_KEY, WATCHER_SOURCES, watcher_objects
    from components.topology.auto_restart import watched_connectors
    from components.topology.runtime_config import KUBERNETES_REST_PORT
    from components.watch.plan import WatchPlan, plan_document

    group = request.group
    connectors = watched_connectors(request.topology, group.name)
    if not connectors:
        return []
    # The watcher runs in the cluster: it reaches the workers through their Service.
    url = f"http://{ConnectNames(group.name).service}.{settings.namespace}.svc:{KUBERNETES_REST_PORT}"
    plan = plan_document(WatchPlan(group=group.name, url=url, connectors=connectors))
    root = Path(__file__).resolve().parents[3]
    sources = {path: (root / path).read_text() for path in WATCHER_SOURCES}
    username = group.rest_username if group.rest_auth else None
    image = str(settings.group(group.name).watcher_image)
    objects = watcher_objects(group.name, settings.namespace, plan, sources, rest_username=username, image=image)
    child = child_opts(parent, f"{name}-watcher", settings.group(group.name).context, settings, None)
    resources: list[pulumi.Resource] = []
    files: list[pulumi.Output[str]] = []
    if objects.secret_name and secret_values is not None and group.rest_password is not None:
        key = group.rest_password.key
        password = pulumi.Output.from_input(secret_values).apply(lambda v: str(v[key]))
        files.append(password)
        resources.append(
            files_secret(f"{name}-watcher-rest", objects.secret_name, settings.namespace, PASSWORD_KEY, password, child)
        )
    resources.append(register(objects.config_map, f"{name}-watcher-config", child))
    pod_opts = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[*resources, *(after or [])]))
    what = f"the auto-restart watcher of {group.name}"
    resources += _watched_helper(
        parent, f"{name}-watcher", objects.deployment, what, group.name, settings, pod_opts, files
    )
    return resources


@dataclass
class KubernetesLagExporter:
    """What `deploy_lag_exporter_kubernetes` registered, and where the exporter answers in the cluster."""

    url: str | None = None
    resources: list[pulumi.Resource] = field(default_factory=list)


def deploy_lag_exporter_kubernetes(
    parent: pulumi.ComponentResource,
    name: str,
    request: WorkerRequest,
    settings: KubernetesSettings,
    secret_values: SecretValues | None,
    workers: KubernetesConnect,
) -> KubernetesLagExporter:
    """The group's lag exporter (lag_exporter_objects.py), none without enabled flows.

    Through the workers' provider, after them: its first reading needs the group's offsets topic,
    which the workers create. With `secret_values` the stack creates the Secret of the clients'
    secret settings; without, it must exist (docs/kubernetes.md)."""
    import json
    from pathlib import Path

    from components.platform.kubernetes.lag_exporter_objects import (
        CLIENTS_KEY,
        LAG_EXPORTER_SOURCES,
        lag_exporter_objects,
        secret_clients_document,
    )
    from components.platform.lag_exporter import lag_flows

    group, topology = request.group, request.topology
    if not lag_flows(topology, group.name):
        return KubernetesLagExporter()
    root = Path(__file__).resolve().parents[3]
    sources = {path: (root / path).read_text() for path in LAG_EXPORTER_SOURCES}
    objects = lag_exporter_objects(group, topology, settings, sources)
    child = child_opts(parent, f"{name}-lag-exporter", settings.group(group.name).context, settings, workers.opts)
    resources: list[pulumi.Resource] = []
    files: list[pulumi.Output[str]] = []
    if objects.secret_name and secret_values is not None:
        document = pulumi.Output.from_input(secret_values).apply(
            lambda v: json.dumps(secret_clients_document(topology, group.name, v), sort_keys=True)
        )
        files.append(document)
        secret_name = objects.secret_name
        resources.append(
            files_secret(f"{name}-lag-exporter-clients", secret_name, settings.namespace, CLIENTS_KEY, document, child)
        )
    resources.append(register(objects.config_map, f"{name}-lag-exporter-config", child))
    resources.append(register(objects.state_claim, f"{name}-lag-exporter-state", child))
    pod_opts = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[*resources, *workers.resources]))
    what = f"the lag exporter of {group.name}"
    helper = _watched_helper(
        parent, f"{name}-lag-exporter", objects.deployment, what, group.name, settings, pod_opts, files, workers.tls
    )
    resources += helper
    # Once its pod is Ready (the watch): pulumi-kubernetes waits for a Service's pods.
    after_pod = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=helper))
    resources.append(register(objects.service, f"{name}-lag-exporter-svc", after_pod))
    if objects.service_monitor is not None:
        resources.append(register(objects.service_monitor, f"{name}-lag-exporter-servicemonitor", child))
    return KubernetesLagExporter(url=objects.url, resources=resources)


def _watched_helper(
    parent: pulumi.ComponentResource,
    resource_name: str,
    manifest: Mapping[str, Any],
    what: str,
    group: str,
    settings: KubernetesSettings,
    pod_opts: pulumi.ResourceOptions,
    secret_files: Sequence[pulumi.Output[str]] = (),
    tls: pulumi.Output[str] | None = None,
) -> list[pulumi.Resource]:
    """A group's helper Deployment of fixed requests in the watcher image (the auto-restart
    watcher, the lag exporter) and the watch on its pod starting beside it. It is placed as the
    group's workers are (pull secrets, nodes, tolerations, their priority class), in its own
    account, and rolls when `secret_files` (what it reads of the stack's secrets) or the group's
    client TLS Secret (`tls`, its digest) change."""
    pod = settings.group(group)
    placed = with_placement(
        manifest, placement_spec(pod, ConnectNames(group).priority_class(settings.namespace), account=False)
    )
    deployment, digest = stamped(placed)
    follow_secrets(deployment, secret_files)
    follow_tls(deployment, tls)
    names = (what, "", "", settings.group_key(group, "watcherImage"))
    watch_opts = pulumi.ResourceOptions(parent=parent, depends_on=pod_opts.depends_on)
    registered = register(deployment, resource_name, pod_opts)
    watch = start_watch(f"{resource_name}-pods-started", deployment, digest, names, pod.context, settings, watch_opts)
    return [registered, *watch]
