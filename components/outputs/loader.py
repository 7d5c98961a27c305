"""The one loader of stack outputs, for the operator commands and the Spark stage.

Reads a saved JSON file (all the Spark stage needs where Pulumi is not installed), or runs
`bin/pulumi stack output --json --show-secrets` - here and nowhere else. Secrets stay in memory:
nothing here prints the outputs, and errors quote Pulumi's stderr, never its stdout.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from components.outputs.contract import OutputsError, StackExports

ROOT = Path(__file__).resolve().parents[2]


def read_exports_file(path: str | Path) -> StackExports:
    """The outputs saved with `pulumi stack output --json --show-secrets > FILE`."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise OutputsError(
            f"stack outputs: cannot read {path}: {exc}. Next step: write it with "
            "`bin/pulumi stack output --stack <stack> --json --show-secrets > outputs.json`."
        ) from exc
    return StackExports.from_json(data)


def read_stack_exports(stack: str) -> StackExports:
    """The outputs of `stack` (the selected stack when empty), from `bin/pulumi stack output`."""
    cmd = [str(ROOT / "bin" / "pulumi"), "stack", "output", "--json", "--show-secrets"]
    if stack:
        cmd += ["--stack", stack]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    which = f"--stack {stack}" if stack else "(the selected stack)"
    if out.returncode != 0:
        raise OutputsError(
            f"stack outputs: `bin/pulumi stack output {which}` failed ({out.returncode}): "
            f"{out.stderr.strip()[-1500:]}\nNext step: check that the stack exists and is deployed "
            "(`bin/pulumi stack ls`), or pass --outputs with a saved copy."
        )
    try:
        data = json.loads(out.stdout or "{}")
    except json.JSONDecodeError as exc:
        raise OutputsError(f"stack outputs: `bin/pulumi stack output {which}` printed no JSON ({exc})") from None
    if not data:
        raise OutputsError(f"stack outputs: stack {stack or '(selected)'} has no outputs. Next step: `bin/pulumi up`.")
    return StackExports.from_json(data)


def load_exports(stack: str | None, outputs_file: str | None) -> StackExports:
    """From `outputs_file` when given, else from `stack`: what an operator command's --outputs/--stack say."""
    if outputs_file:
        return read_exports_file(outputs_file)
    if stack:
        return read_stack_exports(stack)
    raise OutputsError("stack outputs: give --stack NAME or --outputs FILE")
