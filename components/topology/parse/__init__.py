"""Stack config (namespace `mm2`) -> Topology, collecting every problem before raising.

Each config section has its own module (defaults, clusters and their security, worker groups,
flows, failover pairs, links, cross-section checks); all of them report into one `Problems` collector. Every problem
names its key path as `pulumi config` users see it (`mm2:flows.primary->dr.topics[1]`) and says
how to fix it; `parse_topology` raises one TopologyError listing all of them, in the order the
sections are read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from components.topology import settings as known
from components.topology.model import Cluster, Flow, Topology, WorkerGroup
from components.topology.parse.clusters import parse_cluster
from components.topology.parse.cross_checks import check_ports, check_shared_target
from components.topology.parse.defaults import parse_defaults
from components.topology.parse.flows import Declared, parse_flow
from components.topology.parse.links import parse_links
from components.topology.parse.metrics import check_metrics_ports
from components.topology.parse.pairs import parse_pairs, with_pair_states
from components.topology.parse.problems import NAMESPACE, Problems, path
from components.topology.parse.values import as_mapping
from components.topology.parse.worker_groups import parse_worker_group
from components.topology.security import worker_username

# Top-level keys of the namespace. `secrets` holds the Pulumi secrets that SecretRef keys
# name (`pulumi config set --secret --path 'mm2:secrets["primary.mm2.password"]' ...`); the
# platform code writes them into each worker group's secrets file, so the model skips it.
TOP_LEVEL_KEYS = ("defaults", "clusters", "workerGroups", "flows", "failover", "links", "secrets", "rotate")


def parse_topology(config: Mapping[str, Any], now_ms: int | None = None) -> Topology:
    """Parse the `mm2` stack config namespace (prefix removed); raise TopologyError listing every problem.

    `now_ms`: the clock (ms since the epoch) a `lossAcknowledged` instant may not be ahead of; the
    program passes the preview's, so the parse itself reads no clock. None judges no instant by it.
    """
    problems = Problems()
    topology = _parse(problems, config, now_ms)
    problems.raise_if_any()
    return topology


def with_secrets_file(topology: Topology, group: str, secrets_file: str) -> Topology:
    """The same topology with one worker group reading secrets from another file.

    The local platform keeps secrets in its state directory, not /etc/mm2; it calls this before
    generating worker and connector configs so every placeholder names the file it writes.
    """
    groups = dict(topology.worker_groups)
    groups[group] = replace(groups[group], secrets_file=secrets_file)
    return replace(topology, worker_groups=_frozen_group_map(groups))


def _parse(problems: Problems, config: Mapping[str, Any], now_ms: int | None) -> Topology:
    _check_top_level(problems, config)
    defaults = parse_defaults(problems, config.get("defaults"), now_ms)

    clusters: dict[str, Cluster] = {}
    raw_clusters = as_mapping(problems, config.get("clusters"), path("clusters")) or {}
    if not raw_clusters:
        problems.add(path("clusters"), "no clusters are defined.", "Add at least two clusters under mm2:clusters.")
    for alias, raw in raw_clusters.items():
        cluster = parse_cluster(problems, str(alias), raw)
        if cluster is not None:
            clusters[cluster.alias] = cluster

    groups: dict[str, WorkerGroup] = {}
    raw_groups = as_mapping(problems, config.get("workerGroups"), path("workerGroups")) or {}
    for name, raw in raw_groups.items():
        group = parse_worker_group(problems, str(name), raw, clusters, set(raw_clusters))
        if group is not None:
            groups[group.name] = group

    declared = Declared(
        defaults=defaults,
        clusters=clusters,
        cluster_aliases=set(raw_clusters),
        groups=groups,
        group_names=set(raw_groups),
        now_ms=now_ms,
    )
    flows: list[Flow] = []
    seen: dict[str, str] = {}
    raw_flows = as_mapping(problems, config.get("flows"), path("flows")) or {}
    for flow_key, raw in raw_flows.items():
        flow = parse_flow(problems, str(flow_key), raw, declared, seen)
        if flow is not None:
            flows.append(flow)

    check_ports(problems, clusters, groups)
    check_shared_target(problems, flows)
    check_metrics_ports(problems, clusters, groups)
    flows.sort(key=lambda f: (f.source, f.target))
    pairs = parse_pairs(problems, config.get("failover"), clusters, flows, _stack_users(clusters, groups))
    return Topology(
        clusters=MappingProxyType(dict(sorted(clusters.items()))),
        worker_groups=_frozen_group_map(groups),
        flows=with_pair_states(flows, pairs),
        pairs=pairs,
        links=parse_links(problems, config.get("links"), clusters),
    )


def _stack_users(clusters: Mapping[str, Cluster], groups: Mapping[str, WorkerGroup]) -> set[str]:
    """The principals the stack itself connects as: MM2's on every cluster and each worker group's."""
    users = {c.security.username for c in clusters.values() if c.security.username}
    return users | {worker_username(g) for g in groups.values()}


def _check_top_level(problems: Problems, config: Mapping[str, Any]) -> None:
    for top in config:
        if top not in TOP_LEVEL_KEYS:
            hint = known.suggest(str(top), TOP_LEVEL_KEYS)
            did = f'Did you mean "{hint}"? ' if hint else ""
            problems.add(
                path(str(top)),
                f'unknown stack config key "{NAMESPACE}:{top}".',
                f"{did}Known keys: {', '.join(f'{NAMESPACE}:{k}' for k in TOP_LEVEL_KEYS)}.",
            )


def _frozen_group_map(values: Mapping[str, WorkerGroup]) -> Mapping[str, WorkerGroup]:
    return MappingProxyType(dict(sorted(values.items())))
