"""Which source groups a flow must checkpoint (MM2's group filter), and bounded polling."""

from __future__ import annotations

from spark.flow_checks import poll_until, replicated_groups


def test_replicated_groups_follow_the_flow_filter_and_mm2_excludes() -> None:
    groups = {"app", "billing", "console-consumer-1", "connect-mm2", "__x", "mm2-validate-ab12"}
    assert replicated_groups([".*"], groups) == {"app", "billing"}
    assert replicated_groups([], groups) == {"app", "billing"}  # MM2's default groups=.*
    assert replicated_groups(["bill.*"], groups) == {"billing"}
    assert replicated_groups(["app|console-consumer-1"], groups) == {"app"}


def test_poll_until_stops_when_nothing_is_missing_or_time_is_up() -> None:
    left = [{"a", "b"}, {"b"}, set()]
    missing, waited = poll_until(lambda: left.pop(0), 10, every_s=0.01)
    assert missing == set() and not left and waited < 5
    missing, waited = poll_until(lambda: {"never"}, 0.05, every_s=0.01)
    assert missing == {"never"} and waited >= 0.05
