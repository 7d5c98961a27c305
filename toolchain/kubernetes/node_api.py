"""The cluster's API server as the admin, through the host's forwarder on 127.0.0.1: reads,
creates, and the conditions `bin/kube up` waits on (toolchain/kubernetes/node.py)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

from toolchain.kubernetes.node_base import FIRST, UP_TIMEOUT, KubeError, Layout, Node, wait_for


def _admin(lay: Layout) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(lay.pki / "ca.crt"))
    context.load_cert_chain(str(lay.pki / "admin.crt"), str(lay.pki / "admin.key"))
    return context


def api_get(lay: Layout, path: str, timeout: float = 3.0) -> tuple[int, bytes]:
    """GET through the host forwarder as the admin; (0, b"") when nothing answers."""
    try:
        with urllib.request.urlopen(
            f"https://127.0.0.1:{lay.api_port}{path}", context=_admin(lay), timeout=timeout
        ) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (OSError, ssl.SSLError):
        return 0, b""


def api_create(lay: Layout, collection: str, obj: dict[str, object]) -> None:
    """POST an object as the admin; one that exists already is left as it is."""
    request = urllib.request.Request(
        f"https://127.0.0.1:{lay.api_port}{collection}",
        data=json.dumps(obj).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, context=_admin(lay), timeout=10):
            return
    except urllib.error.HTTPError as error:
        if error.code != 409:
            raise KubeError(f"creating {collection}/{obj['metadata']}: {error.code} {error.read()[:500]!r}") from None


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def install_crds(lay: Layout) -> list[str]:
    """Create every definition in `lay.crds` (the Prometheus Operator's ServiceMonitor and
    PrometheusRule, so a stack with metrics on deploys here) and wait until the API serves each."""
    names = []
    for path in sorted(lay.crds.glob("*.json")):
        crd = json.loads(path.read_text())
        api_create(lay, CRDS, crd)
        names.append(crd["metadata"]["name"])
    wait_for(
        f"CRDs {', '.join(names)} established",
        lambda: all(_established(lay, name) for name in names),
        UP_TIMEOUT,
        lay.log("kube-apiserver"),
    )
    return names


def _established(lay: Layout, name: str) -> bool:
    return condition_true(lay, f"{CRDS}/{name}", "Established")


def node_ready(lay: Layout, node: Node = FIRST) -> bool:
    return condition_true(lay, f"/api/v1/nodes/{node.name}", "Ready")


def condition_true(lay: Layout, path: str, kind: str) -> bool:
    """Whether the object at `path` reports its status condition `kind` as True."""
    status, body = api_get(lay, path)
    # A definition just created reads `"conditions": null` until its controller's first pass.
    found = (json.loads(body).get("status") or {}).get("conditions") if status == 200 else None
    conditions = found or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)
