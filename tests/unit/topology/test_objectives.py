"""components/topology/objectives.py and the `rpo` / `outageBudget` keys: durations, defaults,
the flow over the defaults, bad values named with their key, and the RPO the flow's own
checkpoints and heartbeats cannot measure."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from components.topology import parse_topology
from components.topology.model import Flow
from components.topology.objectives import (
    DEFAULT_OUTAGE_BUDGET_SECONDS,
    DEFAULT_RPO_SECONDS,
    cluster_retention_ms,
    format_duration,
    parse_duration,
    rpo_warnings,
)
from tests.unit.topology.helpers import FLOW, dev_config, problems


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("5m", 300), ("2h", 7200), ("7d", 604800), (" 10 M ", 600), ("0s", 0)],
)
def test_durations_in_seconds(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("value", ["5", "-5m", "1.5h", "5w", "5ms", "", "m", 300, None, True, "5m30s"])
def test_what_is_not_a_duration(value: Any) -> None:
    assert parse_duration(value) is None


@pytest.mark.parametrize(("seconds", "text"), [(86400, "1d"), (7200, "2h"), (300, "5m"), (90, "90s"), (0, "0s")])
def test_durations_are_written_in_their_largest_exact_unit(seconds: int, text: str) -> None:
    assert format_duration(seconds) == text


def test_the_model_defaults_are_the_declared_defaults() -> None:
    flow = parse_topology(dev_config()).flows[0]
    assert (flow.rpo_seconds, flow.outage_budget_seconds) == (DEFAULT_RPO_SECONDS, DEFAULT_OUTAGE_BUDGET_SECONDS)
    assert (DEFAULT_RPO_SECONDS, DEFAULT_OUTAGE_BUDGET_SECONDS) == (300, 86400)
    fields = Flow.__dataclass_fields__
    assert (fields["rpo_seconds"].default, fields["outage_budget_seconds"].default) == (300, 86400)


def test_a_flow_overrides_the_defaults_section() -> None:
    config = dev_config()
    config["defaults"].update({"rpo": "2m", "outageBudget": "3d"})
    flow = parse_topology(config).flows[0]
    assert (flow.rpo_seconds, flow.outage_budget_seconds) == (120, 3 * 86400)
    config["flows"]["primary->dr"].update({"rpo": "90s", "outageBudget": "12h"})
    flow = parse_topology(config).flows[0]
    assert (flow.rpo_seconds, flow.outage_budget_seconds) == (90, 12 * 3600)


@pytest.mark.parametrize("value", ["0s", "-1h", "5", "five minutes", 300])
@pytest.mark.parametrize("key", ["rpo", "outageBudget"])
def test_a_duration_that_is_not_positive_is_a_problem_naming_the_key(key: str, value: Any) -> None:
    config = dev_config()
    config["flows"]["primary->dr"][key] = value
    found = [p for p in problems(config) if p.key == f"{FLOW}.{key}"]
    assert len(found) == 1, problems(config)
    assert "positive duration" in found[0].message and repr(value) in found[0].message
    assert '"5m"' in found[0].fix


def test_a_bad_duration_in_defaults_is_reported_once_at_its_key() -> None:
    config = dev_config()
    config["defaults"]["outageBudget"] = "soon"
    assert [p.key for p in problems(config)] == ["mm2:defaults.outageBudget"]


def flow_with(rpo: int, **settings: str) -> Flow:
    flow = parse_topology(dev_config()).flows[0]
    return replace(flow, rpo_seconds=rpo, settings={**flow.settings, **settings})


def test_the_default_rpo_is_measurable_with_mm2_defaults() -> None:
    assert rpo_warnings(parse_topology(dev_config()).flows[0]) == ()


def test_an_rpo_below_the_default_checkpoint_interval_warns_naming_both() -> None:
    (text,) = rpo_warnings(flow_with(30))
    assert "rpo 30s" in text and "emit.checkpoints.interval.seconds is MM2's default 60" in text
    assert "mm2:flows.primary->dr.rpo" in text and "Fix:" in text


def test_an_rpo_below_a_declared_heartbeat_interval_warns_too() -> None:
    texts = rpo_warnings(flow_with(30, **{"emit.heartbeats.interval.seconds": "45"}))
    assert len(texts) == 2
    assert "emit.heartbeats.interval.seconds=45" in texts[1] and "rpo 30s" in texts[1]


def test_an_rpo_at_the_declared_intervals_does_not_warn() -> None:
    flow = flow_with(10, **{"emit.checkpoints.interval.seconds": "10", "emit.heartbeats.interval.seconds": "10"})
    assert rpo_warnings(flow) == ()


def test_heartbeats_turned_off_measure_nothing_to_warn_about() -> None:
    flow = flow_with(
        20,
        **{
            "emit.heartbeats.enabled": "false",
            "emit.heartbeats.interval.seconds": "60",
            "emit.checkpoints.interval.seconds": "20",
        },
    )
    assert rpo_warnings(flow) == ()


@pytest.mark.parametrize(
    ("broker_config", "retention_ms"),
    [
        ({}, 7 * 86400 * 1000),
        ({"log.retention.hours": "24"}, 86400 * 1000),
        ({"log.retention.minutes": "90", "log.retention.hours": "24"}, 90 * 60_000),
        ({"log.retention.ms": "1000", "log.retention.minutes": "90"}, 1000),
        ({"log.retention.ms": "-1"}, -1),
        ({"log.retention.hours": "a day"}, None),
    ],
)
def test_a_clusters_default_retention_follows_kafkas_precedence(
    broker_config: dict[str, str], retention_ms: int | None
) -> None:
    assert cluster_retention_ms(broker_config) == retention_ms


# -- a switchover's drain against the workers' offset commits ------------------------------------


def _pair_topology(drain: str, **worker_config: str) -> Any:
    from tests.unit.topology.parse.test_pairs import pair_config

    config = pair_config(drainTimeout=drain)
    if worker_config:
        config["workerGroups"]["mm2"]["workerConfig"] = worker_config
    return parse_topology(config)


def test_a_drain_bound_under_two_offset_commits_warns_with_the_fix() -> None:
    from components.topology.objectives import drain_warnings

    topology = _pair_topology("9s")
    (warning,) = drain_warnings(topology.pairs[0], topology)
    assert warning.startswith("failover primary<->dr: drainTimeout 9s is shorter than two offset commits of worker")
    assert "(offset.flush.interval.ms 5000)" in warning and "drainTimeout to at least 10s" in warning
    ok = _pair_topology("10s")
    assert drain_warnings(ok.pairs[0], ok) == ()
    slow = _pair_topology("30s", **{"offset.flush.interval.ms": "20000"})
    assert "drainTimeout to at least 40s" in drain_warnings(slow.pairs[0], slow)[0]
