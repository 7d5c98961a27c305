"""Shared fixtures: the prod stack config, and the policy pack importable as the host imports it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.mocks import RecordingMonitor, mocked

ROOT = Path(__file__).resolve().parents[3]
POLICIES_DIR = ROOT / "policies"
if str(POLICIES_DIR) not in sys.path:
    sys.path.insert(0, str(POLICIES_DIR))


def stack_config(stack: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]


def namespace(config: dict[str, Any], ns: str) -> dict[str, Any]:
    return {k.split(":", 1)[1]: v for k, v in config.items() if k.split(":", 1)[0] == ns}


@pytest.fixture
def prod_config() -> dict[str, Any]:
    return stack_config("prod")


@pytest.fixture
def monitor() -> Iterator[RecordingMonitor]:
    with mocked() as mon:
        yield mon
