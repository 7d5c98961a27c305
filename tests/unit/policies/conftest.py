"""Make the pack's modules importable the way the policy host imports them (top-level names)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

POLICIES_DIR = Path(__file__).resolve().parents[3] / "policies"
if str(POLICIES_DIR) not in sys.path:
    sys.path.insert(0, str(POLICIES_DIR))


@pytest.fixture
def prod_stack(monkeypatch: pytest.MonkeyPatch) -> str:
    """Run rules as if previewing stack `prod` (the policy host sets PULUMI_STACK)."""
    monkeypatch.setenv("PULUMI_STACK", "prod")
    return "prod"


@pytest.fixture
def dev_stack(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("PULUMI_STACK", "dev")
    return "dev"
