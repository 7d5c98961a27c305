"""The alert rules of a Kafka cluster's brokers, from the metrics their exporter serves
(`components/monitoring/jmx_exporter.py`). Pure: no pulumi, no I/O.

- KafkaUnderMinIsrPartitions: a partition has fewer in-sync replicas than min.insync.replicas,
  so every acks=all write to it fails (NOT_ENOUGH_REPLICAS): at once, critical.
- KafkaOfflinePartitions: a partition has no leader: nothing can be read or written there.
- KafkaActiveControllers: the cluster does not have exactly one active controller.
- KafkaUnderReplicatedPartitions: a partition's ISR is short of its replicas for longer than a
  broker restart takes: a broker down, or a follower that cannot keep up. A roll shows it briefly.
"""

from __future__ import annotations

from typing import Any

from components.monitoring.jmx_exporter import ACTIVE_CONTROLLERS, OFFLINE_PARTITIONS, UNDER_MIN_ISR, UNDER_REPLICATED
from components.monitoring.rules import alert_rule

# Longer than one broker's restart in a roll (components/platform/kubernetes/roll_plan.py waits
# for its partitions to be in sync again before the next), so a healthy roll stays quiet.
UNDER_REPLICATED_FOR = "3m"
CRITICAL_FOR = "1m"


def broker_alert_groups(
    cluster: str, sel: str, *, under_replicated_for: str = UNDER_REPLICATED_FOR, critical_for: str = CRITICAL_FOR
) -> list[dict[str, Any]]:
    """The rule group of cluster `cluster`'s brokers; `sel` are the PromQL matchers (no braces)
    of their scrape targets; the `for` times of the under-replicated alert and the critical ones."""
    base = {"mm2_cluster": cluster}
    critical, warning = {**base, "severity": "critical"}, {**base, "severity": "warning"}
    next_step = f"`bin/status` names the cluster's down brokers and their nodes; `kubectl get pods` for {cluster}'s."
    rules = [
        alert_rule(
            "KafkaUnderMinIsrPartitions",
            f"sum({UNDER_MIN_ISR}{{{sel}}}) > 0",
            critical_for,
            critical,
            f"{cluster}: partitions below min.insync.replicas",
            f"{{{{ $value }}}} partition(s) of {cluster} have fewer in-sync replicas than min.insync.replicas: "
            f"acks=all writes to them fail with NOT_ENOUGH_REPLICAS. {next_step}",
        ),
        alert_rule(
            "KafkaOfflinePartitions",
            f"max({OFFLINE_PARTITIONS}{{{sel}}}) > 0",
            critical_for,
            critical,
            f"{cluster}: partitions without a leader",
            f"{{{{ $value }}}} partition(s) of {cluster} have no leader: nothing can be read from or written to "
            f"them until a broker holding a replica is back. {next_step}",
        ),
        alert_rule(
            "KafkaActiveControllers",
            # No series at all (every broker unscraped) is no active controller either.
            f"(sum({ACTIVE_CONTROLLERS}{{{sel}}}) or on() vector(0)) != 1",
            critical_for,
            critical,
            f"{cluster}: not exactly one active controller",
            f"{cluster} has {{{{ $value }}}} active KRaft controllers: without one, no metadata changes (leaders, "
            f"topics, ISR); with two, the quorum is split. {next_step}",
        ),
        alert_rule(
            "KafkaUnderReplicatedPartitions",
            f"sum({UNDER_REPLICATED}{{{sel}}}) > 0",
            under_replicated_for,
            warning,
            f"{cluster}: under-replicated partitions",
            f"{{{{ $value }}}} partition(s) of {cluster} have been short of in-sync replicas for "
            f"{under_replicated_for}: one more broker down and their writes fail. {next_step}",
        ),
    ]
    return [{"name": f"kafka-{cluster}", "rules": rules}]
