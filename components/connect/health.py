"""What a connector's status says about its health: FAILED instances and UNASSIGNED tasks.

Pure: reads the status map Connect's `GET /connectors/{name}/status` answers, no I/O. Shared by
the Connector provider (failed means drift) and the auto-restart watcher.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.topology.traces import NO_TRACE, first_line

__all__ = ["FailedInstance", "failed_instances", "unassigned_tasks"]


@dataclass(frozen=True)
class FailedInstance:
    """One FAILED instance in a status: the connector itself (task_id None) or one task."""

    task_id: int | None
    worker_id: str
    trace: str

    @property
    def what(self) -> str:
        return "connector" if self.task_id is None else f"task {self.task_id}"

    def summary(self) -> str:
        """One line for people: what failed, where, and the first line of its trace."""
        head = first_line(self.trace) or NO_TRACE
        return f"{self.what} FAILED on worker {self.worker_id or '?'}: {head}"


def failed_instances(status: Mapping[str, Any] | None) -> list[FailedInstance]:
    """Every FAILED instance of a status, the connector first, then tasks by id."""
    if not isinstance(status, Mapping):
        return []
    found: list[FailedInstance] = []
    connector = status.get("connector") or {}
    if connector.get("state") == "FAILED":
        found.append(FailedInstance(None, str(connector.get("worker_id", "")), str(connector.get("trace", ""))))
    for task in sorted(status.get("tasks") or [], key=lambda t: int(t.get("id", -1))):
        if task.get("state") == "FAILED":
            found.append(
                FailedInstance(int(task.get("id", -1)), str(task.get("worker_id", "")), str(task.get("trace", "")))
            )
    return found


def unassigned_tasks(status: Mapping[str, Any] | None) -> list[int]:
    """Ids of the tasks no worker runs (UNASSIGNED): between rebalances, or a worker gone."""
    if not isinstance(status, Mapping):
        return []
    return sorted(int(t.get("id", -1)) for t in status.get("tasks") or [] if t.get("state") == "UNASSIGNED")
