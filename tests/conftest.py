"""How `bin/test` spreads the suite over its pytest-xdist workers (two on this 2-core machine).

Most of an integration test's time is waiting on real processes (JVM starts, Connect rebalances,
MM2's refresh intervals, the Pulumi engine), so two modules at once keep both cores busy.

- A work unit is a test module, so a module's deployed stack (a module-scoped fixture) is set up
  once, on one worker; the Spark unit tests are one unit, so one worker starts one Spark session
  for all of them.
- Units are handed out longest first (`MODULE_SECONDS`, measured by `--durations`): the long
  integration modules start at once and the many short unit modules fill the gaps at the end. The
  table only orders the work; a module missing from it runs after those listed, and nothing
  depends on the order.
- The Kubernetes lane is a phase of its own, after the rest (`MM2_TEST_PHASE`, below).
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any

import pytest

from components.platform.local.process import JVM_FLAGS, PERFORMANCE_OPTS_ENV

# The local brokers and Connect workers of every stack the suite deploys run with the client
# compiler only (process.jvm_flags): a JVM that lives a few minutes under test load spends about
# half the CPU of C1+C2 (bench/jvm_flags: 0.54x for test_security's brokers and workers,
# bench/results/jvm_flags-20261127.md), and the suite is CPU-bound on 2 cores. The product's
# default stays Kafka's own flags.
os.environ.setdefault(PERFORMANCE_OPTS_ENV, " ".join((*JVM_FLAGS, "-XX:TieredStopAtLevel=1")))

# Seconds each work unit took (setup, calls, teardown): the 15 slowest from the summary bin/test
# prints at its end (three workers, 2026-11-27), the rest from two workers on 2026-11-26; only the
# order matters, and units under 10 s are left out. Refresh it when modules change a lot.
MODULE_SECONDS: dict[str, float] = {
    "tests/integration/test_switchover.py": 548,
    "tests/integration/test_spark_validation.py": 377,
    "tests/unit/spark/": 371,
    "tests/integration/test_faults.py": 365,
    "tests/integration/test_dev_stack.py": 273,
    "tests/integration/test_exactly_once.py": 269,
    "tests/integration/test_topologies_multi.py": 233,
    "tests/integration/test_tls.py": 187,
    "tests/integration/test_docker_platform.py": 126,
    "tests/integration/test_spark_cluster.py": 170,
    "tests/integration/test_connector_states.py": 169,
    "tests/integration/test_lag.py": 159,
    "tests/integration/test_topologies_bidirectional.py": 150,
    "tests/integration/test_security.py": 149,
    "tests/integration/test_rolling.py": 141,
    "tests/integration/test_metrics.py": 127,
    "tests/integration/test_broker_rolling.py": 110,
    "tests/integration/test_repair.py": 102,
    "tests/integration/test_bad_input.py": 78,
    "tests/integration/test_quoted_passwords.py": 57,
    "tests/integration/test_dead_group.py": 55,
    "tests/integration/test_review.py": 49,
    "tests/integration/test_policy_pack.py": 47,
    "tests/integration/test_status.py": 47,
    "tests/integration/test_transforms.py": 37,
}

SPARK_UNIT = "tests/unit/spark/"


def work_unit(nodeid: str) -> str:
    """The scope a test is scheduled with: its module, or the one Spark unit-test package."""
    path = nodeid.split("::", 1)[0]
    return SPARK_UNIT if path.startswith(SPARK_UNIT) else path


# bin/test runs the suite in two phases: `suite` (everything but the Kubernetes lane, on two
# workers) and then `kube` (the lane alone: its node's pods would load the cores that the other
# modules' timing bounds count on). Unset, as with a bare `pytest`, every test runs.
PHASE_ENV = "MM2_TEST_PHASE"
LANE_MARK = "kube_lane"


def in_phase(item: pytest.Item, phase: str | None) -> bool:
    if phase not in ("suite", "kube"):
        return True
    return (item.get_closest_marker(LANE_MARK) is not None) == (phase == "kube")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """This phase's tests (the others deselected); longest work units first, each kept whole and
    in the order pytest collected it."""
    phase = os.environ.get(PHASE_ENV)
    left_out = [item for item in items if not in_phase(item, phase)]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if in_phase(item, phase)]
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        first.setdefault(work_unit(item.nodeid), index)
    weight = {unit: MODULE_SECONDS.get(unit, 0.0) for unit in first}
    items.sort(key=lambda item: (-weight[work_unit(item.nodeid)], first[work_unit(item.nodeid)]))


# Seconds each work unit took in this run (setup, calls, teardown of its tests, as the reports
# reach the controller): the table above, refreshed from what bin/test prints at the end.
UNIT_SECONDS: defaultdict[str, float] = defaultdict(float)
SLOWEST_SHOWN = 15


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    UNIT_SECONDS[work_unit(report.nodeid)] += report.duration


def slowest_units(seconds: dict[str, float], count: int = SLOWEST_SHOWN) -> list[str]:
    """The `count` slowest work units as lines, slowest first."""
    ranked = sorted(seconds.items(), key=lambda kv: (-kv[1], kv[0]))[:count]
    return [f"{s:7.0f}s  {unit}" for unit, s in ranked]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if UNIT_SECONDS:
        terminalreporter.write_sep("=", f"slowest {SLOWEST_SHOWN} work units (seconds of setup, calls, teardown)")
        for line in slowest_units(UNIT_SECONDS):
            terminalreporter.write_line(line)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return ModuleScheduling(config, log)
