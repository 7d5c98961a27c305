"""A flow that falls behind while Connect reports it running: its workers are not getting records
across from the far side (a WAN link down, a firewall), which no connector state shows.

`bin/status` runs where it reaches every cluster, which the workers may not: it reads the lag the
group's lag exporter measures, and when a flow is further behind than its RPO (STALL_FLOOR_S
without one) while its source connector and every task are RUNNING, it names the side the workers
read from across the distance (the source, when they are stored on the target) and the next step.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from components.ops.status_view import STATE_OK, ConnectorView
from components.outputs.contract import FlowExport

STALL_FLOOR_S = 60.0  # behind by more than this, with no RPO declared, while running: stalled


def stall_problem(
    flow: FlowExport, workers_with: str, lag_s: float | None, connectors: Sequence[ConnectorView]
) -> str | None:
    """Why the flow is stalled though running, naming the unreachable side; None when it is not."""
    bound = float(flow.rpo_seconds) if flow.rpo_seconds else STALL_FLOOR_S
    source = next((c for c in connectors if c.role == "source"), None)
    running = source is not None and source.state == STATE_OK and all(t.state == STATE_OK for t in source.tasks)
    if lag_s is None or lag_s <= bound or not running:
        return None
    far = {flow.target: flow.source, flow.source: flow.target}.get(workers_with)
    side = far or f"{flow.source} or {flow.target}"
    bound_text = f"its RPO of {bound:.0f}s" if flow.rpo_seconds else f"{bound:.0f}s"
    return (
        f"{lag_s:.0f}s behind (more than {bound_text}) while its source connector and every task run: the "
        f"workers (stored on {workers_with or 'their cluster'}) are not getting records from {side}, which "
        f"they reach across the network. Next step: check the path from the workers to {side} (a WAN link "
        "down, a firewall, DNS); this machine may reach both clusters while the workers do not"
    )
