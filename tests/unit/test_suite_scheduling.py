"""How bin/test spreads the suite over pytest-xdist workers: whole modules, longest first, the
Kubernetes lane in a phase of its own, and disjoint port ranges per worker (tests/conftest.py,
tests/integration/harness.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests import conftest
from tests.integration import harness


def test_a_module_is_one_unit_and_the_spark_unit_tests_are_one_unit() -> None:
    assert conftest.work_unit("tests/integration/test_faults.py::test_x[a::b]") == "tests/integration/test_faults.py"
    assert conftest.work_unit("tests/unit/spark/test_checks.py::test_y") == conftest.SPARK_UNIT
    assert conftest.work_unit("tests/unit/spark/deep/test_z.py::C::t") == conftest.SPARK_UNIT


def item(nodeid: str, lane: bool = False) -> SimpleNamespace:
    """What the hook reads of a collected test: its id and whether it carries the lane's marker."""
    return SimpleNamespace(
        nodeid=nodeid, get_closest_marker=lambda name: object() if lane and name == conftest.LANE_MARK else None
    )


def config() -> SimpleNamespace:
    """A pytest config whose deselection hook records what it was given."""
    deselected: list[SimpleNamespace] = []
    return SimpleNamespace(
        hook=SimpleNamespace(pytest_deselected=lambda items: deselected.extend(items)), out=deselected
    )


def test_units_run_longest_first_each_kept_whole_in_collected_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conftest, "MODULE_SECONDS", {"tests/b.py": 10.0, "tests/c.py": 99.0, conftest.SPARK_UNIT: 50})
    ids = ["tests/a.py::1", "tests/b.py::1", "tests/a.py::2", "tests/b.py::2", "tests/unit/spark/t.py::1",
           "tests/c.py::1", "tests/d.py::1", "tests/unit/spark/u.py::1"]  # fmt: skip
    items = [item(i) for i in ids]
    monkeypatch.delenv(conftest.PHASE_ENV, raising=False)
    conftest.pytest_collection_modifyitems(config(), items)  # type: ignore[arg-type]
    assert [i.nodeid for i in items] == [
        "tests/c.py::1", "tests/unit/spark/t.py::1", "tests/unit/spark/u.py::1", "tests/b.py::1", "tests/b.py::2",
        "tests/a.py::1", "tests/a.py::2", "tests/d.py::1",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("phase", "runs"),
    [("suite", ["tests/a.py::1", "tests/c.py::1"]), ("kube", ["tests/k.py::1", "tests/k.py::2"]), (None, None)],
)
def test_bin_tests_phases_split_the_kubernetes_lane_from_the_rest(
    monkeypatch: pytest.MonkeyPatch, phase: str | None, runs: list[str] | None
) -> None:
    ids = [("tests/a.py::1", False), ("tests/k.py::1", True), ("tests/c.py::1", False), ("tests/k.py::2", True)]
    items = [item(i, lane) for i, lane in ids]
    if phase is None:
        monkeypatch.delenv(conftest.PHASE_ENV, raising=False)
    else:
        monkeypatch.setenv(conftest.PHASE_ENV, phase)
    cfg = config()
    conftest.pytest_collection_modifyitems(cfg, items)  # type: ignore[arg-type]
    every = [i for i, _lane in ids]
    assert sorted(i.nodeid for i in items) == sorted(runs or every)
    assert sorted(i.nodeid for i in cfg.out) == sorted(set(every) - set(runs or every))


def test_each_worker_picks_ports_from_its_own_share(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    shares = []
    for worker in ("gw0", "gw1"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        shares.append(harness._worker_share(10000, 30000))
        low, high = harness._worker_share(10000, harness._ephemeral_floor())
        for _ in range(20):
            base = harness.free_port_block(4)
            assert low <= base and base + 4 <= high, (worker, base, low, high)
    assert shares == [(10000, 20000), (20000, 30000)]


def test_without_xdist_the_whole_range_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    assert harness._worker_share(10000, 30000) == (10000, 30000)


def test_the_slowest_work_units_are_listed_slowest_first() -> None:
    seconds = {"tests/a.py": 3.0, conftest.SPARK_UNIT: 90.4, "tests/b.py": 12.0, "tests/c.py": 12.0}
    assert conftest.slowest_units(seconds, count=3) == [
        "     90s  tests/unit/spark/",
        "     12s  tests/b.py",
        "     12s  tests/c.py",
    ]
