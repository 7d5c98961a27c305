"""components/ops/mm2props.py and bin/mm2props: the command around the pure translation."""

from __future__ import annotations

import subprocess
from pathlib import Path

from components.ops.mm2props import run_cli, stack_config_from_yaml, stack_yaml
from components.topology.mm2_properties import import_properties
from tests.unit.topology.helpers import EXAMPLES
from tests.unit.topology.test_mm2_properties import ACTIVE_PASSIVE

ROOT = Path(__file__).resolve().parents[3]


def test_stack_yaml_round_trip() -> None:
    config = import_properties(ACTIVE_PASSIVE).config
    assert stack_config_from_yaml(stack_yaml(config)) == config


def test_run_cli_reads_through_the_injected_reader() -> None:
    files = {"mm2.properties": ACTIVE_PASSIVE}
    code, out, err = run_cli(["import", "mm2.properties"], files.__getitem__)
    assert code == 0
    assert out.startswith("config:\n  mm2:defaults:")
    assert "pulumi config set --secret" in err
    assert run_cli(["bogus"], files.__getitem__)[0] == 2


def test_bin_mm2props_exports_an_example() -> None:
    done = subprocess.run(
        [str(ROOT / "bin" / "mm2props"), "export", str(EXAMPLES / "active-passive.yaml")],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "primary->dr.enabled = true" in done.stdout.splitlines()


def test_bin_mm2props_import_writes_yaml_that_ends_with_one_newline(tmp_path: Path) -> None:
    # Redirected into Pulumi.<stack>.yaml, the output must be a complete text file.
    source = tmp_path / "mm2.properties"
    source.write_text(ACTIVE_PASSIVE, encoding="utf-8")
    done = subprocess.run(
        [str(ROOT / "bin" / "mm2props"), "import", str(source)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("\n") and not done.stdout.endswith("\n\n")
