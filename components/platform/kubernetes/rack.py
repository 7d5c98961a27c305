"""Each broker's `broker.rack` from its node's zone, read the way a stock cluster allows: pure, no
I/O (the objects are rendered by kafka_objects.py).

A pod cannot see its node's labels (the downward API gives them only behind an alpha feature,
PodTopologyLabelsAdmission), so an init container of the broker's own image asks the API server
for its node (`GET /api/v1/nodes/<spec.nodeName>`, as the brokers' ServiceAccount, allowed `get`
on nodes by a ClusterRole) and writes the value of the zone label to the runtime folder the
broker's start script reads. A node without the label fails the init container with a message
naming the node, the label and the fix, so the pod is never Ready (its events and `kubectl
describe` show the message) instead of every broker sharing one rack unseen. `zoneLabel: ""`
leaves all of it out: one rack per cluster, its datacenter (or its alias).
"""

from __future__ import annotations

from typing import Any

from components.platform.image_layout import RUNTIME_DIR
from components.platform.kubernetes.metadata import container_security

RACK_FILE = f"{RUNTIME_DIR}/rack"
TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_VOLUME = "node-reader"


def rack_script(zone_label: str, setting: str) -> str:
    """The init container's bash: the node's `zone_label` into RACK_FILE, or exit 1 saying why."""
    pattern = zone_label.replace(".", "\\.")
    fix = (
        f"Fix: label the node (kubectl label node $NODE_NAME {zone_label}=<zone>), or set {setting} to the "
        'label your nodes carry, or to "" for one rack per cluster.'
    )
    return f"""set -uo pipefail
fail() {{ echo "rack: $1" | tee /dev/termination-log >&2; exit 1; }}
api="https://${{KUBERNETES_SERVICE_HOST}}:${{KUBERNETES_SERVICE_PORT}}"
node="$(curl -sS --fail-with-body --max-time 10 --cacert {TOKEN_DIR}/ca.crt \\
  -H "Authorization: Bearer $(cat {TOKEN_DIR}/token)" "$api/api/v1/nodes/$NODE_NAME" 2>&1)" \\
  || fail "cannot read node $NODE_NAME from the API server: ${{node:0:300}}"
zone="$(printf '%s' "$node" | grep -o '"{pattern}": *"[^"]*"' | head -n 1 | sed 's/.*: *"\\(.*\\)"$/\\1/')"
[ -n "$zone" ] || fail "node $NODE_NAME has no label {zone_label}, so broker.rack cannot be its zone. {fix}"
printf '%s\\n' "$zone" > {RACK_FILE}
echo "rack: $zone (node $NODE_NAME)"
"""


def rack_init_container(image: str, zone_label: str, setting: str) -> dict[str, Any]:
    return {
        "name": "rack",
        "image": image,
        "command": ["/bin/bash", "-c", rack_script(zone_label, setting)],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
        "volumeMounts": [
            {"name": "runtime", "mountPath": RUNTIME_DIR},
            {"name": TOKEN_VOLUME, "mountPath": TOKEN_DIR, "readOnly": True},
        ],
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "securityContext": container_security(),
    }


def token_volume() -> dict[str, Any]:
    """The ServiceAccount's token, the cluster's CA and the namespace: what the kubelet would mount
    in every container, mounted in the init container alone (the broker gets no token)."""
    return {
        "name": TOKEN_VOLUME,
        "projected": {
            "sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
            ]
        },
    }


def node_reader_objects(
    name: str, namespace: str, labels: dict[str, str], account: str | None = None
) -> tuple[dict[str, Any], ...]:
    """The brokers' ServiceAccount `name`, and the cluster-wide role to `get` nodes bound to it
    (named `<namespace>-<name>-nodes`: ClusterRoles are not namespaced). With `account`, the role
    is bound to that existing ServiceAccount instead, and none is made."""
    cluster_wide = f"{namespace}-{name}-nodes"
    meta = {"name": cluster_wide, "labels": dict(labels)}
    made = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "automountServiceAccountToken": False,
    }
    return (
        *(() if account else (made,)),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": meta,
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": dict(meta),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_wide},
            "subjects": [{"kind": "ServiceAccount", "name": account or name, "namespace": namespace}],
        },
    )
