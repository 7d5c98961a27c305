"""Pulumi program: `components.program` reads the `mm2` and `mm2-platform` stack config, checks
all of it in one pass (every problem listed, nothing registered on bad input), then builds the
components and exports the stack-outputs contract."""

from pathlib import Path

from components.program import run

run(Path(__file__).resolve().parent)
