"""`mm2:flows.<source>-><target>`: what one flow replicates, on which worker group, with which settings.

A flow is checked against the sections parsed before it (defaults, clusters, worker groups),
so its problems can name the cluster or group it refers to.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from components.topology import settings as known
from components.topology.model import (
    ROLE_NAMES,
    Cluster,
    ConnectorRole,
    ConnectorState,
    Flow,
    Platform,
    WorkerGroup,
    frozen_map,
)
from components.topology.parse.auto_restart import parse_auto_restart
from components.topology.parse.defaults import Defaults
from components.topology.parse.links import parse_peak_rate
from components.topology.parse.mm2_settings import (
    MM2_GROUPS_EXCLUDE_DEFAULT,
    MM2_TOPICS_EXCLUDE_DEFAULT,
    Level,
    merge_levels,
    parse_connector_settings,
    parse_patterns,
    parse_policy,
    parse_settings,
)
from components.topology.parse.problems import Problems, path, quoted
from components.topology.parse.values import (
    as_bool,
    as_duration,
    as_instant,
    as_int,
    as_mapping,
    as_str,
    unknown_fields,
)

FLOW_FIELDS = (
    "enabled",
    "workerGroup",
    "topics",
    "topicsExclude",
    "groups",
    "groupsExclude",
    "replicationPolicy",
    "disasterRecovery",
    "settings",
    "tasksMax",
    "exactlyOnce",
    "state",
    "connectorStates",
    "autoRestart",
    "reverseHeartbeats",
    "connectorSettings",
    "rpo",
    "outageBudget",
    "lossAcknowledged",
    "peakRate",
)
# Roles as `connectorStates` keys spell them (raw config keys are plain strings).
_FILTER_FALLBACKS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("topics", (".*",)),
    ("topicsExclude", MM2_TOPICS_EXCLUDE_DEFAULT),
    ("groups", (".*",)),
    ("groupsExclude", MM2_GROUPS_EXCLUDE_DEFAULT),
)


@dataclass(frozen=True)
class Declared:
    """What the sections before `flows` produced; every flow is checked against it."""

    defaults: Defaults
    clusters: Mapping[str, Cluster]  # the clusters that parsed
    cluster_aliases: set[str]  # every alias under mm2:clusters, parsed or not
    groups: Mapping[str, WorkerGroup]
    group_names: set[str]  # every name under mm2:workerGroups, parsed or not
    now_ms: int | None = None  # the clock a `lossAcknowledged` may not be ahead of (None: not judged)


@dataclass(frozen=True)
class _Switches:
    enabled: bool | None
    disaster_recovery: bool | None
    exactly_once: bool | None
    tasks_max: int | None


def parse_flow(problems: Problems, flow_key: str, raw: Any, declared: Declared, seen: dict[str, str]) -> Flow | None:
    """One flow; `seen` maps each `source->target` parsed so far to the key it was written as."""
    where = path("flows", flow_key)
    endpoints = _endpoints(problems, flow_key, where, declared.cluster_aliases, seen)
    if endpoints is None:
        return None
    source, target, ok = endpoints
    mapping = as_mapping(problems, raw, where)
    if mapping is None:
        return None
    unknown_fields(problems, mapping, FLOW_FIELDS, where)
    defaults = declared.defaults
    switches = _switches(problems, mapping, where, defaults)
    lists = _filters(problems, mapping, where, defaults)
    policy = parse_policy(problems, mapping.get("replicationPolicy"), f"{where}.replicationPolicy", defaults.policy)
    states = parse_connector_states(problems, mapping, where)
    group_name, group_ok = _worker_group(problems, mapping, where, target, declared)
    merged = _merged_settings(problems, mapping, where, source, target, switches, declared)
    auto_restart = parse_auto_restart(
        problems, mapping.get("autoRestart"), f"{where}.autoRestart", declared.groups.get(group_name or "")
    )
    reverse = _reverse_heartbeats(problems, mapping, where, source, merged, declared, group_name)
    role_settings = parse_connector_settings(problems, mapping.get("connectorSettings"), f"{where}.connectorSettings")
    objectives = _objectives(problems, mapping, where, defaults)
    acknowledged, acknowledged_ok = _loss_acknowledged(problems, mapping, where, declared)
    peak_rate, peak_rate_ok = parse_peak_rate(problems, mapping, where)
    if switches.exactly_once:
        exactly_once_problems(problems, where, merged, declared.clusters.get(target))
    if (
        not (ok and group_ok)
        or switches.enabled is None
        or switches.disaster_recovery is None
        or switches.exactly_once is None
        or group_name is None
        or states is None
        or auto_restart is None
        or objectives is None
        or not acknowledged_ok
        or not peak_rate_ok
        or any(v is None for v in lists.values())
    ):
        return None
    return Flow(
        source=source,
        target=target,
        enabled=switches.enabled,
        worker_group=group_name,
        topics=lists["topics"] or (),
        topics_exclude=lists["topicsExclude"] or (),
        groups=lists["groups"] or (),
        groups_exclude=lists["groupsExclude"] or (),
        replication_policy=policy,
        disaster_recovery=switches.disaster_recovery,
        settings=frozen_map(merged),
        tasks_max=switches.tasks_max,
        exactly_once=switches.exactly_once,
        connector_states=MappingProxyType(states),
        auto_restart=MappingProxyType(auto_restart),
        reverse_heartbeats=reverse,
        role_settings=MappingProxyType({role: frozen_map(v) for role, v in role_settings.items()}),
        rpo_seconds=objectives[0],
        outage_budget_seconds=objectives[1],
        loss_acknowledged_at_ms=acknowledged,
        peak_rate_bps=peak_rate,
    )


def _objectives(
    problems: Problems, mapping: Mapping[str, Any], where: str, defaults: Defaults
) -> tuple[int, int] | None:
    """(rpo, outage budget) in seconds: the flow's, else the defaults'; None when one is invalid."""
    rpo = as_duration(problems, mapping["rpo"], f"{where}.rpo") if "rpo" in mapping else defaults.rpo_seconds
    budget = (
        as_duration(problems, mapping["outageBudget"], f"{where}.outageBudget")
        if "outageBudget" in mapping
        else defaults.outage_budget_seconds
    )
    if rpo is None or budget is None:
        return None
    return rpo, budget


def _loss_acknowledged(
    problems: Problems, mapping: Mapping[str, Any], where: str, declared: Declared
) -> tuple[int | None, bool]:
    """(the flow's `lossAcknowledged` in ms, else the defaults'; whether it was valid). The flow's
    own value replaces the defaults' whole, as every key of the flow does, earlier or not."""
    if "lossAcknowledged" not in mapping:
        return declared.defaults.loss_acknowledged_at_ms, True
    ms = as_instant(problems, mapping["lossAcknowledged"], f"{where}.lossAcknowledged", declared.now_ms)
    return ms, ms is not None


def _endpoints(
    problems: Problems, flow_key: str, where: str, declared: set[str], seen: dict[str, str]
) -> tuple[str, str, bool] | None:
    """(source alias, target alias, whether both are usable); None when the key is unusable."""
    parts = flow_key.split("->")
    if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
        problems.add(
            where,
            f'flow key "{flow_key}" is not of the form "source->target".',
            'Name each flow "<source alias>-><target alias>", e.g. "primary->dr".',
        )
        return None
    source, target = parts[0].strip(), parts[1].strip()
    name = f"{source}->{target}"
    if name in seen:
        problems.add(
            where,
            f'duplicate flow {name} (also declared as "{seen[name]}").',
            "Keep one entry per source->target pair.",
        )
        return None
    seen[name] = flow_key
    ok = True
    if source == target:
        problems.add(
            where,
            f'flow "{flow_key}" replicates cluster {source} into itself.',
            "Use two different clusters; MM2 replicates between clusters.",
        )
        ok = False
    for side, alias in (("source", source), ("target", target)):
        if alias not in declared:
            hint = known.suggest(alias, declared)
            did = f'Did you mean "{hint}"? ' if hint else ""
            problems.add(
                where,
                f'{side} cluster "{alias}" is not defined under mm2:clusters.',
                f"{did}Define it, or use one of: {', '.join(sorted(declared)) or '(none)'}.",
            )
            ok = False
    return source, target, ok


def _switches(problems: Problems, mapping: Mapping[str, Any], where: str, defaults: Defaults) -> _Switches:
    enabled = as_bool(problems, mapping.get("enabled", True), f"{where}.enabled")
    disaster_recovery = (
        as_bool(problems, mapping["disasterRecovery"], f"{where}.disasterRecovery")
        if "disasterRecovery" in mapping
        else defaults.disaster_recovery
    )
    exactly_once = (
        as_bool(problems, mapping["exactlyOnce"], f"{where}.exactlyOnce")
        if "exactlyOnce" in mapping
        else defaults.exactly_once
    )
    tasks_max = (
        as_int(problems, mapping["tasksMax"], f"{where}.tasksMax", minimum=1)
        if "tasksMax" in mapping
        else defaults.tasks_max
    )
    return _Switches(enabled, disaster_recovery, exactly_once, tasks_max)


def _filters(
    problems: Problems, mapping: Mapping[str, Any], where: str, defaults: Defaults
) -> dict[str, tuple[str, ...] | None]:
    """Topic and group include/exclude patterns: the flow's, else the defaults', else MM2's."""
    lists: dict[str, tuple[str, ...] | None] = {}
    for field_name, fallback in _FILTER_FALLBACKS:
        if field_name in mapping:
            lists[field_name] = parse_patterns(problems, mapping[field_name], f"{where}.{field_name}")
        elif field_name in defaults.lists:
            lists[field_name] = defaults.lists[field_name]
        else:
            lists[field_name] = fallback
    if lists["topics"] == ():
        problems.add(
            f"{where}.topics",
            "an empty topic list replicates nothing.",
            'List topic patterns, or remove the key to replicate ".*".',
        )
    return lists


def _worker_group(
    problems: Problems, mapping: Mapping[str, Any], where: str, target: str, declared: Declared
) -> tuple[str | None, bool]:
    """The flow's worker group: explicit, else the only group on the target, else the only group."""
    declared_groups = declared.group_names
    if "workerGroup" in mapping:
        group_name = as_str(problems, mapping["workerGroup"], f"{where}.workerGroup")
        if group_name is not None and group_name not in declared_groups:
            hint = known.suggest(group_name, declared_groups)
            did = f'Did you mean "{hint}"? ' if hint else ""
            problems.add(
                f"{where}.workerGroup",
                f'unknown worker group "{group_name}".',
                f"{did}Define it under mm2:workerGroups, or use one of: "
                f"{', '.join(sorted(declared_groups)) or '(none)'}.",
            )
            return group_name, False
        return group_name, True
    on_target = sorted(g.name for g in declared.groups.values() if g.cluster == target)
    if len(on_target) == 1:
        return on_target[0], True
    if len(declared_groups) == 1:
        return next(iter(declared_groups)), True
    problems.add(
        f"{where}.workerGroup",
        "no worker group is given and none can be inferred.",
        f"Set workerGroup to one of: {', '.join(sorted(declared_groups)) or '(define one under mm2:workerGroups)'}.",
    )
    return None, False


def _merged_settings(
    problems: Problems,
    mapping: Mapping[str, Any],
    where: str,
    source: str,
    target: str,
    switches: _Switches,
    declared: Declared,
) -> dict[str, str]:
    """Project default < defaults < source cluster < flow settings, checked against both clusters."""
    clusters = declared.clusters
    levels = [
        Level(declared.defaults.settings, path("defaults", "settings")),
        Level(clusters[source].settings if source in clusters else {}, path("clusters", source, "settings")),
        Level(parse_settings(problems, mapping.get("settings"), f"{where}.settings"), f"{where}.settings"),
    ]
    if source in clusters and target in clusters:
        derived = derived_settings(clusters[source], clusters[target], bool(switches.disaster_recovery))
        merged, origin = merge_levels([Level(derived, "(project default)"), *levels])
        check_flow_settings(problems, merged, origin, clusters[source], clusters[target], where)
    else:
        merged, origin = merge_levels(levels)
    if switches.exactly_once and source in clusters:
        iso = clusters[source].client.get("consumer.isolation.level")
        if iso is not None and iso != "read_committed":
            problems.add(
                path("clusters", source, "client") + quoted("consumer.isolation.level"),
                f"exactly-once flow {source}->{target} needs read_committed on its source consumer, got {iso!r}.",
                "Remove the override (exactlyOnce sets read_committed) or set exactlyOnce: false.",
            )
    return merged


def exactly_once_problems(problems: Problems, where: str, merged: Mapping[str, str], target: Cluster | None) -> None:
    """Settings that make an exactly-once flow impossible: its source connector's producer
    writes records and offsets in one transaction, which needs idempotence and acks=all."""
    idempotence = merged.get("producer.override.enable.idempotence", "true").lower()
    if idempotence == "false":
        problems.add(
            f"{where}.settings" + quoted("producer.override.enable.idempotence"),
            "an exactly-once flow writes through a transactional producer, which needs idempotence; this turns it off.",
            "Remove the key (exactlyOnce needs the default, true) or set exactlyOnce: false.",
        )
    client = dict(target.client) if target is not None else {}
    for key, bad, need in (
        ("producer.enable.idempotence", ("false",), "true"),
        ("producer.acks", ("0", "1"), "all"),
    ):
        value = client.get(key, "").strip().lower()
        if value in bad:
            problems.add(
                path("clusters", target.alias if target else "?", "client") + quoted(key),
                f"exactly-once flow {where.rsplit('.', 1)[-1]} writes to this cluster transactionally, "
                f"which needs {key.split('.', 1)[1]}={need}; got {value!r}.",
                f"Remove the override (or set {need}), or set exactlyOnce: false on the flow.",
            )


def parse_connector_states(
    problems: Problems, mapping: Mapping[str, Any], where: str
) -> dict[ConnectorRole, ConnectorState] | None:
    """`state` for the whole flow, `connectorStates` per role on top; only non-running kept."""
    ok = True

    def one(value: Any, key: str) -> ConnectorState | None:
        nonlocal ok
        text = value.strip().lower() if isinstance(value, str) else None
        try:
            return ConnectorState(text)
        except ValueError:
            ok = False
            problems.add(
                key,
                f"connector state {value!r} is not one of running, paused, stopped.",
                "Use running (copy), paused (keep tasks, stop copying) or stopped "
                "(release tasks, keep offsets); remove the key to run.",
            )
            return None

    flow_state = one(mapping["state"], f"{where}.state") if "state" in mapping else ConnectorState.RUNNING
    states = dict.fromkeys(ConnectorRole, flow_state or ConnectorState.RUNNING)
    raw = mapping.get("connectorStates")
    if raw is not None:
        per_role = as_mapping(problems, raw, f"{where}.connectorStates")
        if per_role is None:
            return None
        for role, value in per_role.items():
            if role not in ROLE_NAMES:
                ok = False
                problems.add(
                    f"{where}.connectorStates.{role}",
                    f"unknown connector role {role!r}.",
                    f"Use one of: {', '.join(ROLE_NAMES)}.",
                )
                continue
            state = one(value, f"{where}.connectorStates.{role}")
            if state is not None:
                states[ConnectorRole(role)] = state
    if not ok:
        return None
    return {role: state for role, state in states.items() if state is not ConnectorState.RUNNING}


def derived_settings(source: Cluster, target: Cluster, disaster_recovery: bool) -> dict[str, str]:
    """Project defaults: replication factors sized to the cluster each topic lives on.

    MM2's own defaults (2 for remote topics, 3 for its internal topics) fail topic creation on
    small clusters; production clusters with three or more brokers still get 3. The
    offset-syncs factor is sized later, once `offset-syncs.topic.location` is known.
    """
    values = {
        "replication.factor": str(min(3, target.brokers)),
        "checkpoints.topic.replication.factor": str(min(3, target.brokers)),
        "heartbeats.topic.replication.factor": str(min(3, target.brokers)),
        "offset-syncs.topic.replication.factor": str(min(3, source.brokers)),
    }
    if disaster_recovery:
        # Consumers fail over without code changes: translated offsets land in the target's
        # __consumer_offsets for groups that are not active there.
        values["sync.group.offsets.enabled"] = "true"
    return values


def check_flow_settings(
    problems: Problems, merged: dict[str, str], origin: dict[str, str], source: Cluster, target: Cluster, where: str
) -> None:
    location = merged.get("offset-syncs.topic.location", "source")
    if location == "target" and origin.get("offset-syncs.topic.replication.factor") == "(project default)":
        merged["offset-syncs.topic.replication.factor"] = str(min(3, target.brokers))
    homes = {
        "replication.factor": target,
        "checkpoints.topic.replication.factor": target,
        "heartbeats.topic.replication.factor": target,
        "offset-syncs.topic.replication.factor": target if location == "target" else source,
    }
    for key, home in homes.items():
        value = merged.get(key)
        if value is None or not re.fullmatch(r"-?\d+", value):
            continue
        if int(value) > home.brokers:
            problems.add(
                origin[key] + quoted(key) if origin[key] != "(project default)" else where,
                f"{key}={value} is above the {home.brokers} broker(s) of cluster {home.alias}, where that topic lives.",
                f"Use at most {home.brokers} (MM2 would fail to create the topic), or add brokers.",
            )
    for key, reason in (
        ("emit.checkpoints.enabled", "the checkpoint connector refuses to start without checkpoints"),
        ("emit.offset-syncs.enabled", "the checkpoint connector cannot translate offsets without offset syncs"),
    ):
        if merged.get(key, "true").lower() == "false":
            problems.add(
                origin[key] + quoted(key),
                f"{key}=false: {reason}.",
                "Remove it; to stop writing consumer offsets on the target set sync.group.offsets.enabled=false.",
            )


def _reverse_heartbeats(
    problems: Problems,
    mapping: Mapping[str, Any],
    where: str,
    source: str,
    merged: Mapping[str, str] | None,
    declared: Declared,
    group_name: str | None,
) -> bool:
    """`reverseHeartbeats: true`: only when the connector has a way to write `heartbeats` on the
    source cluster (its producer writes there as the source's MM2 user)."""
    key = f"{where}.reverseHeartbeats"
    if not as_bool(problems, mapping.get("reverseHeartbeats", False), key):
        return False
    if merged is not None and str(merged.get("emit.heartbeats.enabled", "true")).lower() == "false":
        problems.add(
            key,
            "reverse heartbeats are on, but emit.heartbeats.enabled is false for this flow: no heartbeat is written.",
            "Remove reverseHeartbeats, or remove emit.heartbeats.enabled: false from the flow's settings.",
        )
    cluster = declared.clusters.get(source)
    if cluster is not None and cluster.platform is Platform.EXTERNAL and cluster.security.protocol.uses_sasl:
        problems.add(
            key,
            f"the reverse heartbeat connector writes the topic heartbeats on the source cluster {source} as "
            f"{cluster.security.username!r}, but {source} is external: the stack creates no ACLs there, "
            "so it cannot give that user WRITE and CREATE on heartbeats.",
            f"Remove reverseHeartbeats, or run {source} on a platform the stack manages (local).",
        )
    group = declared.groups.get(group_name or "")
    policy = (group.worker_config.get("connector.client.config.override.policy", "All") if group else "All").lower()
    if policy == "none":
        problems.add(
            key,
            f"the reverse heartbeat connector needs producer.override.* to write into {source}, "
            "but its worker group sets connector.client.config.override.policy: None.",
            "Remove reverseHeartbeats, or remove that workerConfig setting (Connect's default, All, allows it).",
        )
    return True
