"""Free-form MM2 settings, topic and group patterns, and the replication policy.

Every level (project default < `mm2:defaults` < cluster < flow) may set these; each level is
validated where it is written, so a problem names the key path the user typed.

Topic and group patterns are Java regexes matched against the whole name. Python's `re` is
close enough to catch typos (unbalanced brackets, dangling quantifiers); the rare constructs
Java accepts and Python rejects, or the reverse, are not worth a JVM at preview time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from components.topology import settings as known
from components.topology.config_provider import is_placeholder
from components.topology.model import (
    DEFAULT_POLICY_CLASS,
    IDENTITY_POLICY_CLASS,
    ROLE_NAMES,
    ConnectorRole,
    PolicyKind,
    ReplicationPolicy,
)
from components.topology.near_miss import near_miss
from components.topology.parse.problems import Problems, quoted
from components.topology.parse.values import as_bool, as_list, as_mapping, as_str, string_map, unknown_fields

# MM2's own defaults, written out because an emitted empty list would replace them.
MM2_TOPICS_EXCLUDE_DEFAULT: tuple[str, ...] = (r".*[\-\.]internal", r".*\.replica", r"__.*")
MM2_GROUPS_EXCLUDE_DEFAULT: tuple[str, ...] = (r"console-consumer-.*", r"connect-.*", r"__.*")
MM2_SETTING_DEFAULTS: dict[str, str] = {
    "replication.policy.internal.topic.separator.enabled": "true",
    "heartbeats.topic.replication.factor": "3",
    "offset-syncs.topic.location": "source",
}
POLICY_FIELDS = ("class", "separator", "preservesNames")
_JAVA_CLASS = re.compile(r"^([A-Za-z_$][\w$]*\.)+[A-Za-z_$][\w$]*$")


@dataclass(frozen=True)
class Level:
    """One level of settings (project < defaults < cluster < flow) and where it came from."""

    values: Mapping[str, str]
    where: str  # key path of the `settings` map


def merge_levels(levels: Sequence[Level]) -> tuple[dict[str, str], dict[str, str]]:
    merged: dict[str, str] = {}
    origin: dict[str, str] = {}
    for level in levels:
        for k, v in level.values.items():
            merged[k] = v
            origin[k] = level.where
    return merged, origin


def parse_settings(problems: Problems, raw: Any, key: str) -> dict[str, str]:
    """Validate one level of free-form MM2 settings."""
    values = string_map(problems, raw, key)
    accepted: dict[str, str] = {}
    for k, v in values.items():
        item = f"{key}{quoted(k)}"
        if k in known.REMOVED_KEYS:
            modern = known.REMOVED_KEYS[k]
            typed = known.SETTINGS_OWNED.get(modern)
            where = f" (in this stack config: {typed})" if typed else ""
            problems.add(item, f'"{k}" was removed in Kafka 4.', f'Use "{modern}" instead{where}.')
            continue
        # A known MM2 key wins over a prefix rule (consumer.poll.timeout.ms is MM2's own).
        reason = (
            None
            if k in known.KNOWN_SETTINGS
            else known.owned_reason(k, known.SETTINGS_OWNED, known.SETTINGS_OWNED_PREFIXES)
        )
        if reason is not None:
            problems.add(
                item,
                f'"{k}" is owned by a typed field and may not be set in settings.',
                f"Remove it; set {reason}.",
            )
            continue
        if known.looks_secret(k) and not is_placeholder(v):
            problems.add(
                item,
                "a secret is given in plain text.",
                "Credentials belong in `clusters.<alias>.security` as {secret: ...} references.",
            )
            continue
        if k not in known.KNOWN_SETTINGS and not _pass_through_ok(problems, k, v, item):
            continue
        if not setting_value_ok(problems, k, v, item):
            continue
        accepted[k] = v.strip()
    return accepted


def _pass_through_ok(problems: Problems, k: str, v: str, item: str) -> bool:
    """A key outside the catalogue passes through to Connect, which checks it at preview.

    Only what needs no connector class to judge is refused here: an empty key, a near miss of a
    catalogue key (a typo: components/topology/near_miss.py), and a `transforms` / `predicates`
    list that is not a comma-separated list of aliases.
    """
    if not k.strip() or k != k.strip():
        problems.add(item, f"setting key {k!r} is empty or has surrounding spaces.", "Write the exact MM2 key.")
        return False
    meant = near_miss(k, known.KNOWN_SETTINGS)
    if meant is not None:
        problems.add(
            item,
            f'"{k}" is not an MM2 setting; it is a slip away from "{meant}".',
            f'Did you mean "{meant}"? Rename the key (left as it is, it would reach Connect only after '
            "the brokers and workers are deployed, and stop the connectors there).",
        )
        return False
    if k in known.TRANSFORM_KEYS:
        aliases = [a.strip() for a in v.split(",")]
        if v.strip() and not all(re.fullmatch(r"[A-Za-z0-9_$-]+", a) for a in aliases):
            problems.add(
                item,
                f'"{k}" must list aliases separated by commas, got {v!r}.',
                f'Name each one (e.g. "dropTest,route") and configure it under "{k}.<alias>.type".',
            )
            return False
    return True


def parse_connector_settings(problems: Problems, raw: Any, key: str) -> dict[ConnectorRole, dict[str, str]]:
    """`flows.<flow>.connectorSettings.<role>`: keys outside the catalogue for one connector.

    Catalogue keys belong in `settings`, which sends each to every connector that reads it (a
    key set on one role only would let source and checkpoint disagree).
    """
    mapping = as_mapping(problems, raw, key)
    if not mapping:
        return {}
    out: dict[ConnectorRole, dict[str, str]] = {}
    for name, values in mapping.items():
        where = f"{key}.{name}"
        if name not in ROLE_NAMES:
            hint = known.suggest(str(name), ROLE_NAMES)
            did = f'Did you mean "{hint}"? ' if hint else ""
            problems.add(where, f"unknown connector role {name!r}.", f"{did}Use one of: {', '.join(ROLE_NAMES)}.")
            continue
        accepted = parse_settings(problems, values, where)
        for k in sorted(set(accepted) & known.KNOWN_SETTINGS):
            problems.add(
                f"{where}{quoted(k)}",
                f'"{k}" is an MM2 setting that goes to every connector reading it, not to one role.',
                "Move it to `settings` (flow, cluster or defaults level); it is routed to the right connectors.",
            )
            accepted.pop(k)
        out[ConnectorRole(name)] = accepted
    return out


def setting_value_ok(problems: Problems, k: str, v: str, item: str) -> bool:
    text = v.strip().lower()
    if k in known.BOOLEAN_SETTINGS and text not in ("true", "false"):
        problems.add(item, f'"{k}" must be true or false, got {v!r}.', "Set it to true or false.")
        return False
    if k in known.INTEGER_SETTINGS and not re.fullmatch(r"-?\d+", text):
        problems.add(item, f'"{k}" must be a whole number, got {v!r}.', "Set it to an integer.")
        return False
    if k in known.ENUM_SETTINGS and text not in known.ENUM_SETTINGS[k]:
        problems.add(
            item,
            f'"{k}" must be one of {", ".join(known.ENUM_SETTINGS[k])}, got {v!r}.',
            f"Use {known.ENUM_SETTINGS[k][0]}.",
        )
        return False
    if k in known.REPLICATION_FACTOR_KEYS and int(text) < 1 and int(text) != -1:
        problems.add(item, f'"{k}" must be at least 1 (or -1 for the broker default).', "Use 1, 2 or 3.")
        return False
    return True


def parse_patterns(problems: Problems, raw: Any, key: str) -> tuple[str, ...] | None:
    items = as_list(problems, raw, key)
    if items is None:
        return None
    for i, pattern in enumerate(items):
        item = f"{key}[{i}]"
        if "," in pattern:
            problems.add(
                item,
                f"pattern {pattern!r} contains a comma; MM2 splits these lists on commas.",
                "Split it into separate list entries, or rewrite {m,n} quantifiers without commas.",
            )
            continue
        try:
            re.compile(pattern)
        except re.error as err:
            problems.add(
                item,
                f"invalid regex {pattern!r}: {err}.",
                r"Fix the Java regex (patterns match the whole topic or group name); escape literal dots as \.",
            )
    return items


def parse_policy(problems: Problems, raw: Any, key: str, base: ReplicationPolicy) -> ReplicationPolicy:
    mapping = as_mapping(problems, raw, key)
    if not mapping:
        return base
    unknown_fields(problems, mapping, POLICY_FIELDS, key)
    policy = base
    if "class" in mapping:
        name = as_str(problems, mapping["class"], f"{key}.class")
        if name is not None:
            lowered = name.lower()
            if lowered in ("default", DEFAULT_POLICY_CLASS.lower()):
                policy = replace(
                    policy, kind=PolicyKind.DEFAULT, class_name=DEFAULT_POLICY_CLASS, preserves_names=False
                )
            elif lowered in ("identity", IDENTITY_POLICY_CLASS.lower()):
                policy = replace(
                    policy, kind=PolicyKind.IDENTITY, class_name=IDENTITY_POLICY_CLASS, preserves_names=True
                )
            elif _JAVA_CLASS.match(name):
                policy = replace(policy, kind=PolicyKind.CUSTOM, class_name=name, preserves_names=False)
            else:
                problems.add(
                    f"{key}.class",
                    f"{name!r} is neither default, identity nor a Java class name.",
                    "Use default, identity, or a fully qualified class such as com.example.MyPolicy.",
                )
    if "separator" in mapping:
        sep = mapping["separator"]
        if isinstance(sep, str) and sep and not re.search(r"[\s,]", sep):
            policy = replace(policy, separator=sep)
        else:
            problems.add(
                f"{key}.separator",
                f"separator {sep!r} must be a non-empty string without spaces or commas.",
                'Use "." (the MM2 default), "_" or "-".',
            )
    if "preservesNames" in mapping:
        preserves = as_bool(problems, mapping["preservesNames"], f"{key}.preservesNames")
        if preserves is not None:
            if policy.kind is PolicyKind.CUSTOM:
                policy = replace(policy, preserves_names=preserves)
            elif preserves != policy.preserves_names:
                problems.add(
                    f"{key}.preservesNames",
                    f"{policy.kind.value} policy {'keeps' if policy.preserves_names else 'renames'} "
                    "topic names; this cannot be changed.",
                    "Remove preservesNames; it only describes custom classes.",
                )
    return policy
