"""Checks across sections, once every cluster, worker group and flow is parsed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from components.topology import settings as known
from components.topology.model import Cluster, Flow, Platform, WorkerGroup
from components.topology.parse.mm2_settings import MM2_SETTING_DEFAULTS
from components.topology.parse.problems import Problems, path, quoted


def check_ports(problems: Problems, clusters: Mapping[str, Cluster], groups: Mapping[str, WorkerGroup]) -> None:
    ranges: list[tuple[str, int, int]] = []
    for cluster in clusters.values():
        if cluster.platform in (Platform.LOCAL, Platform.DOCKER) and cluster.port is not None:
            ranges.append(
                (path("clusters", cluster.alias, "port"), cluster.port, cluster.port + 2 * cluster.brokers - 1)
            )
    for group in groups.values():
        if group.platform in (Platform.LOCAL, Platform.DOCKER) and group.rest_port is not None:
            ranges.append(
                (path("workerGroups", group.name, "restPort"), group.rest_port, group.rest_port + group.workers - 1)
            )
    ranges.sort(key=lambda r: (r[1], r[0]))
    for i, (key_a, start_a, end_a) in enumerate(ranges):
        for key_b, start_b, end_b in ranges[i + 1 :]:
            if start_b <= end_a:
                problems.add(
                    key_b,
                    f"ports {start_b}..{end_b} overlap {key_a} ({start_a}..{end_a}).",
                    f"Move it to {end_a + 1} or higher (clusters use 2 ports per broker, worker groups 1 per worker).",
                )


def check_shared_target(problems: Problems, flows: Sequence[Flow]) -> None:
    by_target: dict[str, list[Flow]] = {}
    for flow in flows:
        if flow.enabled:
            by_target.setdefault(flow.target, []).append(flow)
    for target, members in sorted(by_target.items()):
        members.sort(key=lambda f: f.source)
        for key in known.TARGET_SHARED:
            first = members[0]
            for other in members[1:]:
                a, b = shared_value(first, key), shared_value(other, key)
                if a != b:
                    problems.add(
                        path("flows", other.name, field_for_shared(key)),
                        f"flows {first.name} and {other.name} share target {target} "
                        f"but set {key} to {a!r} and {b!r}; MM2 shares this through the target "
                        "cluster, so the result depends on which connector wins.",
                        f"Set {key} the same on every flow into {target} (e.g. once under mm2:defaults).",
                    )


def shared_value(flow: Flow, key: str) -> str:
    if key == "replication.policy.class":
        return flow.replication_policy.class_name
    if key == "replication.policy.separator":
        return flow.replication_policy.separator
    return flow.settings.get(key, MM2_SETTING_DEFAULTS.get(key, ""))


def field_for_shared(key: str) -> str:
    if key == "replication.policy.class":
        return "replicationPolicy.class"
    if key == "replication.policy.separator":
        return "replicationPolicy.separator"
    return f"settings{quoted(key)}"
