"""The retention guardrail through the real engine: `pulumi preview --policy-pack policies` on the
dev topology (flow primary->dr, marked disasterRecovery). Previews only: nothing is deployed.

Violating: `orders` keeps records 1h, the flow must survive a 1d outage -> the mandatory
`dr-retention-outlasts-outage-budget` stops the preview naming the topic and both durations.
Passing: the same topic with the flow's outage budget lowered to 30m -> the preview succeeds. Its
RPO is set below the dev stack's checkpoint interval, so the preview also carries the RPO warning
naming both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.harness import dev_config_with_free_ports
from tests.integration.test_policy_pack import assert_nothing_deployed, preview_with_pack

pytestmark = pytest.mark.integration

DR_RULE = "dr-retention-outlasts-outage-budget"


def dev_with_short_orders_retention(**flow: str) -> dict:
    cfg = dev_config_with_free_ports()
    config = cfg["config"]
    config["mm2:clusters"]["primary"]["topics"]["orders"]["config"] = {"retention.ms": "3600000"}
    config["mm2:flows"]["primary->dr"].update(flow)
    assert config["mm2:flows"]["primary->dr"].get("disasterRecovery") is True
    return cfg


def test_a_dr_source_topic_kept_shorter_than_the_outage_budget_stops_the_preview(tmp_path: Path) -> None:
    stack, out = preview_with_pack(tmp_path, dev_with_short_orders_retention(outageBudget="1d"))
    try:
        text = out.stdout + out.stderr
        assert out.returncode != 0, text[-4000:]
        assert DR_RULE in text, text[-4000:]
        assert "Topic orders on cluster primary" in text and "keeps records for 1h" in text, text[-4000:]
        assert "outage budget of 1d" in text, text[-4000:]
        assert "Topic payments" not in text, text[-4000:]  # 7d, Kafka's default, outlasts 1d
        assert_nothing_deployed(stack)
    finally:
        stack.destroy()


def test_a_budget_the_retention_outlasts_passes_and_an_unmeasurable_rpo_warns(tmp_path: Path) -> None:
    # The dev stack emits checkpoints every 5 s: a 2s RPO cannot be seen in them.
    stack, out = preview_with_pack(tmp_path, dev_with_short_orders_retention(outageBudget="30m", rpo="2s"))
    try:
        text = out.stdout + out.stderr
        assert out.returncode == 0, text[-4000:]
        assert DR_RULE not in text and "retention-outlasts-outage-budget" not in text, text[-4000:]
        assert "rpo 2s is shorter than its emit.checkpoints.interval.seconds=5" in text, text[-4000:]
    finally:
        stack.destroy()
