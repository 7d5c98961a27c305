"""How a local process's old and new properties differ, with property paths and blast radius.

No I/O and no pulumi calls: `ProcessDiff` is only the SDK's result type, which the project's
dynamic-provider host passes on as the engine's detailed diff (`detailed_diff`) and as
diagnostics of the resource (`impacts`), see toolchain/pulumi/python/dynamic_provider_host.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi.dynamic import DiffResult

from components.review.blast_radius import process_impacts
from components.rpc_values import is_unknown, map_diff, plain
from components.topology.model import RestartMode

__all__ = ["ProcessDiff", "group_size", "process_diff"]

# Secret inputs: a path inside them would name what changed in a secret; the key alone is enough.
_OPAQUE_KEYS = ("ready", "secret_files")


class ProcessDiff(DiffResult):
    """DiffResult plus the changed property paths and what the change does to replication."""

    def __init__(self, *, replaces: list[str], detailed_diff: dict[str, str], impacts: list[tuple[str, str]]) -> None:
        super().__init__(
            changes=bool(detailed_diff),
            replaces=replaces,
            stables=["marker"] if not replaces else [],
            delete_before_replace=True,  # the replacement needs the same ports
        )
        self.detailed_diff = detailed_diff
        self.impacts = impacts


def process_diff(
    olds: Mapping[str, Any],
    news: Mapping[str, Any],
    *,
    restart_keys: tuple[str, ...],
    replace_keys: tuple[str, ...],
    peers: int,
) -> ProcessDiff:
    """What changed; `peers` is how many processes the cluster or worker group runs. The keys
    are the provider's (components/platform/local/provider.py): what restarts, what replaces."""
    olds, news = plain(olds), plain(news)
    # Absent and empty are the same (state written before an input existed).
    replaces = [k for k in replace_keys if (olds.get(k) or None) != (news.get(k) or None)]
    detailed: dict[str, str] = {}
    for key in restart_keys + replace_keys:
        old, new = olds.get(key) or None, news.get(key) or None
        if old == new:
            continue
        if isinstance(old, Mapping) and isinstance(new, Mapping) and key not in _OPAQUE_KEYS:
            detailed.update(map_diff(key, old, new) or {key: "update"})
        else:
            detailed[key] = "update"
    found_dead = olds.get("running") is False
    rolling = news.get("rolling")  # set by the platform when the group rolls (platform/local/rolling.py)
    if found_dead:
        detailed["running"] = "update"  # found dead by refresh: restart it
    impacts = (
        process_impacts(
            str(news.get("component") or olds.get("component") or "process"),
            detailed,
            replaced=bool(replaces),
            group_size=int(rolling["processes"]) if rolling else peers,
            mode=RestartMode.ROLLING if rolling else RestartMode.ALL_AT_ONCE,
            found_dead=found_dead,
        )
        if detailed
        else []
    )
    return ProcessDiff(replaces=replaces, detailed_diff=detailed, impacts=[i.as_pair() for i in impacts])


def group_size(props: Mapping[str, Any]) -> int | None:
    """How many brokers a broker's cluster runs, from its quorum voters; None for a worker."""
    properties = plain(props.get("properties"))
    if not isinstance(properties, Mapping):
        return None
    voters = properties.get("controller.quorum.voters") or properties.get("controller.quorum.bootstrap.servers")
    if not isinstance(voters, str) or is_unknown(voters):
        return None
    return len([v for v in voters.split(",") if v.strip()])
