"""Labels, metadata and scheduling fragments every Kubernetes object of the stack shares. Pure."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.platform.image_layout import IMAGE_GROUP_ID, IMAGE_USER_ID
from components.platform.placement import Placement

ZONE_LABEL = "topology.kubernetes.io/zone"
PART_OF = "mm2-replication"
WAIT_FOR = "pulumi.com/waitFor"  # pulumi-kubernetes: what makes the object ready, in place of its own rules
# The annotation of a workload whose readiness the stack waits for itself (the broker roll, the
# start watch): ready for pulumi-kubernetes once applied (it has a uid); its deletion is still
# awaited (`pulumi.com/skipAwait` would not).
READY_ONCE_APPLIED = {WAIT_FOR: "jsonpath={.metadata.uid}"}


def config_hash(data: Mapping[str, Any]) -> str:
    """Pod-template annotation value: a changed ConfigMap rolls the pods that read it (and the
    digest of a pod template, scheduling.stamped)."""
    return hashlib.sha256(json.dumps(dict(data), sort_keys=True).encode()).hexdigest()[:16]


def object_labels(name: str, instance: str, component: str, image: str) -> dict[str, str]:
    version = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else "latest"
    return {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/instance": instance,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": PART_OF,
        "app.kubernetes.io/version": version,
    }


def label_selector(name: str, instance: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/instance": instance}


def selector_text(labels: Mapping[str, str]) -> str:
    """`labels` as a label selector's text, keys sorted: `k1=v1,k2=v2`."""
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def object_meta(name: str, namespace: str, labels: Mapping[str, str], **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": dict(labels), **extra}


def zone_spread(selector: Mapping[str, str], required: bool) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": 1,
            "topologyKey": ZONE_LABEL,
            "whenUnsatisfiable": "DoNotSchedule" if required else "ScheduleAnyway",
            "labelSelector": {"matchLabels": dict(selector)},
        }
    ]


def container_security() -> dict[str, Any]:
    """Every container of the stack: no privilege escalation, no capabilities (a fresh dict per
    object, so no two manifests share one)."""
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def pod_security() -> dict[str, Any]:
    """Every pod of the stack runs as the images' non-root user under the runtime's default
    seccomp profile: with `container_security`, what Pod Security "restricted" requires, so a
    namespace that enforces it admits every pod of the stack."""
    return {
        "runAsNonRoot": True,
        "runAsUser": IMAGE_USER_ID,
        "runAsGroup": IMAGE_GROUP_ID,
        "fsGroup": IMAGE_GROUP_ID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


@dataclass(frozen=True)
class Labelled:
    """The namespace, labels and selector every object of one cluster or worker group shares."""

    namespace: str
    labels: dict[str, str]
    selector: dict[str, str]

    def meta(self, name: str, **extra: Any) -> dict[str, Any]:
        return object_meta(name, self.namespace, self.labels, **extra)

    def match(self) -> dict[str, Any]:
        return {"matchLabels": dict(self.selector)}


# The stack's own PriorityClasses: a broker outranks a worker, so a broker pod that lost its node
# (or its CPU) is placed first, preempting workers where it must. Both outrank pods with no class.
BROKER_PRIORITY = 100_000
WORKER_PRIORITY = 10_000


def own_priority_class(
    pod: Placement, name: str, value: int, labels: Mapping[str, str], what: str
) -> dict[str, Any] | None:
    """The role's own PriorityClass (cluster-scoped) `name`, None when `pod` names one of the cluster's."""
    if pod.priority_class:
        return None
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name, "labels": dict(labels)},
        "value": value,
        "globalDefault": False,
        "preemptionPolicy": "PreemptLowerPriority",
        "description": f"{what} (mm2-replication): brokers outrank workers",
    }


def placement_spec(pod: Placement, own_class: str, *, account: bool = True) -> dict[str, Any]:
    """The pod spec's fields of `pod`'s placement settings: its priority class (the role's own
    `own_class` unless one is given), pull secrets, node selector, tolerations and, with
    `account`, its ServiceAccount."""
    spec: dict[str, Any] = {"priorityClassName": pod.priority_class or own_class}
    if pod.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": name} for name in pod.image_pull_secrets]
    if pod.node_selector:
        spec["nodeSelector"] = dict(pod.node_selector)
    if pod.tolerations:
        spec["tolerations"] = [dict(t) for t in pod.tolerations]
    if account and pod.service_account:
        spec["serviceAccountName"] = pod.service_account
    return spec


def with_placement(workload: Mapping[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `workload` (a Deployment or StatefulSet manifest) whose pod spec has `fields`."""
    out = copy.deepcopy(dict(workload))
    out["spec"]["template"]["spec"].update(copy.deepcopy(dict(fields)))
    return out
