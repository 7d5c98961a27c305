"""Can the stack reach the Kubernetes clusters it deploys to? Asked at preview, before anything
registers, so a wrong kubeconfig context or a cluster that is down reads as one line naming the key
and the fix instead of the provider's connection errors (or, worse, a preview that goes on offline
and an `up` that fails half-way).

`targets` and `resolve` are pure: which kubeconfig contexts a topology deploys to, and what a
kubeconfig says about one. `access_problems` does the I/O: it reads the kubeconfig the provider
reads (`KUBECONFIG`, else `~/.kube/config`) and opens a TCP connection to each API server.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from components.platform.settings import KubernetesSettings
from components.topology import Platform, Topology

WHERE = "mm2-platform:kubernetes"
# What a user on one machine can start: bin/kube's single-node cluster (docs/kubernetes.md).
LOCAL_CLUSTER = (
    "on this machine, `bin/kube up` starts a single-node cluster (context mm2-kube) and prints its kubeconfig"
)
CONNECT_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class Target:
    """A kubeconfig context the stack deploys to (None: the kubeconfig's current context), and the
    setting that names it."""

    context: str | None
    key: str


@dataclass(frozen=True)
class Server:
    """Where a context's API server listens."""

    context: str
    url: str
    host: str
    port: int


def targets(topology: Topology, settings: KubernetesSettings) -> list[Target]:
    """One per distinct context the topology's Kubernetes clusters and worker groups use (none when
    the manifests are only rendered to a directory)."""
    if settings.render_dir:
        return []
    found: dict[str | None, Target] = {}
    for alias, cluster in topology.clusters.items():
        if cluster.platform is Platform.KUBERNETES:
            context = settings.cluster(alias).context
            found.setdefault(context, Target(context, f"{WHERE}.clusters.{alias}.context"))
    for name, group in topology.worker_groups.items():
        if group.platform is Platform.KUBERNETES:
            context = settings.group(name).context
            found.setdefault(context, Target(context, f"{WHERE}.workerGroups.{name}.context"))
    return list(found.values())


def merged(configs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Kubeconfig files merged as kubectl does: the first file to name an entry (or set
    current-context) wins."""
    out: dict[str, Any] = {"clusters": [], "contexts": [], "users": [], "current-context": ""}
    for config in configs:
        for section in ("clusters", "contexts", "users"):
            have = {entry.get("name") for entry in out[section]}
            entries = [e for e in config.get(section) or [] if isinstance(e, Mapping)]
            out[section] += [e for e in entries if e.get("name") not in have]
        if not out["current-context"]:
            out["current-context"] = config.get("current-context") or ""
    return out


def resolve(kubeconfig: Mapping[str, Any], target: Target, source: str) -> Server | str:
    """The API server of `target`'s context, or a problem naming the key and the fix."""
    contexts = {c["name"]: c.get("context") or {} for c in kubeconfig.get("contexts") or []}
    name = target.context or kubeconfig.get("current-context") or ""
    if not name:
        return (
            f"{target.key}: not set, and the kubeconfig {source} has no current context. Fix: set it to one of "
            f"{_names(contexts)}, or `kubectl config use-context NAME`; {LOCAL_CLUSTER}."
        )
    if name not in contexts:
        return (
            f"{target.key}: the kubeconfig context {name!r} does not exist in {source} (it has {_names(contexts)}). "
            f"Fix: name one of those, or add the context to the kubeconfig; {LOCAL_CLUSTER}."
        )
    clusters = {c["name"]: c.get("cluster") or {} for c in kubeconfig.get("clusters") or []}
    cluster = clusters.get(contexts[name].get("cluster", ""))
    url = str((cluster or {}).get("server") or "")
    parts = urlsplit(url)
    if not parts.hostname:
        return f"{target.key}: the kubeconfig context {name!r} names no cluster with a server address in {source}."
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return Server(context=name, url=url, host=parts.hostname, port=port)


def _names(contexts: Mapping[str, Any]) -> str:
    return ", ".join(sorted(contexts)) if contexts else "no context at all"


def kubeconfig_paths(environ: Mapping[str, str]) -> list[Path]:
    """The files the provider reads, as kubectl does: `KUBECONFIG` (a path list), else ~/.kube/config."""
    if environ.get("KUBECONFIG"):
        return [Path(p).expanduser() for p in environ["KUBECONFIG"].split(os.pathsep) if p]
    return [Path(environ.get("HOME", str(Path.home()))) / ".kube" / "config"]


def _answers(server: Server) -> str | None:
    """None when the API server accepts a connection, else why not."""
    try:
        with socket.create_connection((server.host, server.port), timeout=CONNECT_TIMEOUT_S):
            return None
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__


def access_problems(
    wanted: Sequence[Target],
    environ: Mapping[str, str] = os.environ,
    answers: Callable[[Server], str | None] = _answers,
) -> list[str]:
    """A problem per target whose context is missing or whose API server does not answer."""
    if not wanted:
        return []
    paths = kubeconfig_paths(environ)
    present = [p for p in paths if p.is_file()]
    source = os.pathsep.join(str(p) for p in paths)
    if not present:
        return [
            f"{wanted[0].key}: the kubernetes platform needs a kubeconfig, and {source} does not exist. "
            f"Fix: export KUBECONFIG=FILE; {LOCAL_CLUSTER}."
        ]
    try:
        config = merged([yaml.safe_load(p.read_text()) or {} for p in present])
    except (OSError, yaml.YAMLError) as exc:
        return [f"{wanted[0].key}: the kubeconfig {source} cannot be read: {exc}"]
    problems: list[str] = []
    for target in wanted:
        server = resolve(config, target, source)
        if isinstance(server, str):
            problems.append(server)
            continue
        why = answers(server)
        if why is not None:
            problems.append(
                f"{target.key}: the Kubernetes API server of context {server.context!r} ({server.url}) does not "
                f"answer ({why}). Fix: start that cluster, or name a context whose cluster runs; {LOCAL_CLUSTER}."
            )
    return problems
