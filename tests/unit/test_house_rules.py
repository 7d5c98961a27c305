"""The house rules that keep the code easy to live in, checked on the source itself.

- the pure core (`components/topology/`) imports no pulumi, httpx, pyspark or confluent_kafka;
- so do the other pure modules (`components/monitoring/`, `components/platform/restarts.py`), and
  none of them does I/O (no file, process, socket or environment module, no `open()`);
- no module over 600 lines and no function over 80 lines, outside `bench/`.

Each rule is a plain function over source text, and each has a test proving it can fail. The
platforms' rendering modules are pinned pure by tests/unit/platform/test_pure_modules.py.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
EFFECT_LIBRARIES = ("pulumi", "pulumi_kubernetes", "pulumi_docker", "httpx", "pyspark", "confluent_kafka")
# Standard-library modules that reach files, processes, sockets or the environment.
IO_MODULES = ("os", "io", "pathlib", "shutil", "tempfile", "subprocess", "socket", "urllib", "http", "glob")
# Pure beyond the topology: the alert rules every platform shares and the restart decision.
PURE_PATHS = ("components/topology", "components/monitoring", "components/platform/restarts.py")
# Folders of generated or vendored material, and bench/ (benchmark drivers are scripts).
EXEMPT = (".venv", ".mm2", ".pulumi-state", "bench", "toolchain")


def python_files(root: Path = ROOT) -> Iterator[Path]:
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] not in EXEMPT:
            yield path


def imported_roots(source: str) -> set[str]:
    """The top-level package of every module `source` imports (relative imports excluded)."""
    roots: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def effect_imports(source: str) -> set[str]:
    return imported_roots(source) & set(EFFECT_LIBRARIES)


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > limit:
                found.append((node.name, length))
    return found


def io_uses(source: str) -> set[str]:
    """The I/O modules `source` imports, plus `open()` when it calls the builtin."""
    calls = {
        "open()"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open"
    }
    return (imported_roots(source) & set(IO_MODULES)) | calls


def pure_files() -> Iterator[Path]:
    for rel in PURE_PATHS:
        path = ROOT / rel
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path]


def module_lines(source: str) -> int:
    return source.count("\n")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_pure_core_imports_no_effect_library() -> None:
    offenders = {
        _rel(p): sorted(effect_imports(p.read_text())) for p in (ROOT / "components" / "topology").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def outside_imports(source: str, own_package: str) -> set[str]:
    """Modules `source` imports that are neither standard library nor inside `own_package`."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    own = own_package + "."
    return {n for n in names if n.split(".")[0] not in sys.stdlib_module_names and not (n + ".").startswith(own)}


def test_the_topology_imports_only_the_standard_library_and_itself() -> None:
    """docs/architecture.md: the product's language depends on nothing (yaml included: the stack
    config YAML is read and written at the edge, components/ops/mm2props.py)."""
    offenders = {
        _rel(p): sorted(outside_imports(p.read_text(), "components.topology"))
        for p in (ROOT / "components" / "topology").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    assert outside_imports("import yaml\nfrom components.connect import x\nimport re\n", "components.topology") == {
        "yaml",
        "components.connect",
    }


def test_pure_modules_import_no_effect_library_and_do_no_io() -> None:
    files = list(pure_files())
    assert {_rel(p) for p in files} >= {"components/monitoring/rules.py", "components/platform/restarts.py"}
    offenders = {_rel(p): sorted(effect_imports(src) | io_uses(src)) for p in files if (src := p.read_text())}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_no_module_over_the_limit() -> None:
    big = {_rel(p): n for p in python_files() if (n := module_lines(p.read_text())) > MAX_MODULE_LINES}
    assert big == {}


def test_no_function_over_the_limit() -> None:
    long = {_rel(p): found for p in python_files() if (found := long_functions(p.read_text()))}
    assert long == {}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import pulumi\n", {"pulumi"}),
        ("from pyspark.sql import functions as F\n", {"pyspark"}),
        ("def f():\n    import httpx\n", {"httpx"}),
        ("from confluent_kafka.admin import AdminClient\n", {"confluent_kafka"}),
        ("from .model import Flow\nimport json\n", set()),
    ],
)
def test_effect_import_rule_can_fail(source: str, expected: set[str]) -> None:
    assert effect_imports(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import os\n", {"os"}),
        ("from pathlib import Path\n", {"pathlib"}),
        ("def f(p):\n    return open(p).read()\n", {"open()"}),
        ("import subprocess, json\n", {"subprocess"}),
        ("import json\nfrom dataclasses import dataclass\nf = obj.open()\n", set()),
    ],
)
def test_io_rule_can_fail(source: str, expected: set[str]) -> None:
    assert io_uses(source) == expected


def test_size_rules_can_fail() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    assert long_functions(f"def too_long():\n{body}") == [("too_long", MAX_FUNCTION_LINES + 1)]
    assert long_functions("def short():\n    return 1\n") == []
    assert module_lines("x = 1\n" * (MAX_MODULE_LINES + 1)) > MAX_MODULE_LINES
