"""Failover planning: translation, lag estimates, refusals, rendering."""

from __future__ import annotations

from typing import Any

import pytest

from components.mm2_records import Checkpoint
from components.ops import failover as fo
from components.ops.errors import OpsError
from components.ops.failover_plan import (
    FailoverAction,
    FailoverPlan,
    SourceView,
    TargetGroup,
    build_plan,
    estimate_missing,
    latest_checkpoints,
    plan_partition,
    render_plan,
)
from tests.unit.ops.helpers import cp, outputs

TOPICS = {"orders": "primary.orders"}


def test_latest_checkpoint_per_key_wins_in_topic_order() -> None:
    records = [
        cp("g", "primary.orders", 0, 10, 10),
        cp("g", "primary.orders", 1, 5, 5),
        cp("g", "primary.orders", 0, 20, 19),
    ]
    assert latest_checkpoints(records) == {
        ("g", "primary.orders", 0): cp("g", "primary.orders", 0, 20, 19),
        ("g", "primary.orders", 1): cp("g", "primary.orders", 1, 5, 5),
    }


def test_commit_translated_offset_when_dr_group_has_none() -> None:
    p = plan_partition("g", "primary.orders", 0, cp("g", "primary.orders", 0, 500, 480), None, 500, 100)
    assert (p.action, p.start_offset) == (FailoverAction.COMMIT, 480)
    # The group is where the checkpoint says: only the translation slack is re-read.
    assert (p.reread_min, p.reread_max) == (0, 100)


def test_reread_grows_with_what_the_group_consumed_after_the_checkpoint() -> None:
    p = plan_partition("g", "primary.orders", 0, cp("g", "primary.orders", 0, 500, 480), None, 740, 100)
    assert (p.reread_min, p.reread_max) == (240, 340)


def test_translation_behind_a_lagging_replication_widens_the_re_read() -> None:
    # Replication lagged the group at the checkpoint: D fell back to an older sync, 890 behind U.
    p = plan_partition("g", "primary.orders", 0, cp("g", "primary.orders", 0, 4125, 3235), None, 4200, 100)
    assert (p.reread_min, p.reread_max) == (75, 75 + 890)


def test_dr_group_at_or_past_the_translated_offset_is_kept_never_rewound() -> None:
    same = plan_partition("g", "primary.orders", 0, cp("g", "primary.orders", 0, 500, 480), 480, None, 100)
    assert (same.action, same.start_offset) == (FailoverAction.KEEP, 480)
    ahead = plan_partition("g", "primary.orders", 0, cp("g", "primary.orders", 0, 500, 480), 530, 600, 100)
    assert (ahead.action, ahead.start_offset) == (FailoverAction.KEEP, 530)
    assert (ahead.reread_min, ahead.reread_max) == (50, 150)
    behind = plan_partition("g", "primary.orders", 0, cp("g", "primary.orders", 0, 500, 480), 300, None, 100)
    assert (behind.action, behind.start_offset) == (FailoverAction.COMMIT, 480)


def test_unknown_source_position_leaves_the_upper_bound_open() -> None:
    p = plan_partition("g", "primary.orders", 0, cp("g", "primary.orders", 0, 500, 480), None, None, 100)
    assert (p.reread_min, p.reread_max) == (0, None)


def test_partition_without_checkpoint_is_left_to_auto_offset_reset() -> None:
    p = plan_partition("g", "primary.orders", 2, None, None, 10, 100)
    assert p.action is FailoverAction.NO_CHECKPOINT and p.start_offset is None


@pytest.mark.parametrize(
    ("source_end", "remote_end", "anchor", "missing"),
    [
        (1000, 950, None, 50),  # offsets aligned from 0
        (1000, 1000, None, 0),
        (1000, 1010, None, 0),  # never negative
        (1000, 950, cp("g", "t", 0, 500, 490), 50),  # within slack: still aligned
        (6000, 950, cp("g", "t", 0, 5500, 500), 50),  # flow started at upstream 5000: re-based
    ],
)
def test_missing_estimate(source_end: int, remote_end: int, anchor: Checkpoint | None, missing: int) -> None:
    assert estimate_missing(source_end, remote_end, anchor, 100) == missing


def _plan(**overrides: Any) -> FailoverPlan:
    args: dict[str, Any] = {
        "flow_name": "primary->dr",
        "failed": "primary",
        "to": "dr",
        "target_bootstrap": "127.0.0.1:19192",
        "topics": TOPICS,
        "remote_partitions": {"primary.orders": 2},
        "checkpoints": {
            ("app", "primary.orders", 0): cp("app", "primary.orders", 0, 500, 480),
            ("app", "primary.orders", 1): cp("app", "primary.orders", 1, 300, 300),
        },
        "groups": ["app"],
        "groups_requested": True,
        "target_groups": {"app": TargetGroup("EMPTY", 0, {("primary.orders", 1): 300})},
        "source": None,
        "source_error": "connection refused",
        "remote_ends": {("primary.orders", 0): 900, ("primary.orders", 1): 700},
        "offset_lag_max": 100,
        "now_ms": 6_000,
    }
    args.update(overrides)
    return build_plan(**args)


def test_plan_with_source_down_commits_and_reports_unknown_lag() -> None:
    plan = _plan()
    assert not plan.refused
    (group,) = plan.groups
    assert [(p.partition, p.action, p.start_offset) for p in group.partitions] == [
        (0, FailoverAction.COMMIT, 480),
        (1, FailoverAction.KEEP, 300),
    ]
    assert group.commits == (("primary.orders", 0, 480, ""),)
    assert group.reread_range == (0, None)
    assert plan.missing_total is None
    assert any("does not answer" in w for w in plan.warnings)
    text = render_plan(plan, dry_run=True)
    assert "dry run" in text and "DOES NOT ANSWER (connection refused)" in text
    assert "primary.orders p0: checkpoint 500 -> 480; dr has none; commit 480" in text
    assert "newest checkpoint 5.0s old" in text
    assert "Next: start the consumers of app against dr (127.0.0.1:19192) subscribed to primary.orders" in text


def test_plan_with_source_up_reports_lag_staleness_and_duplicates() -> None:
    source = SourceView(
        committed={("app", "orders", 0): 620, ("app", "orders", 1): 300},
        ends={("orders", 0): 1000, ("orders", 1): 700},
    )
    plan = _plan(source=source, source_error="")
    assert [(e.partition, e.missing) for e in plan.lag] == [(0, 100), (1, 0)]
    assert plan.missing_total == 100
    (group,) = plan.groups
    assert group.reread_range == (120, 320)
    assert any("behind its position on primary by 120 records on 1 partition" in w for w in plan.warnings)
    assert "expected duplicates (re-read): 120..320 records" in render_plan(plan, dry_run=False)


def test_active_group_on_dr_refuses_the_whole_failover() -> None:
    plan = _plan(target_groups={"app": TargetGroup("STABLE", 2, {})})
    assert plan.refused
    assert "group app is active on dr (STABLE, 2 member(s))" in plan.problems[0]
    assert "stop those consumers" in plan.problems[0]
    assert "REFUSED, nothing committed" in render_plan(plan, dry_run=False)
    with pytest.raises(OpsError, match="failover refused"):
        fo.execute(outputs(), plan)


def test_requested_group_without_checkpoints_is_refused_with_next_step() -> None:
    plan = _plan(groups=["app", "ghost"])
    assert plan.refused
    assert plan.problems[0].startswith("group ghost: no checkpoint for the remote topics primary.orders")
    assert "bin/connectors status --flow primary->dr" in plan.problems[0]


def test_flow_mode_without_any_checkpoint_is_a_problem() -> None:
    plan = _plan(groups=[], groups_requested=False, checkpoints={})
    assert plan.refused and "holds no checkpoint for any group" in plan.problems[0]


def test_partitions_missing_a_checkpoint_are_named() -> None:
    plan = _plan(remote_partitions={"primary.orders": 3})
    (group,) = plan.groups
    assert group.partitions[2].action is FailoverAction.NO_CHECKPOINT
    assert any("no checkpoint for primary.orders-2" in w for w in plan.warnings)


def test_plan_is_json_ready() -> None:
    import json

    data = json.loads(json.dumps(_plan().to_dict()))
    assert data["groups"][0]["partitions"][0]["action"] == "commit"
    assert data["reread"] == {"app": {"min": 0, "max": None}}
