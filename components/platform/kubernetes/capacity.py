"""Will the stack's pods fit the nodes? What the preview warns about before `up` waits on Pending
pods until readyTimeout (a new user's first `up` on a 2-CPU node: the brokers' default request of
one CPU each filled it, and the workers stayed Pending on "Insufficient cpu" for five minutes).

Pure: `demands` reads the topology and the platform settings, `capacity_warnings` a node list as
the API server returns it (`GET /api/v1/nodes`). Warnings, not errors: a cluster autoscaler adds
nodes for Pending pods, so a stack larger than today's nodes may be what its owner wants.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from components.platform.kubernetes.lag_exporter_objects import EXPORTER_REQUESTS
from components.platform.kubernetes.watcher_objects import WATCHER_REQUESTS
from components.platform.lag_exporter import lag_flows
from components.platform.settings import KubernetesSettings, Resources
from components.topology import Platform, Topology
from components.topology.auto_restart import watched_connectors

_QUANTITY = re.compile(r"^([0-9.]+)([a-zA-Z]*)$")
_SUFFIXES = {
    **{s: Decimal(1024) ** (i + 1) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
    **{s: Decimal(1000) ** (i + 1) for i, s in enumerate(("k", "M", "G", "T", "P", "E"))},
    "m": Decimal("0.001"),
    "": Decimal(1),
}


def quantity(value: str) -> Decimal:
    """A Kubernetes quantity ("500m", "1", "4Gi", "128974848", "1.5G") as a number; ValueError otherwise."""
    match = _QUANTITY.match(str(value).strip())
    if match is None or match[2] not in _SUFFIXES:
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    return Decimal(match[1]) * _SUFFIXES[match[2]]


@dataclass(frozen=True)
class Demand:
    """Pods of one kind the stack runs in one context, and what each asks of a node."""

    key: str  # the setting that sizes them
    what: str  # "2 brokers of us", "3 workers of to-eu"
    pods: int
    cpu: Decimal  # cores, per pod
    memory: Decimal  # bytes, per pod
    one_per_node: bool = False  # required anti-affinity per host (brokers)


def _demand(key: str, what: str, pods: int, requests: Mapping[str, str], one_per_node: bool = False) -> Demand:
    return Demand(key, what, pods, quantity(requests["cpu"]), quantity(requests["memory"]), one_per_node)


def _requests(resources: Resources) -> dict[str, str]:
    return {"cpu": resources.cpu_request, "memory": resources.memory_request}


def demands(topology: Topology, settings: KubernetesSettings, context: str | None) -> tuple[Demand, ...]:
    """Every kind of pod the stack runs in `context`: brokers, workers, watchers, lag exporters."""
    found = []
    for alias, cluster in topology.clusters.items():
        pod = settings.cluster(alias)
        if cluster.platform is Platform.KUBERNETES and pod.context == context:
            what = f"{cluster.brokers} broker(s) of {alias}"
            key = settings.cluster_key(alias, "resources")
            found.append(_demand(key, what, cluster.brokers, _requests(pod.resources), one_per_node=True))
    for name, group in topology.worker_groups.items():
        workers = settings.group(name)
        if group.platform is not Platform.KUBERNETES or workers.context != context:
            continue
        key = settings.group_key(name, "resources")
        found.append(_demand(key, f"{group.workers} worker(s) of {name}", group.workers, _requests(workers.resources)))
        if watched_connectors(topology, name):
            found.append(_demand("(fixed)", f"the watcher of {name}", 1, WATCHER_REQUESTS))
        if lag_flows(topology, name):
            found.append(_demand("(fixed)", f"the lag exporter of {name}", 1, EXPORTER_REQUESTS))
    return tuple(found)


def _allocatable(nodes: Mapping[str, Any]) -> list[tuple[Decimal, Decimal]]:
    """(cores, bytes) each schedulable node allocates to pods."""
    out = []
    for node in nodes.get("items") or []:
        if (node.get("spec") or {}).get("unschedulable"):
            continue
        alloc = (node.get("status") or {}).get("allocatable") or {}
        out.append((quantity(alloc.get("cpu", "0")), quantity(alloc.get("memory", "0"))))
    return out


def _cores(value: Decimal) -> str:
    return f"{value.normalize():f}"


def _gib(value: Decimal) -> str:
    return f"{value / 1024**3:.1f}Gi"


def capacity_warnings(context: str, wanted: Sequence[Demand], nodes: Mapping[str, Any]) -> list[str]:
    """What will not fit the nodes of `context`: a pod bigger than every node, more brokers than
    nodes (one broker per host), or more asked in all than the nodes allocate."""
    sizes = _allocatable(nodes)
    if not sizes or not wanted:
        return []
    where = f"context {context!r} ({len(sizes)} schedulable node(s))"
    largest = (max(c for c, _ in sizes), max(m for _, m in sizes))
    warnings = []
    for d in wanted:
        if d.cpu > largest[0] or d.memory > largest[1]:
            warnings.append(
                f"{d.key}: each of {d.what} asks {_cores(d.cpu)} CPU and {_gib(d.memory)}, more than any node of "
                f"{where} allocates (at most {_cores(largest[0])} CPU, {_gib(largest[1])}): it would stay Pending. "
                f"Fix: lower {d.key}.requests, or add larger nodes."
            )
        if d.one_per_node and d.pods > len(sizes):
            warnings.append(
                f"{d.key}: {d.what} need {d.pods} nodes (one broker per host, required anti-affinity); {where} has "
                f"{len(sizes)}: {d.pods - len(sizes)} would stay Pending. Fix: add nodes, or lower the broker count."
            )
    for index, name in ((0, "CPU"), (1, "memory")):
        asked = sum((d.pods * (d.cpu, d.memory)[index] for d in wanted), Decimal(0))
        total = sum((s[index] for s in sizes), Decimal(0))
        if asked > total:
            show = _cores if index == 0 else _gib
            by_key: dict[str, Decimal] = {}
            for d in wanted:
                if d.key != "(fixed)":
                    by_key[d.key] = by_key.get(d.key, Decimal(0)) + d.pods * (d.cpu, d.memory)[index]
            biggest = sorted(by_key.items(), key=lambda item: item[1], reverse=True)[:2]
            lower = " or ".join(f"{key}.requests.{name.lower()} ({show(amount)} in all)" for key, amount in biggest)
            warnings.append(
                f"{where}: the stack's pods ask {show(asked)} {name} in all and the nodes allocate {show(total)}: some "
                f'would stay Pending ("Insufficient {name.lower()}") until `up` gives up at readyTimeout. Fix: lower '
                f"{lower or 'the requests'}, or add nodes."
            )
    return warnings
