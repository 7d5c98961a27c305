"""The alert rules as every stack gets them: rendered with their default thresholds (what
`bin/prometheus-config` writes, `rule_groups`, and the Kubernetes PrometheusRule with default
`alerts` settings), they pass `promtool check rules`, and `promtool test rules` shows each alert
firing once its condition has held for the rule's own `for:` and not one evaluation before.

The times come from `DEFAULT_THRESHOLDS`, so a changed default is proven again, not assumed. A
windowed condition (no heartbeat or record in `window`) starts at the first evaluation whose window
no longer holds the last change; the samples are 10 s apart and the evaluations 15 s, so no window
edge falls on a sample and Prometheus 2 (windows closed on the left) and 3 (open) agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.monitoring.jmx_exporter import (
    CHECKPOINT_LATENCY_MAX,
    CONNECTOR_STATUS,
    FAILED_TASK_COUNT,
    REPLICATION_LATENCY_MAX,
)
from components.monitoring.prometheus import DEFAULT_THRESHOLDS, rule_groups
from components.monitoring.rules import STALE_AFTER_S
from components.platform.kubernetes.monitoring import alert_rules
from components.platform.settings import AlertSettings
from components.topology import parse_topology
from components.topology.objectives import parse_duration

from ..platform.helpers import prod_topology
from ..topology.helpers import dev_config, example, example_names
from . import promtool as pt
from .promtool import RuleFile, case

D = DEFAULT_THRESHOLDS
STEP = int(pt.EVALUATION_INTERVAL.removesuffix("s"))  # between rule evaluations, in seconds
ONSET = 135  # a gauge's condition starts with its 10th sample, 15 s apart
LAST_CHANGE = 300  # a windowed series' last rise, samples 10 s apart
DEV = parse_topology(dev_config())
DEFAULT_RULES = RuleFile(rule_groups(DEV))
[DEV_FLOW] = DEV.enabled_flows()


def seconds(duration: str) -> int:
    found = parse_duration(duration)
    assert found is not None, duration
    return found


def first_evaluation_from(t: int) -> int:
    """The first rule evaluation at or after `t` seconds."""
    return -(-t // STEP) * STEP


def fires_after(alert: str, fired: dict[str, Any], onset: int, for_: str) -> list[dict[str, Any]]:
    """Checks that `alert`, whose condition holds from the evaluation at `onset` on, is not firing
    at the last evaluation before it held for `for_`, and fires (as `fired`) at that evaluation."""
    held = onset + seconds(for_)
    return [
        {"eval_time": f"{held - STEP}s", "alertname": alert, "exp_alerts": []},
        {"eval_time": f"{held}s", "alertname": alert, "exp_alerts": [fired]},
    ]


def gauge(healthy: float, bad: float, for_: str) -> str:
    """`healthy` until ONSET, `bad` from then on, past the rule's `for`."""
    return f"{healthy}x{ONSET // STEP - 1} {bad}x{seconds(for_) // STEP + 4}"


@pytest.mark.parametrize(
    "rules",
    [
        pytest.param(lambda: rule_groups(DEV), id="prometheus-config-dev"),
        *(pytest.param(lambda n=n: rule_groups(parse_topology(example(n))), id=n) for n in example_names()),
        pytest.param(
            lambda: [
                g
                for wg in prod_topology().worker_groups.values()
                for g in alert_rules(wg, prod_topology(), "mm2", AlertSettings(), lag_exporter=True)
            ],
            id="kubernetes-prometheusrule-prod",
        ),
    ],
)
def test_default_rules_pass_promtool_check(tmp_path: Path, rules: Any) -> None:
    groups = rules()
    assert groups and all(g["rules"] for g in groups)
    out = RuleFile(groups).check(tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr


RPO = DEV_FLOW.rpo_seconds
LATENCY = f'{REPLICATION_LATENCY_MAX}{{{pt.W},source="primary",target="dr",topic="primary.orders",partition="0"}}'
CHECKPOINT = f'{CHECKPOINT_LATENCY_MAX}{{{pt.W},source="primary",target="dr",group="billing",partition="0"}}'
GAUGES = {
    # alert: (series, healthy, bad, its `for`, the alert's {{ $value }}, the labels it adds)
    "MM2WorkerGroupDown": (f'up{{job="mm2-workers-mm2",{pt.W},instance="127.0.0.1:19410"}}', 1, 0, D.down_for, "", {}),
    "MM2ReplicationLatencyHigh": (
        LATENCY, D.replication_latency_ms, D.replication_latency_ms + 1, D.latency_for,
        str(D.replication_latency_ms + 1), {"source": "primary", "target": "dr", "topic": "primary.orders"},
    ),
    "MM2CheckpointLatencyHigh": (
        CHECKPOINT, D.checkpoint_latency_ms, D.checkpoint_latency_ms + 1, D.latency_for,
        str(D.checkpoint_latency_ms + 1), {"source": "primary", "target": "dr", "group": "billing"},
    ),
    "MM2ConnectorFailed": (
        f'{CONNECTOR_STATUS}{{{pt.W},connector="mm2-primary-to-dr-checkpoint",status="failed"}}', 0, 1, D.failure_for,
        "", {"connector": "mm2-primary-to-dr-checkpoint"},
    ),
    "MM2ConnectorTasksFailed": (
        f'{FAILED_TASK_COUNT}{{{pt.W},connector="mm2-primary-to-dr-source"}}', 0, 1, D.failure_for, "1",
        {"connector": "mm2-primary-to-dr-source"},
    ),
    "MM2FlowLagAboveRPO": (pt.FLOW_LAG, RPO, RPO + 1, D.lag_for, str(RPO + 1), {}),
    "MM2LagExporterDown": (f"up{{{pt.LAG}}}", 1, 0, D.down_for, "", {}),
}  # fmt: skip


@pytest.mark.parametrize("alert", sorted(GAUGES))
def test_a_gauge_alert_fires_after_its_default_for_and_not_before(tmp_path: Path, alert: str) -> None:
    # At the threshold (latency, lag at the RPO) is healthy: only above it counts.
    series, healthy, bad, for_, value, labels = GAUGES[alert]
    fired = DEFAULT_RULES.expected(alert, value, **labels)
    DEFAULT_RULES.assert_tests(
        tmp_path, [case({series: gauge(healthy, bad, for_)}, fires_after(alert, fired, ONSET, for_))]
    )


def rising_until_last_change(samples_after: int) -> str:
    """A counter rising by 10 every 10 s sample (one a second) until LAST_CHANGE, then flat."""
    return f"0+10x{LAST_CHANGE // 10} {LAST_CHANGE}x{samples_after}"


def windowed_onset() -> int:
    """The first evaluation whose window (D.window) holds only samples from LAST_CHANGE on."""
    edge = LAST_CHANGE - 10 + seconds(D.window)
    assert edge % STEP, "a window edge on an evaluation: Prometheus 2 and 3 would differ"
    return first_evaluation_from(edge)


def test_heartbeat_stale_fires_a_window_and_its_for_after_the_last_heartbeat(tmp_path: Path) -> None:
    onset = windowed_onset()
    stale = DEFAULT_RULES.expected("MM2HeartbeatStale", match={"flow": "primary->dr"})
    series = {pt.HEARTBEAT_WRITES: rising_until_last_change(90)}
    checks = fires_after("MM2HeartbeatStale", stale, onset, D.failure_for)
    DEFAULT_RULES.assert_tests(tmp_path, [case(series, checks, interval="10s")])


def test_replicated_heartbeats_stale_fires_a_window_and_its_for_after_the_last_one(tmp_path: Path) -> None:
    config = dev_config()
    config["flows"]["dr->primary"] = {**config["flows"]["primary->dr"], "topics": ["orders"]}
    into_dr = RuleFile(rule_groups(parse_topology(config)))
    only = {"target": "dr", "topic": "primary.heartbeats"}
    # Only this rule, so the other flow's heartbeat rules (no series here) cannot answer for it.
    single = RuleFile([{"name": "mm2-mm2", "rules": [into_dr.rule("MM2HeartbeatStale", **only)]}])
    stale = single.expected("MM2HeartbeatStale", match=only)
    series = {pt.RECORDS.format(w=pt.W, topic="primary.heartbeats"): rising_until_last_change(90)}
    checks = fires_after("MM2HeartbeatStale", stale, windowed_onset(), D.failure_for)
    single.assert_tests(tmp_path, [case(series, checks, interval="10s")])


def test_no_records_fires_a_window_and_its_for_after_replication_stopped(tmp_path: Path) -> None:
    series = {
        pt.MESSAGES_IN.format(topic="orders"): "0+10x120",  # the source keeps taking records
        pt.RECORDS.format(w=pt.W, topic="primary.orders"): rising_until_last_change(90),
    }
    fired = DEFAULT_RULES.expected("MM2NoRecordsWhileSourceProducing", match={"flow": "primary->dr"})
    checks = fires_after("MM2NoRecordsWhileSourceProducing", fired, windowed_onset(), D.failure_for)
    DEFAULT_RULES.assert_tests(tmp_path, [case(series, checks, interval="10s")])


def test_lag_readings_stale_fires_its_for_after_three_reading_intervals_without_one(tmp_path: Path) -> None:
    # A reading at every sample (10 s apart) until LAST_CHANGE, then none, and no read error: the
    # condition starts at the first evaluation whose newest sample is more than STALE_AFTER_S
    # (3 x POLL_S) younger than that last reading.
    first_stale_sample = LAST_CHANGE + (int(STALE_AFTER_S) // 10 + 1) * 10
    series = {pt.LAST_READ: f"0+10x{LAST_CHANGE // 10} {LAST_CHANGE}x60", pt.READ_ERRORS: "0x90"}
    fired = DEFAULT_RULES.expected("MM2LagReadingsStale")
    checks = fires_after("MM2LagReadingsStale", fired, first_evaluation_from(first_stale_sample), D.down_for)
    DEFAULT_RULES.assert_tests(tmp_path, [case(series, checks, interval="10s")])


@pytest.mark.parametrize(
    ("alert", "series", "labels"),
    [
        (
            "MM2RecordsExpiredBeforeReplication",
            pt.EXPIRED.format(lag=pt.LAG, flow=pt.FLOW, p=0, reason="deleted"),
            {"topic": "orders", "partition": "0", "reason": "deleted"},
        ),
        ("MM2SourceTopicRecreated", pt.RECREATIONS, {"topic": "orders"}),
    ],
)
def test_a_data_loss_alert_fires_at_once_and_resolves_a_window_later(
    tmp_path: Path, alert: str, series: str, labels: dict[str, str]
) -> None:
    # The counter rises at its sample at 310 s (10 s apart); its rule's `for` is 0s.
    rise = LAST_CHANGE + 10
    assert DEFAULT_RULES.rule(alert)["for"] == "0s"
    fired = DEFAULT_RULES.expected(alert, **labels)
    seen = first_evaluation_from(rise)
    gone = first_evaluation_from(rise + seconds(D.window))
    checks = [
        *fires_after(alert, fired, seen, "0s"),
        {"eval_time": f"{gone - STEP}s", "alertname": alert, "exp_alerts": [fired]},
        {"eval_time": f"{gone}s", "alertname": alert, "exp_alerts": []},
    ]
    DEFAULT_RULES.assert_tests(tmp_path, [case({series: f"0x{rise // 10 - 1} 40x90"}, checks, interval="10s")])


def test_the_default_timing_tests_can_fail(tmp_path: Path) -> None:
    # The worker group's last worker dies at ONSET: expecting the alert one evaluation early fails.
    alert = "MM2WorkerGroupDown"
    series, healthy, bad, for_, _, _ = GAUGES[alert]
    early = fires_after(alert, DEFAULT_RULES.expected(alert), ONSET - STEP, for_)
    out = DEFAULT_RULES.test(tmp_path, [case({series: gauge(healthy, bad, for_)}, early)])
    assert out.returncode != 0 and alert in out.stdout + out.stderr


def test_promtool_check_rules_can_fail(tmp_path: Path) -> None:
    broken = RuleFile([{"name": "mm2-mm2", "rules": [{"alert": "MM2Broken", "expr": "up >", "for": "1m"}]}])
    out = broken.check(tmp_path)
    assert out.returncode != 0 and "parse error" in out.stdout + out.stderr
