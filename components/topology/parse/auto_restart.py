"""`mm2:flows.<flow>.autoRestart`: which connector roles the watcher restarts when they FAIL.

    autoRestart: {enabled: true, maxRestarts: 5}                  # every role of the flow
    autoRestart: {enabled: true, heartbeat: {enabled: false},     # per role, on top of the flow's
                  source: {maxRestarts: 3}}

Like Strimzi's `autoRestart` on each connector of a KafkaMirrorMaker2. The watcher runs only
where the stack runs the worker group (local, kubernetes); anywhere else it is a problem here,
at preview, rather than a restart that silently never happens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.topology.model import ROLE_NAMES, WATCHER_PLATFORMS, AutoRestart, ConnectorRole, WorkerGroup
from components.topology.parse.problems import Problems
from components.topology.parse.values import as_bool, as_int, as_mapping

_FIELDS = ("enabled", "maxRestarts")


def parse_auto_restart(
    problems: Problems, raw: Any, where: str, group: WorkerGroup | None
) -> dict[ConnectorRole, AutoRestart] | None:
    """The enabled roles and their policy; None when the value has a problem."""
    if raw is None:
        return {}
    mapping = as_mapping(problems, raw, where)
    if mapping is None:
        return None
    found = len(problems.found)
    for key in mapping:
        if key not in _FIELDS + ROLE_NAMES:
            problems.add(
                f"{where}.{key}",
                f"unknown autoRestart key {key!r}.",
                f"Use enabled, maxRestarts, or a role ({', '.join(ROLE_NAMES)}) holding those two.",
            )
    flow_level = _policy(problems, mapping, where, AutoRestart())
    policies: dict[ConnectorRole, AutoRestart] = {}
    for role in ConnectorRole:
        own = mapping.get(role.value)
        policy = flow_level
        if own is not None:
            role_map = as_mapping(problems, own, f"{where}.{role.value}")
            for key in role_map or {}:
                if key not in _FIELDS:
                    problems.add(
                        f"{where}.{role.value}.{key}",
                        f"unknown autoRestart key {key!r}.",
                        "Use enabled or maxRestarts.",
                    )
            # Checked even when the flow level has a problem, so every bad key is named at once.
            policy = _policy(problems, role_map or {}, f"{where}.{role.value}", flow_level or AutoRestart())
        if policy is not None and policy.enabled:
            policies[role] = policy
    if len(problems.found) > found:
        return None
    if policies and group is not None and group.platform not in WATCHER_PLATFORMS:
        problems.add(
            where,
            f"worker group {group.name!r} runs on platform {group.platform.value}, where the stack runs no "
            "auto-restart watcher.",
            "Remove autoRestart and run `bin/watcher --stack <stack>` next to that worker group yourself "
            "(docs/day2-operations.md), or run the worker group on a platform the stack deploys a watcher "
            "for (local, kubernetes).",
        )
        return None
    return policies


def _policy(problems: Problems, mapping: Mapping[str, Any], where: str, base: AutoRestart) -> AutoRestart | None:
    enabled = as_bool(problems, mapping["enabled"], f"{where}.enabled") if "enabled" in mapping else base.enabled
    limit = base.max_restarts
    if "maxRestarts" in mapping:
        limit = as_int(problems, mapping["maxRestarts"], f"{where}.maxRestarts", minimum=1)
    if enabled is None or ("maxRestarts" in mapping and limit is None):
        return None
    return AutoRestart(enabled=enabled, max_restarts=limit)
