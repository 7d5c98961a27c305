"""How a Connector's old and new properties differ: the pure diff and its normalisation.

A changed config key is an in-place update; only a changed connector name or Connect endpoint
replaces. No pulumi calls and no I/O: `ConnectorDiff` is only the SDK's result type.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi.dynamic import DiffResult
from pulumi.output import Unknown

from components.review.blast_radius import connector_impacts
from components.rpc_values import has_unknown, is_unknown, map_diff, plain

from .inputs import DEFAULT_TIMEOUT_S, normalize_state

__all__ = ["ConnectorDiff", "connector_diff", "same_config"]

# The properties whose change means another connector, not a changed one.
_REPLACE_KEYS = ("connect_url", "name")


class ConnectorDiff(DiffResult):
    """DiffResult plus what exactly changed.

    pulumi 3.272.0's DiffResult has no `diffs` or `detailed_diff`, and its dynamic-provider
    server forwards only changes, replaces and delete_before_replace to the engine. The
    project's dynamic-provider host (toolchain/pulumi/python/dynamic_provider_host.py) passes
    on `detailed_diff` (property paths like config["tasks.max"] -> add/update/delete) as the
    engine's detailed diff and `impacts` ([(severity, text)]: the blast radius) as diagnostics
    of the resource. Under Pulumi's own host they are ignored and the CLI diffs old and new
    inputs itself (hence read() returns the live config as inputs too).
    """

    def __init__(
        self,
        *,
        replaces: list[str],
        diffs: list[str],
        detailed_diff: dict[str, str],
        impacts: list[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(
            changes=bool(diffs),
            replaces=replaces,
            stables=[],
            # Two MM2 connectors under different names (or one on each endpoint of the same
            # group) would replicate the same topics twice; remove the old one first.
            delete_before_replace=bool(replaces) or None,
        )
        self.diffs = diffs
        self.detailed_diff = detailed_diff
        self.impacts = impacts or []


def connector_diff(olds: Mapping[str, Any], news: Mapping[str, Any]) -> ConnectorDiff:
    """What changed between the recorded properties (olds) and the program's (news)."""
    detailed: dict[str, str] = {}
    replaces: list[str] = []
    for key in _REPLACE_KEYS:
        new = news.get(key)
        if is_unknown(new):
            # Most likely unchanged (an endpoint computed from a resource being updated);
            # the diff during `up` sees the real value and replaces then if it must.
            detailed[key] = "update"
        elif _normalized(key, olds.get(key)) != _normalized(key, new):
            detailed[key] = "update"
            replaces.append(key)

    old_name = str(plain(olds.get("name")) or "")
    new_name = old_name if is_unknown(news.get("name")) else str(plain(news.get("name")) or "")
    detailed.update(
        _config_diff(
            _comparable_config(olds.get("config"), old_name),
            _comparable_config(news.get("config"), new_name),
        )
    )
    if plain(olds.get("auth")) != plain(news.get("auth")) or is_unknown(news.get("auth")):
        detailed["auth"] = "update"
    old_timeout = plain(olds.get("timeout_seconds")) or DEFAULT_TIMEOUT_S
    new_timeout = plain(news.get("timeout_seconds")) or DEFAULT_TIMEOUT_S
    if is_unknown(new_timeout) or float(old_timeout) != float(new_timeout):
        detailed["timeout_seconds"] = "update"
    for key, normalize in (("desired_state", normalize_state), ("ca_pem", lambda v: plain(v) or None)):
        if is_unknown(news.get(key)) or normalize(olds.get(key)) != normalize(news.get(key)):
            detailed[key] = "update"

    diffs = sorted({path.split("[", 1)[0] for path in detailed})
    impacts = _impacts(olds, news, detailed, replaces, old_name, new_name)
    return ConnectorDiff(replaces=replaces, diffs=diffs, detailed_diff=detailed, impacts=impacts)


def _impacts(
    olds: Mapping[str, Any],
    news: Mapping[str, Any],
    detailed: Mapping[str, str],
    replaces: list[str],
    old_name: str,
    new_name: str,
) -> list[tuple[str, str]]:
    """The blast radius of this diff, as (severity, text) pairs."""
    if not detailed:
        return []
    old_config, new_config = (
        _comparable_config(olds.get("config"), old_name),
        _comparable_config(news.get("config"), new_name),
    )
    tasks = plain(olds.get("tasks"))
    return [
        impact.as_pair()
        for impact in connector_impacts(
            new_name or old_name,
            {} if isinstance(old_config, Unknown) else old_config,
            {} if isinstance(new_config, Unknown) else new_config,
            detailed,
            old_state=normalize_state(olds.get("desired_state")),
            new_state="?" if is_unknown(news.get("desired_state")) else normalize_state(news.get("desired_state")),
            replaced=bool(replaces),
            tasks=len(tasks) if isinstance(tasks, list) else None,
        )
    ]


def same_config(olds: Mapping[str, Any], news: Mapping[str, Any]) -> bool:
    """True when an existing connector's config and endpoint are unchanged: nothing to validate
    or PUT again. False for a new connector (no olds) or anything unknown."""
    if not olds or not olds.get("config"):
        return False
    if is_unknown(news.get("connect_url")) or _normalized("connect_url", olds.get("connect_url")) != _normalized(
        "connect_url", news.get("connect_url")
    ):
        return False
    name = str(plain(olds.get("name")) or "")
    old = _comparable_config(olds.get("config"), name)
    new = _comparable_config(news.get("config"), name)
    return not isinstance(new, Unknown) and not has_unknown(new) and old == new


def _normalized(key: str, value: Any) -> Any:
    value = plain(value)
    if key == "connect_url" and isinstance(value, str):
        return value.rstrip("/")
    return value


def _comparable_config(config: Any, name: str) -> Mapping[str, Any] | Unknown:
    """Config as a string map; a "name" key equal to the connector name is what Connect adds."""
    config = plain(config)
    if is_unknown(config):
        return Unknown()
    if not isinstance(config, Mapping):
        return {}
    return {str(k): (v if is_unknown(v) else str(v)) for k, v in config.items() if not (k == "name" and v == name)}


def _config_diff(old: Mapping[str, Any] | Unknown, new: Mapping[str, Any] | Unknown) -> dict[str, str]:
    if isinstance(old, Unknown) or isinstance(new, Unknown):
        return {"config": "update"}
    return map_diff("config", old, new)
