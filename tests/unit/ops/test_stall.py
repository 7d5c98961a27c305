"""components/ops/stall.py: a flow behind its RPO while Connect runs it names the side its workers
cannot get records from, and says nothing while it keeps up, is paused or has failed."""

from __future__ import annotations

import dataclasses

import pytest

from components.ops.stall import STALL_FLOOR_S, stall_problem
from components.ops.status_view import ConnectorView, TaskView
from components.ops.throughput import Throughput
from components.outputs.contract import LinkExport
from tests.unit.ops.helpers import outputs

FLOW = dataclasses.replace(outputs().flows["primary->dr"], rpo_seconds=20)


def source(state: str = "RUNNING", task: str = "RUNNING") -> ConnectorView:
    return ConnectorView("source", "mm2-primary-to-dr-source", state, "RUNNING", tasks=(TaskView(0, task, "w0"),))


def test_a_running_flow_past_its_rpo_names_the_side_across_from_its_workers() -> None:
    problem = stall_problem(FLOW, "dr", 95.0, [source()])
    assert problem is not None
    assert problem.startswith("95s behind (more than its RPO of 20s) while its source connector and every task run")
    assert "not getting records from primary" in problem and "Next step: check the path from the workers" in problem
    # Workers stored on the source: the target is across.
    assert "not getting records from dr" in (stall_problem(FLOW, "primary", 95.0, [source()]) or "")


@pytest.mark.parametrize(
    ("lag_s", "connector"),
    [(19.0, source()), (None, source()), (95.0, source("PAUSED")), (95.0, source(task="FAILED"))],
)
def test_no_stall_while_within_the_rpo_unmeasured_paused_or_failed(
    lag_s: float | None, connector: ConnectorView
) -> None:
    assert stall_problem(FLOW, "dr", lag_s, [connector]) is None


def test_without_an_rpo_the_floor_bounds_it() -> None:
    flow = dataclasses.replace(FLOW, rpo_seconds=None)
    assert stall_problem(flow, "dr", STALL_FLOOR_S - 1, [source()]) is None
    assert f"more than {STALL_FLOOR_S:.0f}s" in (stall_problem(flow, "dr", STALL_FLOOR_S + 1, [source()]) or "")


LINKED = dataclasses.replace(FLOW, link=LinkExport("dc1<->dc2", 20.0, 4e6))


def test_a_flow_copying_near_its_links_rate_is_held_by_the_link_not_stalled() -> None:
    problem = stall_problem(LINKED, "dr", 95.0, [source()], Throughput(0.9 * 4e6 / 8, LINKED.link)) or ""
    assert problem.startswith("95s behind (more than its RPO of 20s) while copying 3.6 Mbit/s, 90% of the link")
    assert "dc1<->dc2 (4 Mbit/s, rtt 20 ms): the link is the bottleneck" in problem
    assert "not getting records" not in problem
    # The workers fetch across from dr's side: the source's producers decide the bytes that cross.
    assert "compression.type on the producers writing to primary" in problem
    across = stall_problem(LINKED, "primary", 95.0, [source()], Throughput(0.9 * 4e6 / 8, LINKED.link)) or ""
    assert "producer.compression.type in mm2:clusters.dr.client" in across


def test_far_below_its_links_rate_a_behind_flow_is_stalled_with_its_rate_shown() -> None:
    problem = stall_problem(LINKED, "dr", 95.0, [source()], Throughput(1000.0, LINKED.link)) or ""
    assert "(copying 8 kbit/s over the workers' last minute): the workers (stored on dr)" in problem
    assert "not getting records from primary" in problem
    assert stall_problem(LINKED, "dr", 19.0, [source()], Throughput(4e6, LINKED.link)) is None  # within the RPO


def test_copying_below_the_links_rate_is_too_slow_not_cut_off() -> None:
    problem = stall_problem(LINKED, "dr", 95.0, [source()], Throughput(0.3 * 4e6 / 8, LINKED.link)) or ""
    assert "while copying 1.2 Mbit/s, 30% of the link dc1<->dc2" in problem
    assert "the link is not what holds it" in problem and "mm2:flows.primary->dr.tasksMax" in problem
    assert "not getting records" not in problem
    # Without a link, a flow copying a few KiB/s is still copying.
    unlinked = stall_problem(FLOW, "dr", 95.0, [source()], Throughput(4096.0)) or ""
    assert "while copying 32.8 kbit/s: it copies slower than the source produces" in unlinked
    assert "not getting records from primary" in (stall_problem(FLOW, "dr", 95.0, [source()], Throughput(10.0)) or "")
