"""components/monitoring/broker_rules.py: each broker alert fires after its `for` on the series a
broker's exporter serves, and not before, checked by promtool (Debian's prometheus package)."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.monitoring.broker_rules import CRITICAL_FOR, UNDER_REPLICATED_FOR, broker_alert_groups
from components.monitoring.jmx_exporter import ACTIVE_CONTROLLERS, OFFLINE_PARTITIONS, UNDER_MIN_ISR, UNDER_REPLICATED
from tests.unit.monitoring.promtool import RuleFile, case

SEL = 'namespace="mm2",mm2_cluster="us"'
RULES = RuleFile(broker_alert_groups("us", SEL))


def series(metric: str, pod: int) -> str:
    return f'{metric}{{namespace="mm2",mm2_cluster="us",pod="us-kafka-{pod}"}}'


def minutes(duration: str) -> int:
    assert duration.endswith("m"), duration
    return int(duration[:-1])


def healthy(**bad: str) -> dict[str, str]:
    """Three brokers' series over 10 minutes, sampled every 15 s: all well but what `bad` says
    (metric -> broker 1's values)."""
    values = {UNDER_REPLICATED: "0x40", UNDER_MIN_ISR: "0x40", OFFLINE_PARTITIONS: "0x40"}
    out = {series(m, p): values[m] for m in values for p in range(3)}
    out |= {series(ACTIVE_CONTROLLERS, p): ("1x40" if p == 0 else "0x40") for p in range(3)}
    for metric, value in bad.items():
        out[series(metric, 1)] = value
    return out


@pytest.mark.parametrize(
    ("alert", "metric", "for_", "value"),
    [
        ("KafkaUnderReplicatedPartitions", UNDER_REPLICATED, UNDER_REPLICATED_FOR, "4"),
        ("KafkaUnderMinIsrPartitions", UNDER_MIN_ISR, CRITICAL_FOR, "4"),
        ("KafkaOfflinePartitions", OFFLINE_PARTITIONS, CRITICAL_FOR, "4"),
    ],
)
def test_a_partition_alert_fires_after_its_for_and_not_before(
    tmp_path: Path, alert: str, metric: str, for_: str, value: str
) -> None:
    # Broker 1 reports 4 such partitions from minute 1 on (samples every 15 s).
    started = 1
    checks = [
        {"eval_time": f"{started + minutes(for_)}m", "alertname": alert, "exp_alerts": [RULES.expected(alert, value)]},
        {"eval_time": f"{started + minutes(for_) - 1}m", "alertname": alert, "exp_alerts": []},
        {"eval_time": f"{started}m", "alertname": alert, "exp_alerts": []},
    ]
    RULES.assert_tests(tmp_path, [case(healthy(**{metric: "0x3 4x36"}), checks)])


@pytest.mark.parametrize(("active", "value"), [("1x40", "2"), ("0x40", "0")])
def test_active_controllers_fire_when_not_exactly_one(tmp_path: Path, active: str, value: str) -> None:
    # Broker 1 claims the controller too (two active), or broker 0 stops claiming it (none).
    bad = healthy(**{ACTIVE_CONTROLLERS: active})
    if value == "0":
        bad[series(ACTIVE_CONTROLLERS, 0)] = "0x40"
        bad[series(ACTIVE_CONTROLLERS, 1)] = "0x40"
    fired = RULES.expected("KafkaActiveControllers", value)
    checks = [
        {"eval_time": f"{minutes(CRITICAL_FOR) + 1}m", "alertname": "KafkaActiveControllers", "exp_alerts": [fired]},
    ]
    RULES.assert_tests(tmp_path, [case(bad, checks)])
    quiet = [{"eval_time": "5m", "alertname": "KafkaActiveControllers", "exp_alerts": []}]
    RULES.assert_tests(tmp_path, [case(healthy(), quiet)])


def test_no_broker_scraped_at_all_is_no_active_controller(tmp_path: Path) -> None:
    other = {'up{namespace="mm2",mm2_cluster="us"}': "0x40"}
    fired = RULES.expected("KafkaActiveControllers", "0")
    checks = [{"eval_time": "3m", "alertname": "KafkaActiveControllers", "exp_alerts": [fired]}]
    RULES.assert_tests(tmp_path, [case(other, checks)])


def test_the_rules_pass_promtool_check_and_the_timing_tests_can_fail(tmp_path: Path) -> None:
    assert RULES.check(tmp_path).returncode == 0
    early = [{"eval_time": "2m", "alertname": "KafkaUnderMinIsrPartitions", "exp_alerts": []}]
    out = RULES.test(tmp_path, [case(healthy(**{UNDER_MIN_ISR: "0x3 4x36"}), early)])
    assert out.returncode != 0 and "KafkaUnderMinIsrPartitions" in out.stdout + out.stderr
