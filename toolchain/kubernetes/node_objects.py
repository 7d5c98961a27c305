"""The objects `bin/kube up` creates once the API server answers: the roles of the node's own
daemons that Kubernetes has none for, and the default StorageClass (toolchain/kubernetes/node.py)."""

from __future__ import annotations

from typing import Any

from toolchain.kubernetes.node_base import STORAGE_CLASS
from toolchain.kubernetes.provisioner import PROVISIONER


def _cluster_role(user: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": user},
        "rules": rules,
    }


def _rule(group: str, resources: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"apiGroups": [group], "resources": resources, "verbs": verbs}


def role_binding(role: dict[str, Any], subject: dict[str, str]) -> dict[str, Any]:
    """The ClusterRoleBinding, of the role's name, that gives `role` to `subject`."""
    name = role["metadata"]["name"]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [subject],
    }


def _binding(role: dict[str, Any]) -> dict[str, Any]:
    """`role` given to the user of the same name (a node daemon's certificate)."""
    user = {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": role["metadata"]["name"]}
    return role_binding(role, user)


# The node's own daemons that Kubernetes has no role for: their certificate's file name -> the
# role given to the user of the role's name. CoreDNS reads what its kubernetes plugin serves; the
# provisioner makes and removes volumes for claims.
ROLES = {
    "coredns": _cluster_role(
        "system:coredns",
        [
            _rule("", ["endpoints", "services", "pods", "namespaces"], ["list", "watch"]),
            _rule("discovery.k8s.io", ["endpointslices"], ["list", "watch"]),
        ],
    ),
    # kube-router's network policy controller alone (no routing, no service proxy): it watches
    # pods, namespaces and policies and reads the node and its Services' ranges.
    "kube-router": _cluster_role(
        "system:mm2-kube-router",
        [
            _rule("", ["nodes", "pods", "namespaces", "services", "endpoints"], ["get", "list", "watch"]),
            _rule("networking.k8s.io", ["networkpolicies"], ["list", "watch"]),
            _rule("discovery.k8s.io", ["endpointslices"], ["list", "watch"]),
        ],
    ),
    "provisioner": _cluster_role(
        "system:mm2-kube-provisioner",
        [
            _rule("", ["persistentvolumeclaims"], ["get", "list"]),
            _rule("", ["persistentvolumes"], ["get", "list", "create", "delete"]),
            _rule("storage.k8s.io", ["storageclasses"], ["get", "list"]),
        ],
    ),
}
STORAGE_CLASS_OBJECT = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {
        "name": STORAGE_CLASS,
        "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
    },
    "provisioner": PROVISIONER,
    "reclaimPolicy": "Delete",
    # A claim waits for its first pod, so its volume is made on the node the scheduler chose for
    # it (the provisioner reads the claim's selected node), as a zonal disk's StorageClass does.
    "volumeBindingMode": "WaitForFirstConsumer",
}
# (path of the collection, object) bin/kube up creates once the API server answers.
BOOTSTRAP_OBJECTS = (
    *(("/apis/rbac.authorization.k8s.io/v1/clusterroles", role) for role in ROLES.values()),
    *(("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", _binding(role)) for role in ROLES.values()),
    ("/apis/storage.k8s.io/v1/storageclasses", STORAGE_CLASS_OBJECT),
)
