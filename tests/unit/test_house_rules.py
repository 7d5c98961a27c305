"""The house rules that keep the code easy to live in, checked on the source itself.

- the pure core (`components/topology/`) imports no pulumi, httpx, pyspark or confluent_kafka;
- so do the other pure modules (`components/monitoring/`, `components/topology/restarts.py`), and
  none of them does I/O (no file, process, socket or environment module, no `open()`);
- no module over 600 lines and no function over 80 lines, anywhere (bench/ and toolchain/ too);
- imports run down the layers of LAYERS (docs/architecture.md, "Import direction"): a package
  imports itself and packages on earlier lines only, never a later line nor a peer on its line;
  the Spark stage imports only the components modules in SPARK_MAY_IMPORT, the policy pack none
  at all; and no module of the project imports, directly or through others, itself.

Each rule is a plain function over source text, and each has a test proving it can fail. The
platforms' rendering modules are pinned pure by tests/unit/platform/test_pure_modules.py.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
EFFECT_LIBRARIES = ("pulumi", "pulumi_kubernetes", "httpx", "pyspark", "confluent_kafka")
# Standard-library modules that reach files, processes, sockets or the environment.
IO_MODULES = ("os", "io", "pathlib", "shutil", "tempfile", "subprocess", "socket", "urllib", "http", "glob")
# Pure beyond the topology: the alert rules every platform shares and the restart decision.
PURE_PATHS = ("components/topology", "components/monitoring", "components/watch")
# Folders of generated or vendored material: no rule reads them.
GENERATED = (".venv", ".mm2", ".pulumi-state")
# Outside the import layers too: benchmark drivers and the toolchain are scripts beside the code.
EXEMPT = (*GENERATED, "bench", "toolchain")


def python_files(root: Path = ROOT, exempt: tuple[str, ...] = EXEMPT) -> Iterator[Path]:
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] not in exempt:
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
    assert {_rel(p) for p in files} >= {"components/monitoring/rules.py", "components/watch/plan.py"}
    offenders = {_rel(p): sorted(effect_imports(src) | io_uses(src)) for p in files if (src := p.read_text())}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_no_module_over_the_limit() -> None:
    files = python_files(exempt=GENERATED)
    big = {_rel(p): n for p in files if (n := module_lines(p.read_text())) > MAX_MODULE_LINES}
    assert big == {}


def test_no_function_over_the_limit() -> None:
    long = {_rel(p): found for p in python_files(exempt=GENERATED) if (found := long_functions(p.read_text()))}
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


# The project's packages, bottom first. `components.<name>` is a subpackage or a top-level module
# of components/; `__main__` is the Pulumi program file. Tests, bench/ and toolchain/ are not code
# the program runs and are not ranked.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("components.topology",),  # the product's language (pure, standard library only)
    # formats and helpers shared by the program, the operator commands and the Spark stage
    ("components.mm2_records", "components.outputs", "components.rpc_values", "components.watch"),
    ("components.review", "components.monitoring"),  # pure rules: blast radius, PR comment, alerts
    ("components.kafka",),  # Admin API providers
    ("components.connect",),  # Connect REST clients and the Connector provider
    ("components.platform", "components.local"),  # where clusters and worker groups run
    ("components.ops",),  # operator commands over a deployed stack (the switchover runs them during `up`)
    ("components.credentials", "components.rollout", "components.switchover"),
    ("components.kafka_cluster",),
    ("components.connect_group",),
    ("components.replication_flow",),
    ("components.program",),  # the Pulumi program
    ("spark",),
    ("policies",),
    ("__main__",),
)
RANK = {unit: i for i, line in enumerate(LAYERS) for unit in line}
# The Spark stage runs where only pyspark is installed: the outputs contract, the record codec,
# Connect over urllib (which needs Connect's error classes) and the lag exporter's pure model (its
# /expired document), nothing that imports pulumi or httpx.
SPARK_MAY_IMPORT = (
    "components.outputs.contract",
    "components.outputs.loader",
    "components.mm2_records",
    "components.connect.stdlib_client",
    "components.watch.lag",
)


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit_of(module: str) -> str:
    """The ranked package a module belongs to."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "components" and len(parts) > 1 else parts[0]


def project_imports(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every project module `source` imports (at any depth of the file, relative ones resolved)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            names |= {target} | {f"{target}.{alias.name}" for alias in node.names}
    return {n for n in names if n.split(".")[0] in {"components", "spark", "policies", "__main__"}}


def upward_imports(source: str, module: str) -> set[str]:
    """The imports of `module` that reach a package above its own, or a peer on its line."""
    own = unit_of(module)
    found = set()
    for name in project_imports(source, module):
        target = unit_of(name)
        if target != own and target in RANK and RANK[target] >= RANK[own]:
            found.add(name)
    return found


def code_files() -> Iterator[Path]:
    for path in python_files():
        if path.relative_to(ROOT).parts[0] not in ("tests", "bin"):
            yield path


def test_every_package_has_a_place_in_the_layers() -> None:
    units = {unit_of(module_name(p)) for p in code_files()} - {"components"}
    assert units - set(RANK) == set()


def test_imports_only_run_down_the_layers() -> None:
    up = {_rel(p): sorted(found) for p in code_files() if (found := upward_imports(p.read_text(), module_name(p)))}
    assert up == {}


def test_the_spark_stage_imports_only_the_contract_the_codec_and_connect_over_urllib() -> None:
    reached = {
        name
        for p in (ROOT / "spark").rglob("*.py")
        for name in project_imports(p.read_text(), module_name(p))
        if name.startswith("components")
    }
    # `from components.outputs.contract import X` names X too: keep module names only.
    modules = {n for n in reached if (ROOT / (n.replace(".", "/") + ".py")).exists()}
    assert modules and modules <= set(SPARK_MAY_IMPORT), sorted(modules - set(SPARK_MAY_IMPORT))


def test_the_spark_stage_loads_neither_pulumi_nor_httpx() -> None:
    code = (
        "import sys, spark.validate, spark.flow_validation\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pulumi', 'httpx', 'pulumi_policy'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_the_policy_pack_imports_nothing_of_the_project_outside_its_folder() -> None:
    reached = {
        _rel(p): sorted(n for n in project_imports(p.read_text(), module_name(p)) if not n.startswith("policies"))
        for p in (ROOT / "policies").rglob("*.py")
    }
    assert {k: v for k, v in reached.items() if v} == {}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def module_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports; `from pkg import sub` counts as importing `sub`
    (the package's __init__ runs first either way, as Python does)."""
    files = {module_name(p): p for p in code_files()}
    graph = {}
    for name, path in files.items():
        named = project_imports(path.read_text(), name, path.name == "__init__.py")
        # `from pkg import sub` names both `pkg` and `pkg.sub`: the submodule is what it imports.
        graph[name] = {
            n
            for n in named
            if n in files and n != name and not any(o.startswith(n + ".") and o in files for o in named)
        }
    return graph


def test_no_module_imports_itself_through_others() -> None:
    assert import_cycles(module_graph()) == []


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("components.connect.diff", "from components.review.blast_radius import connector_impacts\n", set()),
        (
            "components.monitoring.rules",
            "from components.platform.topology_facts import x\n",
            {
                "components.platform.topology_facts",
                "components.platform.topology_facts.x",
            },
        ),
        (
            "components.platform.local.watcher",
            "def f():\n    from components.ops.watcher import plan\n",
            {
                "components.ops.watcher",
                "components.ops.watcher.plan",
            },
        ),
        (
            "components.review.blast_radius",
            "from components.monitoring import rules\n",
            {
                "components.monitoring",
                "components.monitoring.rules",
            },
        ),
        ("spark.validate", "from components.ops.clients import connect_client\n", set()),
        ("components.topology.model", "from .settings import KNOWN\n", set()),
    ],
)
def test_the_import_direction_rule_can_fail(module: str, source: str, expected: set[str]) -> None:
    assert upward_imports(source, module) == expected


def test_the_spark_and_cycle_rules_can_fail() -> None:
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []
    assert unit_of("components.ops.clients") not in SPARK_MAY_IMPORT


def test_the_policy_pack_imports_only_pulumi_policy_of_the_pulumi_sdks() -> None:
    # The pack's docs say it imports pulumi_policy only; pulumi itself comes in through it.
    offenders = {
        _rel(p): sorted(imported_roots(p.read_text()) & {"pulumi", "pulumi_kubernetes", "httpx"})
        for p in (ROOT / "policies").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}
