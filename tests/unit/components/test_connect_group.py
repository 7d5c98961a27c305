"""components/connect_group.py: the exactly-once rollout step read from the running workers."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.connect_group import deployed_worker_values, with_exactly_once_stages
from components.platform.local.layout import PROCESS_PROPERTIES, LocalPlatform, worker_path
from components.topology import Topology, parse_topology
from tests.unit.topology.helpers import dev_config


def _started(local: LocalPlatform, index: int, text: str) -> None:
    file = Path(local.run_dir(worker_path("mm2", index))) / PROCESS_PROPERTIES
    file.parent.mkdir(parents=True)
    file.write_text(text)


@pytest.fixture
def local(tmp_path: Path) -> LocalPlatform:
    return LocalPlatform(stack="t", run_root=str(tmp_path), kafka_libs="")


def _eos_topology() -> Topology:
    config = dev_config()
    config["flows"]["primary->dr"]["exactlyOnce"] = True
    return parse_topology(config)


def test_a_new_group_starts_enabled(local: LocalPlatform) -> None:
    topology = with_exactly_once_stages(_eos_topology(), local)
    assert topology.worker_groups["mm2"].exactly_once_stage == "enabled"


def test_a_running_group_without_it_prepares_first_then_enables(local: LocalPlatform) -> None:
    _started(local, 0, "group.id=mm2-mm2\n")
    _started(local, 1, "exactly.once.source.support=preparing\ngroup.id=mm2-mm2\n")
    topology = _eos_topology()
    assert deployed_worker_values(local, topology.worker_groups["mm2"], "exactly.once.source.support", "off") == [
        "off",
        "preparing",
    ]
    assert with_exactly_once_stages(topology, local).worker_groups["mm2"].exactly_once_stage == "preparing"
    (Path(local.run_dir(worker_path("mm2", 0))) / PROCESS_PROPERTIES).write_text(
        "exactly.once.source.support=preparing\n"
    )
    assert with_exactly_once_stages(topology, local).worker_groups["mm2"].exactly_once_stage == "enabled"


def test_groups_without_exactly_once_flows_are_left_alone(local: LocalPlatform) -> None:
    _started(local, 0, "group.id=mm2-mm2\n")
    topology = parse_topology(dev_config())
    assert with_exactly_once_stages(topology, local).worker_groups["mm2"].exactly_once_stage is None


def test_turned_off_the_group_is_disabling_while_a_worker_still_runs_with_it(local: LocalPlatform) -> None:
    _started(local, 0, "exactly.once.source.support=enabled\n")
    _started(local, 1, "group.id=mm2-mm2\n")
    topology = parse_topology(dev_config())
    assert with_exactly_once_stages(topology, local).worker_groups["mm2"].exactly_once_stage == "disabling"
    (Path(local.run_dir(worker_path("mm2", 0))) / PROCESS_PROPERTIES).write_text("group.id=mm2-mm2\n")
    assert with_exactly_once_stages(topology, local).worker_groups["mm2"].exactly_once_stage is None
