"""A read of the Kubernetes API as a kubeconfig's user, for the few questions the program asks at
preview (components/platform/kubernetes/access.py). Client certificates, bearer tokens and the
cluster's CA are supported, given as files or inline data, and so is a user whose exec plugin
prints them (exec_credential.py: the managed clusters' kubeconfigs); a user of a (long removed)
auth provider or of basic auth is not, and the caller skips what it would have asked."""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from components.platform.kubernetes.exec_credential import credential, forget

TIMEOUT_S = 5.0


class Unsupported(Exception):
    """The kubeconfig's user authenticates in a way this client does not speak."""


def entry(config: Mapping[str, Any], section: str, name: str, field: str) -> Mapping[str, Any]:
    """The `field` of the kubeconfig `section`'s entry called `name` (e.g. a context's `context`),
    {} when there is none."""
    for item in config.get(section) or []:
        if item.get("name") == name:
            return item.get(field) or {}
    return {}


def _material(spec: Mapping[str, Any], key: str, base: Path, folder: Path) -> str | None:
    """The path of `key` (a file, relative to the kubeconfig) or of `key-data` written to `folder`."""
    if spec.get(f"{key}-data"):
        path = folder / key
        path.write_bytes(base64.b64decode(spec[f"{key}-data"]))
        return str(path)
    if spec.get(key):
        return str(base / Path(spec[key]).expanduser())
    return None


def _tls(cluster: Mapping[str, Any], user: Mapping[str, Any], base: Path, folder: Path) -> ssl.SSLContext:
    if cluster.get("insecure-skip-tls-verify"):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context = ssl.create_default_context(cafile=_material(cluster, "certificate-authority", base, folder))
    cert = _material(user, "client-certificate", base, folder)
    if cert:
        context.load_cert_chain(cert, _material(user, "client-key", base, folder))
    return context


def _user(user: Mapping[str, Any], cluster: Mapping[str, Any], base: Path) -> Mapping[str, Any]:
    """The user's credential as kubeconfig fields: as written, or from its exec plugin."""
    if not user.get("exec"):
        return user
    got = credential(user["exec"], cluster, base)
    encode = base64.b64encode
    pem = {"client-certificate-data": encode(got.certificate.encode()).decode()} if got.certificate else {}
    key = {"client-key-data": encode(got.key.encode()).decode()} if got.key else {}
    return {**({"token": got.token} if got.token else {}), **pem, **key}


def call(
    config: Mapping[str, Any], context_name: str, method: str, path: str, base: Path, body: Any = None
) -> tuple[int, bytes]:
    """`method` `path` on the API server of `context_name`, as its user, with `body` as JSON if
    given: (HTTP status, body).
    Raises Unsupported for an auth-provider or basic-auth user, OSError / ssl.SSLError when the
    call fails (ExecFailed when the user's exec plugin does)."""
    context = entry(config, "contexts", context_name, "context")
    cluster = entry(config, "clusters", str(context.get("cluster", "")), "cluster")
    written = entry(config, "users", str(context.get("user", "")), "user")
    if written.get("auth-provider") or written.get("username"):
        raise Unsupported(f"user {context.get('user')!r} of context {context_name!r}")
    user = _user(written, cluster, base)
    url = urlsplit(str(cluster.get("server", "")))
    headers = {"Accept": "application/json"}
    payload = None if body is None else json.dumps(body).encode()
    if payload is not None:
        headers["Content-Type"] = "application/json"
    if user.get("token"):
        headers["Authorization"] = f"Bearer {user['token']}"
    # Inline key material lives only in a private folder for the length of the handshake setup.
    with tempfile.TemporaryDirectory(prefix="mm2-kube-") as folder:
        os.chmod(folder, 0o700)
        if url.scheme == "https":
            tls = _tls(cluster, user, base, Path(folder))
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                url.hostname or "", url.port or 443, timeout=TIMEOUT_S, context=tls
            )
        else:
            conn = http.client.HTTPConnection(url.hostname or "", url.port or 80, timeout=TIMEOUT_S)
    try:
        conn.request(method, url.path.rstrip("/") + path, body=payload, headers=headers)
        answer = conn.getresponse()
        answered = answer.read()
    finally:
        conn.close()
    if answer.status == 401 and written.get("exec"):
        forget(written["exec"], cluster)  # expired or revoked: the next call asks the plugin again
    return answer.status, answered


def pods_path(namespace: str, selector: str) -> str:
    """The API path listing the pods of `namespace` that match label selector text `selector`."""
    return f"/api/v1/namespaces/{namespace}/pods?labelSelector={quote(selector)}"


def pod_proxy_path(namespace: str, pod: str, port: int | str, path: str) -> str:
    """The API path of `path` on port `port` of pod `pod`, through the API server's proxy."""
    return f"/api/v1/namespaces/{namespace}/pods/{pod}:{port}/proxy{path}"


def get_json(config: Mapping[str, Any], context_name: str, path: str, base: Path) -> Any:
    """GET `path` from the API server of `context_name`, as its user. Raises Unsupported for an
    auth-provider or basic-auth user, OSError / ssl.SSLError / ValueError when the call fails."""
    status, body = call(config, context_name, "GET", path, base)
    if status != 200:
        raise ValueError(f"GET {path}: HTTP {status}")
    return json.loads(body)
