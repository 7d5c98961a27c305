"""A kubeconfig user's credential from its exec plugin (`users[].user.exec`), as client-go gets
it: the managed clusters' kubeconfigs (EKS's `aws eks get-token`, GKE's `gke-gcloud-auth-plugin`,
AKS's `kubelogin`) name a command that prints an ExecCredential, a bearer token or a client
certificate and key (client.authentication.k8s.io, v1 or v1beta1).

The command runs without a terminal (`interactive: false`): a plugin whose `interactiveMode` is
`Always` is not supported. A credential is kept for the process until its
`expirationTimestamp` (the watch and the roll ask every two seconds; a plugin may take a second),
and dropped when the API server refuses it (`forget`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

RUN_TIMEOUT_S = 60.0
EARLY_S = 30.0  # a credential this close to its expiry is asked for again


class ExecFailed(OSError):
    """The plugin could not be run or printed no credential: the message says which and why."""


@dataclass(frozen=True)
class Credential:
    token: str = ""
    certificate: str = ""  # PEM
    key: str = ""  # PEM
    expires: float | None = None  # time.time() seconds


_kept: dict[str, Credential] = {}


def _key(spec: Mapping[str, Any], cluster: Mapping[str, Any]) -> str:
    return json.dumps([spec, cluster.get("server")], sort_keys=True, default=str)


def credential(spec: Mapping[str, Any], cluster: Mapping[str, Any], base: Path, now: float | None = None) -> Credential:
    """The credential the exec plugin `spec` prints for `cluster` (kubeconfig entries; `base` the
    kubeconfig's folder, which a relative command path starts from)."""
    now, key = time.time() if now is None else now, _key(spec, cluster)
    kept = _kept.get(key)
    if kept is not None and (kept.expires is None or kept.expires - EARLY_S > now):
        return kept
    _kept[key] = parse(_run(spec, cluster, base), str(spec.get("command")))
    return _kept[key]


def forget(spec: Mapping[str, Any], cluster: Mapping[str, Any]) -> None:
    """Drop the kept credential (the API server refused it): the next call runs the plugin again."""
    _kept.pop(_key(spec, cluster), None)


def _run(spec: Mapping[str, Any], cluster: Mapping[str, Any], base: Path) -> str:
    command = str(spec.get("command") or "")
    if not command:
        raise ExecFailed("the kubeconfig's exec plugin names no command")
    if spec.get("interactiveMode") == "Always":
        raise ExecFailed(f"exec plugin {command}: interactiveMode Always needs a terminal; this client runs it without")
    path = str(base / command) if "/" in command and not Path(command).is_absolute() else shutil.which(command)
    if not path:
        hint = f" ({spec['installHint'].strip()})" if spec.get("installHint") else ""
        raise ExecFailed(f"exec plugin {command}: not found on PATH{hint}")
    info: dict[str, Any] = {"interactive": False}
    if spec.get("provideClusterInfo"):
        info["cluster"] = {k: v for k, v in cluster.items() if k in ("server", "certificate-authority-data")}
    version = str(spec.get("apiVersion") or "client.authentication.k8s.io/v1")
    env = {
        **os.environ,
        **{str(e["name"]): str(e["value"]) for e in spec.get("env") or []},
        "KUBERNETES_EXEC_INFO": json.dumps({"apiVersion": version, "kind": "ExecCredential", "spec": info}),
    }
    args = [path, *[str(a) for a in spec.get("args") or []]]
    try:
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExecFailed(f"exec plugin {command}: {exc}") from exc
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        raise ExecFailed(f"exec plugin {command} failed: {said}")
    return done.stdout


def parse(text: str, command: str = "the exec plugin") -> Credential:
    """The credential of an ExecCredential document."""
    try:
        status = (json.loads(text) or {}).get("status") or {}
    except (ValueError, AttributeError) as exc:
        raise ExecFailed(f"{command} printed no ExecCredential: {exc}") from exc
    token = str(status.get("token") or "")
    certificate, key = str(status.get("clientCertificateData") or ""), str(status.get("clientKeyData") or "")
    if not token and not (certificate and key):
        raise ExecFailed(f"{command} printed an ExecCredential with neither a token nor a client certificate and key")
    expires = status.get("expirationTimestamp")
    when = datetime.fromisoformat(str(expires).replace("Z", "+00:00")).timestamp() if expires else None
    return Credential(token, certificate, key, when)
