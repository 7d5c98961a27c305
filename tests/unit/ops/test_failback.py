"""The failback runbook: ordered steps that name the reverse flow."""

from __future__ import annotations

from components.ops.failback import failback_steps


def test_failback_steps_are_ordered_and_name_the_reverse_flow() -> None:
    steps = failback_steps(
        flow_name="primary->dr", failed="primary", to="dr", topics={"orders": "primary.orders"},
        worker_group="mm2", worker_group_cluster="dr",
    )  # fmt: skip
    text = "\n".join(steps)
    order = [
        text.index("Bring primary back"),
        text.index("Let flow primary->dr catch up"),
        text.index('mm2:flows."dr->primary"'),
        text.index("policy-pack"),
        text.index("stop the producers on dr"),
        text.index("Stop the consumers on dr; run `bin/failover --stack <stack> --failed dr --to primary"),
        text.index("Start the consumers on primary subscribed to orders and dr.orders"),
    ]
    assert order == sorted(order)
    assert "never identity" in text
    assert "a worker group attached to primary" in text
