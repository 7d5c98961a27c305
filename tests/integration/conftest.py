"""On a failed integration test, the evidence: the last warnings and errors of every process of
every stack still deployed, attached to the test's report (pytest prints it under the failure).

A CI run deletes its stacks when the test ends; without this, a failure that does not reproduce
leaves nothing but the assertion to go on.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.harness import LIVE_STACKS, log_evidence


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed and LIVE_STACKS:
        evidence = "\n\n".join(log_evidence(stack) for stack in list(LIVE_STACKS))
        report.sections.append((f"Captured stack logs {report.when}", evidence))


@pytest.fixture(scope="session")
def kube_node_built() -> None:
    """Every Kubernetes lane test (tests/integration/kube.py, LANE) fails, naming what is missing
    and the fix, where the lane applies but bin/kube's node or its provider plugin was never built."""
    from tests.integration.kube import node_missing

    missing = node_missing()
    if missing is not None:
        pytest.fail(missing, pytrace=False)
