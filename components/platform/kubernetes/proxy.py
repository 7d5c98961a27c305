"""What runs inside a Kubernetes cluster, read from outside it through its API server's proxy, as
the kubeconfig's user (`kubectl get --raw` would do the same): every worker pod's metrics, and a
Service such as a group's lag exporter. For `bin/status`, which runs where the operator's
kubeconfig is, not inside the cluster; the user needs `get` on pods/proxy and services/proxy.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

import yaml

from components.platform.kubernetes.access import kubeconfig_context
from components.platform.kubernetes.api import Unsupported, call, get_json, pod_proxy_path, pods_path


def pod_texts(pods: Mapping[str, str], path: str, environ: Mapping[str, str] = os.environ) -> list[str | None]:
    """GET `path` on port `pods["port"]` of each Running pod matching `pods["selector"]` in
    `pods["namespace"]` (context `pods["context"]`), all at once: each pod's text, None for one
    that did not answer. [] when the pods cannot be listed (no kubeconfig, a user it cannot speak for)."""
    try:
        config, base, context = kubeconfig_context(environ, pods.get("context", ""))
        namespace = pods["namespace"]
        found = get_json(config, context, pods_path(namespace, pods["selector"]), base)
    except (Unsupported, OSError, ValueError, KeyError, yaml.YAMLError):
        return []
    names = [
        p["metadata"]["name"]
        for p in found.get("items") or []
        if (p.get("status") or {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    ]

    def text(name: str) -> str | None:
        try:
            status, body = call(config, context, "GET", pod_proxy_path(namespace, name, pods["port"], path), base)
        except (OSError, Unsupported):
            return None
        return body.decode("utf-8", "replace") if status == 200 else None

    if not names:
        return []
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        return list(pool.map(text, sorted(names)))


def service_get(
    context: str, namespace: str, service: str, port: int, path: str, environ: Mapping[str, str] = os.environ
) -> bytes:
    """GET `path` of Service `service`:`port` in `namespace` through the API server of `context`.
    OSError (with the HTTP status, or why the API server could not be asked) when it does not answer 200."""
    try:
        config, base, name = kubeconfig_context(environ, context)
        proxied = f"/api/v1/namespaces/{namespace}/services/{service}:{port}/proxy{path}"
        status, body = call(config, name, "GET", proxied, base)
    except (Unsupported, ValueError, yaml.YAMLError) as exc:
        raise OSError(f"the Kubernetes API server could not be asked: {exc}") from exc
    if status != 200:
        raise OSError(f"HTTP {status} through the Kubernetes API server's service proxy")
    return body
