"""policies/rule_config.py: the stack name the rules see, read from the policy host's environment."""

from __future__ import annotations

import pytest
import rule_config


def test_the_stack_name_is_the_last_part_of_pulumi_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_STACK", "organization/mm2-replication/dev")
    assert rule_config.current_stack_name() == "dev"
    assert rule_config.is_dev_stack({})


def test_without_pulumi_stack_no_stack_is_dev(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PULUMI_STACK", raising=False)
    assert rule_config.current_stack_name() == ""
    assert not rule_config.is_dev_stack({"devStacks": ["dev"]})
