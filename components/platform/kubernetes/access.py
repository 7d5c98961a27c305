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

from components.platform.image_layout import NO_PULLS_LABEL
from components.platform.kubernetes.api import Unsupported, entry, get_json
from components.platform.kubernetes.capacity import capacity_warnings, demands
from components.platform.lag_exporter import lag_flows
from components.platform.settings import KUBERNETES_CONFIG, KubernetesSettings
from components.topology import Platform, Topology
from components.topology.auto_restart import watched_connectors

WHERE = KUBERNETES_CONFIG
# What a user on one machine can start: bin/kube's cluster (docs/kubernetes.md).
LOCAL_CLUSTER = (
    "on this machine, `bin/kube up` starts a cluster (context mm2-kube; `--nodes 3` for three zones) "
    "and prints its kubeconfig"
)
CONNECT_TIMEOUT_S = 3.0
LOAD_IMAGES = "bin/bootstrap --images builds the project's images and `bin/kube load` loads them into bin/kube's node"


@dataclass(frozen=True)
class Target:
    """A kubeconfig context the stack deploys to (None: the kubeconfig's current context), the
    setting that names it, and the images its pods run there, each with the setting naming it."""

    context: str | None
    key: str
    images: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Server:
    """Where a context's API server listens."""

    context: str
    url: str
    host: str
    port: int


def targets(topology: Topology, settings: KubernetesSettings) -> list[Target]:
    """One per distinct context the topology's Kubernetes clusters and worker groups use, named by
    the first setting that uses it (none when the manifests are only rendered to a directory)."""
    if settings.render_dir:
        return []
    keys: dict[str | None, str] = {}
    images: dict[str | None, dict[str, str]] = {}
    for alias, cluster in topology.clusters.items():
        if cluster.platform is Platform.KUBERNETES:
            pod = settings.cluster(alias)
            keys.setdefault(pod.context, f"{WHERE}.clusters.{alias}.context")
            images.setdefault(pod.context, {}).setdefault(pod.image, f"{WHERE}.clusters.{alias}.image")
    for name, group in topology.worker_groups.items():
        if group.platform is Platform.KUBERNETES:
            workers = settings.group(name)
            keys.setdefault(workers.context, f"{WHERE}.workerGroups.{name}.context")
            used = images.setdefault(workers.context, {})
            used.setdefault(workers.image, f"{WHERE}.workerGroups.{name}.image")
            # The watcher and the lag exporter run the watcher image, when the group has them.
            if watched_connectors(topology, name) or lag_flows(topology, name):
                used.setdefault(workers.watcher_image, f"{WHERE}.workerGroups.{name}.watcherImage")
    return [Target(context, key, tuple(sorted(images[context].items()))) for context, key in keys.items()]


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
    contexts = {c["name"] for c in kubeconfig.get("contexts") or []}
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
    context = entry(kubeconfig, "contexts", name, "context")
    command = str(
        (entry(kubeconfig, "users", str(context.get("user", "")), "user").get("exec") or {}).get("command") or ""
    )
    if "/" in command and not Path(command).is_absolute():
        return (
            f"{target.key}: the user of kubeconfig context {name!r} runs its exec plugin by the relative path "
            f"{command!r}, which pulumi-kubernetes does not resolve (it reads the kubeconfig's text, not its "
            "folder). Fix: name the plugin by its absolute path, or put it on PATH and name it alone."
        )
    cluster = entry(kubeconfig, "clusters", str(context.get("cluster", "")), "cluster")
    url = str(cluster.get("server") or "")
    parts = urlsplit(url)
    if not parts.hostname:
        return f"{target.key}: the kubeconfig context {name!r} names no cluster with a server address in {source}."
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return Server(context=name, url=url, host=parts.hostname, port=port)


def _names(contexts: set[str]) -> str:
    return ", ".join(sorted(contexts)) if contexts else "no context at all"


def reference(image: str) -> str:
    """An image reference as containerd names it: docker.io/ and library/ made explicit."""
    first, _, rest = image.partition("/")
    if not rest:
        return f"docker.io/library/{image}"
    if "." in first or ":" in first or first == "localhost":
        return image
    return f"docker.io/{image}"


def missing_images(nodes: Mapping[str, Any], images: Sequence[str]) -> list[str]:
    """The images no node has, when every node pulls none (else []: the nodes will pull them)."""
    items = nodes.get("items") or []
    if not items or any((n.get("metadata", {}).get("labels") or {}).get(NO_PULLS_LABEL) != "none" for n in items):
        return []
    present = {name for n in items for i in (n.get("status", {}).get("images") or []) for name in i.get("names") or []}
    return [image for image in images if reference(image) not in present and image not in present]


def kubeconfig_paths(environ: Mapping[str, str]) -> list[Path]:
    """The files the provider reads, as kubectl does: `KUBECONFIG` (a path list), else ~/.kube/config."""
    if environ.get("KUBECONFIG"):
        return [Path(p).expanduser() for p in environ["KUBECONFIG"].split(os.pathsep) if p]
    return [Path(environ.get("HOME", str(Path.home()))) / ".kube" / "config"]


def read_kubeconfig(environ: Mapping[str, str]) -> tuple[dict[str, Any], Path]:
    """The kubeconfig files the provider reads, merged, and the folder their relative paths start
    from (the first file's). OSError or yaml.YAMLError when one cannot be read."""
    present = [p for p in kubeconfig_paths(environ) if p.is_file()]
    config = merged([yaml.safe_load(p.read_text()) or {} for p in present])
    return config, present[0].parent if present else Path.cwd()


def kubeconfig_context(environ: Mapping[str, str], context: str) -> tuple[dict[str, Any], Path, str]:
    """The kubeconfig the provider reads, its folder, and the context to ask (`context`, else the
    current one). OSError when there is no kubeconfig or it names no such context (no request goes
    anywhere then), yaml.YAMLError when one cannot be parsed."""
    config, base = read_kubeconfig(environ)
    name = context or str(config.get("current-context") or "")
    if not entry(config, "contexts", name, "context"):
        raise OSError(f"no kubeconfig context {name!r} (KUBECONFIG, else ~/.kube/config)")
    return config, base, name


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
            continue
        keys = dict(target.images)
        problems += [
            f"{keys[image]}: the image {image} is not on the node of context {server.context!r}, which pulls no "
            f"images ({NO_PULLS_LABEL}=none): its pods would wait for it until readyTimeout. Fix: {LOAD_IMAGES}."
            for image in nodes_missing(config, server, list(keys), present[0].parent)
        ]
    return problems


def nodes_missing(config: Mapping[str, Any], server: Server, images: Sequence[str], base: Path) -> list[str]:
    """`missing_images` of the context's nodes; [] when the API cannot be asked (the provider
    reports a pod's image error at up, bounded by readyTimeout)."""
    if not images:
        return []
    try:
        return missing_images(get_json(config, server.context, "/api/v1/nodes", base), images)
    except (Unsupported, OSError, ValueError):
        return []


def capacity_notes(
    topology: Topology, settings: KubernetesSettings, environ: Mapping[str, str] = os.environ
) -> list[str]:
    """`capacity.capacity_warnings` for each context the stack deploys to whose nodes the API
    server lists; nothing where the kubeconfig or the nodes cannot be read (access_problems says
    why at the same preview)."""
    try:
        config, base = read_kubeconfig(environ)
    except (OSError, yaml.YAMLError):
        return []
    notes: list[str] = []
    for target in targets(topology, settings):
        server = resolve(config, target, "")
        if isinstance(server, str):
            continue
        try:
            nodes = get_json(config, server.context, "/api/v1/nodes", base)
        except (Unsupported, OSError, ValueError):
            continue
        notes += capacity_warnings(server.context, demands(topology, settings, target.context), nodes)
    return notes
