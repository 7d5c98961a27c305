"""The `mm2:defaults` section: settings, patterns, policy and switches every flow starts from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.topology.model import ReplicationPolicy
from components.topology.objectives import DEFAULT_OUTAGE_BUDGET_SECONDS, DEFAULT_RPO_SECONDS
from components.topology.parse.mm2_settings import parse_patterns, parse_policy, parse_settings
from components.topology.parse.problems import Problems, path
from components.topology.parse.values import as_bool, as_duration, as_instant, as_int, as_mapping, unknown_fields

DEFAULTS_FIELDS = (
    "settings",
    "topics",
    "topicsExclude",
    "groups",
    "groupsExclude",
    "replicationPolicy",
    "tasksMax",
    "exactlyOnce",
    "disasterRecovery",
    "rpo",
    "outageBudget",
    "lossAcknowledged",
)


@dataclass(frozen=True)
class Defaults:
    """The `mm2:defaults` level, parsed once so its problems are reported once."""

    settings: Mapping[str, str]
    lists: Mapping[str, tuple[str, ...] | None]
    policy: ReplicationPolicy
    tasks_max: int | None  # None: derived per flow by connectors.flow_tasks_max
    exactly_once: bool
    disaster_recovery: bool
    # Declared objectives in seconds (`rpo`, `outageBudget`). An invalid value is reported here,
    # once; the flows then start from the project default (the preview fails anyway).
    rpo_seconds: int = DEFAULT_RPO_SECONDS
    outage_budget_seconds: int = DEFAULT_OUTAGE_BUDGET_SECONDS
    # `lossAcknowledged` in ms since the epoch, for flows that declare none; None: none.
    loss_acknowledged_at_ms: int | None = None


def parse_defaults(problems: Problems, raw: Any, now_ms: int | None = None) -> Defaults:
    """The section; `now_ms`, the clock a `lossAcknowledged` may not be ahead of (None: not judged)."""
    where = path("defaults")
    mapping = as_mapping(problems, raw, where) or {}
    unknown_fields(problems, mapping, DEFAULTS_FIELDS, where)
    lists: dict[str, tuple[str, ...] | None] = {}
    for field_name in ("topics", "topicsExclude", "groups", "groupsExclude"):
        if field_name in mapping:
            lists[field_name] = parse_patterns(problems, mapping[field_name], f"{where}.{field_name}")
    return Defaults(
        settings=parse_settings(problems, mapping.get("settings"), f"{where}.settings"),
        lists=lists,
        policy=parse_policy(
            problems, mapping.get("replicationPolicy"), f"{where}.replicationPolicy", ReplicationPolicy()
        ),
        tasks_max=(
            as_int(problems, mapping["tasksMax"], f"{where}.tasksMax", minimum=1) if "tasksMax" in mapping else None
        ),
        exactly_once=bool(as_bool(problems, mapping.get("exactlyOnce", False), f"{where}.exactlyOnce")),
        disaster_recovery=bool(as_bool(problems, mapping.get("disasterRecovery", False), f"{where}.disasterRecovery")),
        rpo_seconds=_duration(problems, mapping, "rpo", where, DEFAULT_RPO_SECONDS),
        outage_budget_seconds=_duration(problems, mapping, "outageBudget", where, DEFAULT_OUTAGE_BUDGET_SECONDS),
        loss_acknowledged_at_ms=(
            as_instant(problems, mapping["lossAcknowledged"], f"{where}.lossAcknowledged", now_ms)
            if "lossAcknowledged" in mapping
            else None
        ),
    )


def _duration(problems: Problems, mapping: Mapping[str, Any], key: str, where: str, default: int) -> int:
    if key not in mapping:
        return default
    return as_duration(problems, mapping[key], f"{where}.{key}") or default
