"""Raw config values read as the types the model needs; a value that is not one is a problem.

Input is what Pulumi structured config yields: nested dicts, lists, strings, ints and bools,
with numbers and booleans possibly arriving as strings ("3", "true"). Each reader reports what
is wrong at the key it was given and returns None (or an empty value) so parsing goes on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from components.topology import settings as known
from components.topology.acknowledgement import CLOCK_SKEW_S, InstantError, instant_text, parse_instant, too_late
from components.topology.config_provider import is_placeholder
from components.topology.links import parse_quantity
from components.topology.model import Platform, SecretRef
from components.topology.objectives import parse_duration
from components.topology.parse.problems import Problems, path, quoted

# Cluster aliases and worker group names: usable in MM2 property keys, topic names and group ids.
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_SECRET_KEY = re.compile(r"^[A-Za-z0-9_.-]+$")


def as_mapping(problems: Problems, value: Any, key: str) -> Mapping[str, Any] | None:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return value
    problems.add(
        key,
        f"expected a map, got {type(value).__name__} {value!r}.",
        "Write it as a YAML mapping (key: value lines indented under it).",
    )
    return None


def as_int(problems: Problems, value: Any, key: str, minimum: int = 0, maximum: int | None = None) -> int | None:
    number: int | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        number = int(value)
    if number is None:
        problems.add(
            key, f"expected a whole number, got {value!r}.", f"Set it to an integer such as {max(minimum, 1)}."
        )
        return None
    if number < minimum or (maximum is not None and number > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
        problems.add(key, f"{number} is out of range.", f"Use a value {bound}.")
        return None
    return number


def as_duration(problems: Problems, value: Any, key: str) -> int | None:
    """A positive duration ("30s", "5m", "2h", "7d") in seconds."""
    seconds = parse_duration(value)
    if seconds is None or seconds <= 0:
        problems.add(
            key,
            f"expected a positive duration, got {value!r}.",
            'Write a whole number above 0 and one unit (s, m, h or d), e.g. "30s", "5m", "2h" or "7d".',
        )
        return None
    return seconds


def as_quantity(
    problems: Problems, value: Any, key: str, units: Mapping[str, int], fix: str, zero: bool = False
) -> float | None:
    """A number and one of `units` ("50ms", "200Mbit"; components/topology/links.py) in the base
    unit; above 0, or at least 0 when `zero`."""
    amount = parse_quantity(value, units)
    if amount is None or (amount == 0 and not zero):
        what = "a quantity" if zero else "a positive quantity"
        problems.add(key, f"expected {what} with a unit ({', '.join(units)}), got {value!r}.", fix)
        return None
    return amount


def as_instant(problems: Problems, value: Any, key: str, now_ms: int | None) -> int | None:
    """An ISO-8601 instant with its time zone, in ms since the epoch; one later than `now_ms` by
    more than the clock skew is refused (None: the caller keeps no clock, nothing is refused)."""
    example = instant_text(now_ms - now_ms % 1000) if now_ms is not None else "2026-11-26T10:00:00Z"
    try:
        ms = parse_instant(value)
    except InstantError as exc:
        if not exc.zoned:
            text = value.isoformat() if isinstance(value, datetime) else str(value).strip()
            problems.add(
                key,
                f"{text} has no time zone, so it names no instant.",
                f'Add "Z" for UTC (or an offset such as "+01:00"), quoted: "{text}Z".',
            )
        else:
            problems.add(
                key,
                f"expected an ISO-8601 instant, got {value!r}: {exc}.",
                f'Write the date and time up to which the losses were reviewed, with its zone, e.g. "{example}".',
            )
        return None
    if now_ms is not None and too_late(ms, now_ms):
        problems.add(
            key,
            f"{instant_text(ms)} is in the future (now is {instant_text(now_ms - now_ms % 1000)}, "
            f"{CLOCK_SKEW_S} s of clock skew allowed): it would acknowledge losses that have not happened yet.",
            f'Set it to the time you reviewed the losses `bin/status` lists, at the latest now, e.g. "{example}".',
        )
        return None
    return ms


def as_bool(problems: Problems, value: Any, key: str) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    problems.add(key, f"expected true or false, got {value!r}.", "Set it to true or false.")
    return None


def as_str(problems: Problems, value: Any, key: str) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    problems.add(key, f"expected a non-empty string, got {value!r}.", "Set it to a string.")
    return None


def as_list(problems: Problems, value: Any, key: str) -> tuple[str, ...] | None:
    """A YAML list, or a comma-separated string as mm2.properties writes it."""
    if isinstance(value, str):
        return tuple(item.strip() for item in value.split(",") if item.strip())
    if isinstance(value, Sequence):
        items: list[str] = []
        for i, item in enumerate(value):
            text = as_str(problems, item, f"{key}[{i}]")
            if text is not None:
                items.append(text)
        return tuple(items)
    problems.add(
        key, f"expected a list of patterns, got {value!r}.", 'Write a YAML list, e.g. ["orders", "payments-.*"].'
    )
    return None


def as_secret(problems: Problems, value: Any, key: str, suggested: str) -> SecretRef | None:
    if isinstance(value, Mapping) and set(value) == {"secret"}:
        ref = value["secret"]
        if isinstance(ref, str) and _SECRET_KEY.match(ref):
            return SecretRef(ref)
        problems.add(
            key,
            f"secret key {ref!r} is not usable in a config-provider placeholder.",
            f'Use letters, digits, ".", "_" and "-" only, e.g. {{secret: "{suggested}"}}.',
        )
        return None
    if isinstance(value, str):
        problems.add(
            key,
            "a secret is given in plain text; it would land in connector configs, state and logs.",
            f'Replace it with {{secret: "{suggested}"}} and store the value with '
            f"`pulumi config set --secret --path 'mm2:secrets[\"{suggested}\"]' <value>`.",
        )
        return None
    problems.add(key, f"expected a secret reference, got {value!r}.", f'Write {{secret: "{suggested}"}}.')
    return None


def pair_entries(
    problems: Problems, raw: Any, section: str, ends: Callable[[str, str], tuple[str, str] | None], once: str
) -> list[tuple[str, tuple[str, str], Mapping[str, Any]]]:
    """The entries of a section keyed `<a><-><b>` (`mm2:failover`, `mm2:links`) as (key path, the two
    ends, body): those whose key `ends(key, key path)` accepts (it reports the others) and whose value
    is a map, the first only of two keys naming one pair in either order (`once` says why)."""
    entries: list[tuple[str, tuple[str, str], Mapping[str, Any]]] = []
    seen: dict[frozenset[str], str] = {}
    for key, value in (as_mapping(problems, raw, path(section)) or {}).items():
        where = path(section, str(key))
        sides = ends(str(key), where)
        body = as_mapping(problems, value, where)
        if sides is None or body is None:
            continue
        first = seen.setdefault(frozenset(sides), str(key))
        if first != str(key):
            problems.add(
                where,
                f"{sides[0]} and {sides[1]} are already declared as {first}: {once}",
                f"Keep one of {path(section, first)} and {where}.",
            )
            continue
        entries.append((where, sides, body))
    return entries


def platform_field(problems: Problems, mapping: Mapping[str, Any], where: str) -> tuple[Platform | None, bool]:
    """The optional `platform` field of a cluster or worker group: (value, or None when absent;
    whether it was valid)."""
    if "platform" not in mapping:
        return None, True
    try:
        return Platform(str(mapping["platform"]).strip().lower()), True
    except ValueError:
        problems.add(
            f"{where}.platform",
            f"unknown platform {mapping['platform']!r}.",
            f"Use one of {', '.join(p.value for p in Platform)}.",
        )
        return None, False


def unknown_fields(problems: Problems, raw: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    for field_name in raw:
        if field_name not in allowed:
            hint = known.suggest(str(field_name), allowed)
            did = f'Did you mean "{hint}"? ' if hint else ""
            problems.add(
                f"{where}.{field_name}",
                f'unknown field "{field_name}".',
                f"{did}Known fields: {', '.join(allowed)}.",
            )


def string_map(problems: Problems, raw: Any, key: str) -> dict[str, str]:
    mapping = as_mapping(problems, raw, key)
    out: dict[str, str] = {}
    for k, v in (mapping or {}).items():
        item_key = f"{key}{quoted(str(k))}"
        if isinstance(v, bool):
            out[str(k)] = "true" if v else "false"
        elif isinstance(v, (int, float, str)):
            out[str(k)] = str(v)
        elif isinstance(v, Sequence):
            out[str(k)] = ",".join(str(item) for item in v)
        else:
            problems.add(
                item_key,
                f"expected a string value, got {v!r}.",
                "Free-form config values are strings; secrets belong in `security` as {secret: ...}.",
            )
    return out


def check_secret_literals(problems: Problems, values: Mapping[str, str], key: str) -> None:
    for k, v in values.items():
        if known.looks_secret(k) and not is_placeholder(v):
            problems.add(
                f"{key}{quoted(k)}",
                "a secret is given in plain text in free-form config.",
                "Move credentials to `security` ({secret: ...} references), or reference a "
                "config provider value such as ${file:/etc/mm2/secrets.properties:<key>}.",
            )


def check_owned(
    problems: Problems, values: Mapping[str, str], key: str, owned: dict[str, str], prefixes: dict[str, str]
) -> None:
    for k in values:
        reason = known.owned_reason(k, owned, prefixes)
        if reason is not None:
            problems.add(
                f"{key}{quoted(k)}",
                f'"{k}" is owned by a typed field and may not be set here.',
                f"Remove it; set {reason}.",
            )
