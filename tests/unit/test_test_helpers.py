"""A house rule for the tests themselves: a helper that two test modules need lives in a helper
module (tests/integration/harness.py and its siblings, tests/unit/mocks.py, ...), not in one test
module for the other to reach into. So no test module imports a private (`_`-prefixed) name from
another test module (`test_*.py`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]


def private_imports_from_test_modules(source: str) -> set[str]:
    """`module.name` for each private name the source imports from a test module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").rsplit(".", 1)[-1].startswith("test_"):
            private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            found |= {f"{node.module}.{name}" for name in private}
    return found


def test_no_test_module_imports_another_test_modules_private_helpers() -> None:
    offenders = {
        str(path.relative_to(TESTS)): sorted(names)
        for path in sorted(TESTS.rglob("*.py"))
        if (names := private_imports_from_test_modules(path.read_text()))
    }
    assert offenders == {}, f"move these into a shared helper module: {offenders}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from tests.integration.test_faults import _produce, FLOW\n", {"tests.integration.test_faults._produce"}),
        ("from .test_flow_checks import _flow\n", {"test_flow_checks._flow"}),
        ("from tests.integration.harness import _ephemeral_floor\n", set()),  # a helper module's own
        ("from tests.unit.spark.test_flow_checks import FLOW, __doc__\n", set()),
    ],
)
def test_the_private_import_rule_can_fail(source: str, expected: set[str]) -> None:
    assert private_imports_from_test_modules(source) == expected
