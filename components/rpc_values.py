"""What the Pulumi engine hands a dynamic provider, made plain.

Every dynamic provider of the stack (connectors, local processes, topics, ACLs, SCRAM users,
credentials) receives its inputs as engine values: secrets may arrive wrapped, and during a
preview an input that depends on an unresolved output arrives as an *unknown*. The engine
normally unwraps secrets before a dynamic provider sees them, but does not promise it, so
every provider reads its inputs through `plain` and asks `is_unknown` / `has_unknown` before
comparing. One helper, so the rule lives in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi.output import Unknown
from pulumi.runtime import rpc


class Refused(ValueError):
    """A dynamic provider's refusal of a change at its diff (so at preview): the message names the
    key, what would happen and the fix. The project's provider host shows the message alone,
    without the traceback a provider's failure gets."""

    refusal = True


def plain(value: Any) -> Any:
    """`value` with Pulumi's secret wrappers removed at any depth."""
    value = rpc.unwrap_rpc_secret(value)
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def plain_map(value: Any) -> dict[str, Any]:
    """`plain(value)` as a dict with string keys; anything but a mapping reads as empty."""
    value = plain(value)
    if not isinstance(value, Mapping):
        return {}
    return {str(k): v for k, v in value.items()}


def is_unknown(value: Any) -> bool:
    """True for a value the engine does not know yet (a preview of a not-yet-created input)."""
    return isinstance(value, Unknown) or (isinstance(value, str) and value == rpc.UNKNOWN)


def has_unknown(value: Any) -> bool:
    """True when `value`, or anything inside it, is unknown."""
    value = plain(value)
    if is_unknown(value):
        return True
    if isinstance(value, Mapping):
        return any(has_unknown(v) for v in value.values())
    if isinstance(value, list):
        return any(has_unknown(v) for v in value)
    return False


def map_diff(prop: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, str]:
    """{property path: "add" | "update" | "delete"} for the keys of map property `prop` that
    differ, e.g. {'config["tasks.max"]': "update"}; an unknown new value counts as changed."""
    changes: dict[str, str] = {}
    for key in sorted(old.keys() | new.keys()):
        path = f"{prop}[{_quote_key(str(key))}]"
        if key not in new:
            changes[path] = "delete"
        elif key not in old:
            changes[path] = "add"
        elif is_unknown(new[key]) or old[key] != new[key]:
            changes[path] = "update"
    return changes


def _quote_key(key: str) -> str:
    # Pulumi property paths quote keys that are not plain identifiers: config["tasks.max"].
    return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'
