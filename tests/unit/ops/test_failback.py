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


def test_failback_says_what_mm2_translates_and_what_it_does_not() -> None:
    # Checkpoints translate upstream -> downstream within a flow only: the reverse flow maps the
    # groups' positions in orders on dr to dr.orders on primary, never primary.orders back to orders.
    steps = failback_steps(
        flow_name="primary->dr", failed="primary", to="dr", topics={"orders": "primary.orders"},
        worker_group="mm2", worker_group_cluster="dr",
    )  # fmt: skip
    text = "\n".join(steps)
    assert "dr->primary's checkpoints map their positions in orders on dr to dr.orders on primary" in text
    assert "nothing maps their positions in primary.orders on dr back to orders on primary" in text
    assert "maps offsets on primary.orders back" not in text
