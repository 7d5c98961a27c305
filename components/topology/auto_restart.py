"""Which connectors a worker group's auto-restart watcher restarts, and how often at most.

Pure: from the model only. The local platform (a managed process) and the kubernetes platform
(a Deployment) both hand this map to `components.ops.watcher` in its plan.
"""

from __future__ import annotations

from components.topology.connectors import connector_name
from components.topology.model import Topology


def watched_connectors(topology: Topology, group: str) -> dict[str, int | None]:
    """Connector name -> maxRestarts (None: no limit) for every enabled flow of `group` with
    autoRestart on; empty when the group needs no watcher."""
    return {
        connector_name(flow, role): policy.max_restarts
        for flow in topology.enabled_flows()
        if flow.worker_group == group
        for role, policy in sorted(flow.auto_restart.items(), key=lambda item: item[0].value)
        if policy.enabled
    }
