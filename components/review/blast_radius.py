"""What a change does to running replication: the blast radius a preview reports.

PURE (standard library only). The dynamic providers' diffs (components/connect/diff.py,
components/platform/local/process_diff.py) call these with the old and new properties and the
property paths that changed; the dynamic-provider host hands the resulting `Impact`s to the
engine as diagnostics of the resource, so they appear in `pulumi preview --diff` (and in
`pulumi preview --json`'s diagnostics, which bin/review-comment turns into a PR comment).

Every text starts with the resource it is about, says what happens and, for warnings, what
users will see differ.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum

from components.topology.model import RestartMode
from components.topology.restarts import quorum_pause, restart_mode

__all__ = [
    "IDENTITY_POLICY",
    "Impact",
    "Severity",
    "connector_impacts",
    "process_impacts",
]

IDENTITY_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
# Keys whose change makes the checkpoint connector translate consumer offsets again (or
# elsewhere): the groups it follows, where offset syncs live, and how often it syncs.
_OFFSET_KEYS = frozenset(
    {
        "groups",
        "groups.exclude",
        "sync.group.offsets.enabled",
        "offset-syncs.topic.location",
        "offset.lag.max",
        "emit.checkpoints.enabled",
    }
)
_NAMING_KEYS = ("replication.policy.class", "replication.policy.separator")


class Severity(str, Enum):
    INFO = "info"
    WARNING = "warning"


@dataclass(frozen=True)
class Impact:
    severity: Severity
    text: str

    def as_pair(self) -> tuple[str, str]:
        """(severity, text): the plain shape the dynamic-provider host reads."""
        return (self.severity.value, self.text)


# -- connectors ----------------------------------------------------------------------------


def connector_impacts(
    name: str,
    old_config: Mapping[str, str],
    new_config: Mapping[str, str],
    changed: Mapping[str, str],
    *,
    old_state: str,
    new_state: str,
    replaced: bool,
    tasks: int | None,
) -> list[Impact]:
    """Impacts of updating connector `name`.

    `changed` is the detailed diff ({'config["tasks.max"]': "update", "desired_state":
    "update", ...}); configs are the comparable string maps (unknown values as None).
    """
    keys = sorted(_config_key(path) for path in changed if path.startswith("config["))
    impacts: list[Impact] = []
    if replaced:
        moved = ", ".join(p for p in changed if p in ("name", "connect_url"))
        impacts.append(
            Impact(
                Severity.WARNING,
                f"connector {name}: deleted and created again ({moved}"
                " changed); its tasks stop until the new one runs, which resumes from the committed offsets",
            )
        )
    elif keys:
        impacts.append(
            Impact(
                Severity.INFO,
                f"connector {name}: config keys {', '.join(keys)} change; Connect restarts the connector "
                f"and {_tasks(tasks)}",
            )
        )
    impacts += _naming_impacts(name, old_config, new_config, keys)
    offset_keys = sorted(k for k in keys if k in _OFFSET_KEYS)
    if offset_keys and "MirrorCheckpointConnector" in str(new_config.get("connector.class", "")):
        impacts.append(
            Impact(
                Severity.WARNING,
                f"connector {name}: offsets are re-translated ({', '.join(offset_keys)} change): consumer "
                "group offsets on the target are checkpointed again from the offset syncs",
            )
        )
    if "desired_state" in changed and old_state != new_state:
        impacts.append(_state_impact(name, old_state, new_state))
    return impacts


def _naming_impacts(name: str, old: Mapping[str, str], new: Mapping[str, str], keys: Iterable[str]) -> list[Impact]:
    if not any(k in _NAMING_KEYS for k in keys):
        return []
    cls = str(new.get("connector.class", ""))
    if "MirrorSourceConnector" in cls:
        renames = [
            f"{_remote(old, t)} -> {_remote(new, t)}"
            for t in _split(new.get("topics"))
            if _remote(old, t) != _remote(new, t)
        ]
        return [
            Impact(
                Severity.WARNING,
                f"connector {name}: remote topic names change ({', '.join(renames) or 'replication policy'}): "
                "records go to the new topics, the old ones stop receiving records, and consumers on the "
                "target must switch to the new names",
            )
        ]
    if "MirrorCheckpointConnector" in cls:
        return [
            Impact(
                Severity.WARNING,
                f"connector {name}: offsets are re-translated for the renamed remote topics, and checkpoints "
                f"move to {_checkpoints(new)} (was {_checkpoints(old)})",
            )
        ]
    return []


def _state_impact(name: str, old: str, new: str) -> Impact:
    if new == "PAUSED":
        return Impact(
            Severity.WARNING, f"connector {name}: paused ({old} -> PAUSED): it stops replicating until resumed"
        )
    if new == "STOPPED":
        return Impact(
            Severity.WARNING,
            f"connector {name}: stopped ({old} -> STOPPED): its tasks shut down and nothing replicates until it runs",
        )
    return Impact(Severity.INFO, f"connector {name}: resumed ({old} -> {new})")


def _remote(config: Mapping[str, str], topic: str) -> str:
    alias = str(config.get("source.cluster.alias") or "?")
    separator = str(config.get("replication.policy.separator") or ".")
    if config.get("replication.policy.class") == IDENTITY_POLICY and not topic.endswith("heartbeats"):
        return topic
    return f"{alias}{separator}{topic}"


def _checkpoints(config: Mapping[str, str]) -> str:
    alias = str(config.get("source.cluster.alias") or "?")
    internal = str(config.get("replication.policy.internal.topic.separator.enabled", "true")).lower() == "true"
    sep = str(config.get("replication.policy.separator") or ".") if internal else "."
    return f"{alias}{sep}checkpoints{sep}internal"


def _config_key(path: str) -> str:
    inner = path[len("config[") : -1]
    if inner.startswith('"') and inner.endswith('"'):
        inner = inner[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return inner


def _split(value: object) -> list[str]:
    return [t.strip() for t in str(value or "").split(",") if t.strip()]


def _tasks(tasks: int | None) -> str:
    """The connector's tasks, counted when the last `up` or refresh recorded them: Connect may
    have started more since (MM2's source connector adds tasks as it finds partitions)."""
    if tasks is None:
        return "its tasks"
    if tasks == 0:
        return "would start its tasks (it ran none at the last up)"
    return f"its tasks ({tasks} at the last up)"


# -- processes (brokers, workers) -----------------------------------------------------------


def process_impacts(
    component: str,
    changed: Iterable[str],
    *,
    replaced: bool,
    group_size: int,
    mode: RestartMode | None = None,
    found_dead: bool = False,
) -> list[Impact]:
    """Impacts of updating one broker or worker process, `component` being e.g.
    "ConnectWorkerGroup 'mm2', worker 0"; `group_size` is how many processes its cluster or
    group runs, `mode` how they restart (default: components/topology/restarts.py's rule)."""
    paths = sorted(changed)
    what = ", ".join(paths) or "nothing"
    if replaced:
        return [
            Impact(
                Severity.WARNING,
                f"{component}: replaced ({what} changed): stopped, its run directory and data removed, started afresh",
            )
        ]
    if found_dead and paths == ["running"]:
        return [Impact(Severity.INFO, f"{component}: found stopped by refresh; starts it again")]
    worker = "worker" in component.rsplit(",", 1)[-1]
    mode = restart_mode(group_size, mode)
    pause = None if worker else quorum_pause(group_size)
    if mode is RestartMode.ROLLING and pause:
        return [
            Impact(
                Severity.WARNING, f"{component}: restarts ({what} changed), rolling, one of 2 at a time, but {pause}"
            )
        ]
    if mode is RestartMode.ROLLING:
        peers = "workers take over its connectors' tasks" if worker else "brokers keep serving its partitions"
        return [
            Impact(
                Severity.INFO,
                f"{component}: restarts ({what} changed), rolling: one of {group_size} at a time, the other {peers}",
            )
        ]
    stops = "every connector of the group stops" if worker else "replication from and to the cluster stops"
    why = "it is the only one" if group_size <= 1 else f"all {group_size} together (restarts: all-at-once)"
    return [
        Impact(
            Severity.WARNING, f"{component}: restarts ({what} changed), all at once: {why}, so {stops} until it is back"
        )
    ]
