"""A planned switchover across a WAN (issue 40, item 5): the cluster pair primary<->dr with dr in
dc2 behind an emulated link of 50 ms and 100 Mbit/s, the workers beside dr, so MM2's drain reads
primary across the link. The application writes on primary while `active` moves to dr in one
`pulumi up`: its writes are fenced, MM2 copies what it acknowledged across the link, the group
moves. The switchover reports how long writes were fenced and its RPO (0 records), and every
record the application got acknowledged is on dr, where its group resumes.
Needs root (namespaces, TAP devices), as the docker lane does.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest

from tests.integration.emulated import require_emulation
from tests.integration.failover_app import (
    BOUND_S,
    GROUP,
    App,
    add_app_principal,
    consume,
    pair_config,
    pair_state,
    switch,
    wait_checkpointed,
)
from tests.integration.harness import TestStack, read_keys, running, wait_until

pytestmark = pytest.mark.integration

RTT_MS = 50


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestStack]:
    require_emulation()
    cfg = pair_config()
    config = cfg["config"]
    config["mm2:clusters"]["dr"]["datacenter"] = "dc2"
    config["mm2:links"] = {"dc1<->dc2": {"rtt": f"{RTT_MS}ms", "bandwidth": "100Mbit"}}
    with running(tmp_path_factory.mktemp("wan-switchover"), cfg) as s:
        outputs = s.outputs()
        for alias in ("primary", "dr"):
            add_app_principal(outputs, alias)
        yield s


def test_a_planned_switchover_across_a_50ms_link_reports_its_fenced_time_and_loses_nothing(stack: TestStack) -> None:
    outputs = stack.outputs()
    prefix = f"wan-sw-{uuid.uuid4().hex[:6]}"
    app = App(outputs, "primary", prefix)
    app.thread.start()
    try:
        wait_until(lambda: len(app.acked) >= 200, 60, "the app's first 200 records")
        on_old = consume(outputs, "primary", ["orders"], lambda seen: len(seen) >= 150, 60)
        wait_checkpointed(outputs, "primary", "dr")
        switch(stack, "dr")
        up = stack.up()
    finally:
        app.stop.set()
        app.thread.join(60)
    said = up.stdout + up.stderr
    assert app.refused and "authoriz" in app.refused[0].lower(), f"the fence must refuse the app: {app.refused[:3]}"
    state = pair_state(stack)
    last = state["last"]
    assert state["active"] == "dr" and last["rpoRecords"] == 0 and last["groups"] == [GROUP], last
    assert "RPO 0 record(s)" in said, said[-4000:]
    fenced = re.search(r"writes were fenced ([0-9.]+)s", said)
    assert fenced is not None and float(fenced[1]) == pytest.approx(last["fencedSeconds"], abs=0.1), said[-4000:]
    assert 0 < last["drainSeconds"] + last["groupsSeconds"] <= last["fencedSeconds"]

    acked = set(app.acked)
    copied = read_keys(outputs, "dr", "primary.orders", prefix.encode(), acked, BOUND_S)
    assert acked <= set(copied), f"{len(acked - set(copied))} acknowledged record(s) not on dr"
    later = consume(outputs, "dr", ["primary.orders", "orders"], lambda seen: acked <= set(on_old) | set(seen), BOUND_S)
    assert not acked - set(on_old) - set(later), "the group on dr did not see every record it had not read"
    print(
        f"\n[wan-switchover] primary -> dr across {RTT_MS} ms: writes fenced {last['fencedSeconds']:.1f}s (drain "
        f"{last['drainSeconds']:.1f}s, groups {last['groupsSeconds']:.1f}s), RPO {last['rpoRecords']} record(s); "
        f"{len(acked)} acknowledged, all on dr"
    )
