"""The Prometheus Operator on bin/kube's node (`bin/kube prometheus`), as a platform team runs it:
the operator in namespace `monitoring`, and one Prometheus it manages that selects every
ServiceMonitor and PrometheusRule in the cluster, so a stack's monitoring objects are scraped and
its alert rules evaluated for real.

The operator and its config reloader are built from their Go module and Prometheus is Debian's
package, all in one image (toolchain/images/recipe.py `monitoring_image`); the definitions and the
two cluster roles come from the operator's module (bin/bootstrap --kubernetes writes them to
`crds/operator`). Reach the Prometheus from this machine through the API server's Service proxy:
`kubectl get --raw /api/v1/namespaces/monitoring/services/prometheus-operated:web/proxy/api/v1/targets`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from toolchain.images.recipe import MONITORING_REPOSITORY
from toolchain.kubernetes.node import (
    CRDS,
    NODE_NAME,
    ROOT,
    KubeError,
    Layout,
    api_create,
    api_get,
    condition_true,
    load,
    say,
    wait_for,
)
from toolchain.kubernetes.node_objects import role_binding

NAMESPACE = "monitoring"
PROMETHEUS = "mm2"  # the Prometheus resource; its pod is prometheus-mm2-0
PROMETHEUS_SERVICE = "prometheus-operated"  # the operator's Service for every Prometheus it runs
# Debian trixie's prometheus package (MONITORING_DEBIAN_SUITE): the operator picks its server
# flags by this version.
PROMETHEUS_VERSION = "v2.53.3"
EVALUATION_INTERVAL = "5s"  # alert rules are evaluated this often (the rules' own `for` still holds)
READY_S = 240.0
_USER = {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000}
_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True}


def _meta(name: str) -> dict[str, Any]:
    return {"name": name, "namespace": NAMESPACE, "labels": {"app.kubernetes.io/part-of": "mm2-kube-monitoring"}}


def _account(name: str, role: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A ServiceAccount of `monitoring` bound to `role` (a ClusterRole of the operator's RBAC)."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    binding = role_binding(role, {"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE})
    return [
        (
            f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts",
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name)},
        ),
        (f"{rbac}/clusterroles", role),
        (f"{rbac}/clusterrolebindings", binding),
    ]


def _operator(image: str) -> dict[str, Any]:
    selector = {"app.kubernetes.io/name": "prometheus-operator"}
    container = {
        "name": "prometheus-operator",
        "image": image,
        "command": ["/usr/bin/prometheus-operator"],
        # The reloader beside each Prometheus is the same image (its /bin/prometheus-config-reloader).
        "args": [f"--prometheus-config-reloader={image}", "--log-level=info"],
        "ports": [{"name": "http", "containerPort": 8080}],
        "resources": {"requests": {"cpu": "50m", "memory": "100Mi"}, "limits": {"memory": "300Mi"}},
        "securityContext": _CONTAINER,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta("prometheus-operator"),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": selector},
                "spec": {
                    "serviceAccountName": "prometheus-operator",
                    "securityContext": {**_USER, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [container],
                },
            },
        },
    }


def _prometheus(image: str) -> dict[str, Any]:
    """One Prometheus that reads every ServiceMonitor and PrometheusRule of the cluster."""
    everything: dict[str, Any] = {}
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "Prometheus",
        "metadata": _meta(PROMETHEUS),
        "spec": {
            "image": image,
            "version": PROMETHEUS_VERSION,
            "replicas": 1,
            "serviceAccountName": "prometheus",
            "serviceMonitorSelector": everything,
            "serviceMonitorNamespaceSelector": everything,
            "ruleSelector": everything,
            "ruleNamespaceSelector": everything,
            "evaluationInterval": EVALUATION_INTERVAL,
            # On the first node, which the lane never takes down: alerts raised while another
            # node is lost are watched there (a Prometheus on the lost node would see nothing).
            "nodeSelector": {"kubernetes.io/hostname": NODE_NAME},
            "resources": {"requests": {"cpu": "50m", "memory": "200Mi"}, "limits": {"memory": "1Gi"}},
            "securityContext": {**_USER, "seccompProfile": {"type": "RuntimeDefault"}},
        },
    }


def objects(crd_dir: Path, image: str) -> list[tuple[str, dict[str, Any]]]:
    """(collection, object) in creation order: the definitions, the namespace, the operator with its
    account, and the Prometheus with its own."""
    operator_dir = crd_dir / "operator"
    definitions = [
        json.loads(p.read_text()) for p in sorted(operator_dir.glob("*.json")) if not p.name.startswith("role-")
    ]
    roles = {p.stem.removeprefix("role-"): json.loads(p.read_text()) for p in operator_dir.glob("role-*.json")}
    if not definitions or set(roles) != {"prometheus-operator", "prometheus"}:
        raise FileNotFoundError(f"{operator_dir}: the operator's definitions or roles are missing")
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    return [
        *((CRDS, crd) for crd in definitions),
        ("/api/v1/namespaces", namespace),
        *_account("prometheus-operator", roles["prometheus-operator"]),
        (f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments", _operator(image)),
        *_account("prometheus", roles["prometheus"]),
        (f"/apis/monitoring.coreos.com/v1/namespaces/{NAMESPACE}/prometheuses", _prometheus(image)),
    ]


def built_image() -> tuple[str, Path]:
    """(tag, archive) of the operator's image that bin/bootstrap --kubernetes built."""
    index = Path(os.environ.get("MM2_IMAGES", ROOT / ".mm2" / "images.json"))
    records = json.loads(index.read_text()) if index.is_file() else {}
    for tag, record in records.items():
        if tag.startswith(MONITORING_REPOSITORY + ":") and Path(record["archive"]).is_file():
            return tag, Path(record["archive"])
    raise KubeError(f"no {MONITORING_REPOSITORY} image in {index}. Fix: bin/bootstrap --kubernetes (builds it).")


def install(lay: Layout) -> int:
    """Load the image, create the objects (those that exist are left), and wait until the
    operator is available and its Prometheus Ready."""
    tag, archive = built_image()
    load(lay, [archive])
    for collection, obj in objects(lay.crds, tag):
        if collection.endswith("/prometheuses"):
            wait_for("the Prometheus definition served", lambda: _served(lay), READY_S)
        api_create(lay, collection, obj)
    deployment = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/prometheus-operator"
    wait_for("the Prometheus Operator available", lambda: condition_true(lay, deployment, "Available"), READY_S)
    pod = f"/api/v1/namespaces/{NAMESPACE}/pods/prometheus-{PROMETHEUS}-0"
    wait_for(f"Prometheus {PROMETHEUS} Ready (its pod)", lambda: condition_true(lay, pod, "Ready"), READY_S)
    say(f"Prometheus {PROMETHEUS} runs: /api/v1/namespaces/{NAMESPACE}/services/{PROMETHEUS_SERVICE}:web/proxy/")
    return 0


def _served(lay: Layout) -> bool:
    return api_get(lay, "/apis/monitoring.coreos.com/v1/prometheuses")[0] == 200
