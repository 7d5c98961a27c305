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
"""

from __future__ import annotations

from typing import Any

import pytest

# Seconds each work unit took (setup, calls, teardown; two workers, 2026-11-26); only the order
# matters, and units under 10 s are left out. Refresh it from `bin/test --durations=0` when modules
# change a lot.
MODULE_SECONDS: dict[str, float] = {
    "tests/integration/test_faults.py": 417,
    "tests/integration/test_spark_validation.py": 403,
    "tests/integration/test_exactly_once.py": 346,
    "tests/integration/test_topologies_multi.py": 273,
    "tests/integration/test_dev_stack.py": 250,
    "tests/unit/spark/": 225,
    "tests/integration/test_rolling.py": 180,
    "tests/integration/test_tls.py": 165,
    "tests/integration/test_quoted_passwords.py": 162,
    "tests/integration/test_topologies_bidirectional.py": 154,
    "tests/integration/test_spark_cluster.py": 140,
    "tests/integration/test_security.py": 130,
    "tests/integration/test_broker_rolling.py": 118,
    "tests/integration/test_connector_states.py": 106,
    "tests/integration/test_kube_stack.py": 280,
    "tests/integration/test_docker_platform.py": 100,
    "tests/integration/test_kube_node.py": 150,
    "tests/integration/test_repair.py": 95,
    "tests/integration/test_metrics.py": 80,
    "tests/integration/test_bad_input.py": 64,
    "tests/integration/test_policy_pack.py": 40,
    "tests/integration/test_status.py": 40,
    "tests/integration/test_review.py": 26,
    "tests/integration/test_transforms.py": 25,
}

SPARK_UNIT = "tests/unit/spark/"


def work_unit(nodeid: str) -> str:
    """The scope a test is scheduled with: its module, or the one Spark unit-test package."""
    path = nodeid.split("::", 1)[0]
    return SPARK_UNIT if path.startswith(SPARK_UNIT) else path


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest work units first, each kept whole and in the order pytest collected it."""
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        first.setdefault(work_unit(item.nodeid), index)
    weight = {unit: MODULE_SECONDS.get(unit, 0.0) for unit in first}
    items.sort(key=lambda item: (-weight[work_unit(item.nodeid)], first[work_unit(item.nodeid)]))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return ModuleScheduling(config, log)
