"""retention_rules: dr-retention-outlasts-outage-budget (mandatory, disasterRecovery flows) and
retention-outlasts-outage-budget (advisory, the other flows), with stacks that pass and fail."""

from __future__ import annotations

from typing import Any

import pytest
from retention_rules import dr_retention_outlasts_outage_budget, duration_text, retention_outlasts_outage_budget

from .builders import UNKNOWN, UNKNOWN_MAP, cluster, connector, flow, messages, resource, run_stack

DAY_MS = 86_400_000


def kafka_cluster(alias: str, log_retention_ms: Any = None) -> Any:
    res = cluster(alias)
    if log_retention_ms is None:
        return res
    props = {k: res.props[k] for k in ("alias", "platform", "brokers", "datacenter", "securityProtocol")}
    return resource(res.resource_type, res.name, {**props, "logRetentionMs": log_retention_ms})


def topic(cluster_alias: str, name: str, config: Any = None) -> Any:
    return resource(
        "pulumi-python:dynamic/kafka:Topic",
        f"kafka-{cluster_alias}-topic-{name}",
        {"cluster": cluster_alias, "name": name, "partitions": 3, "replication_factor": 3, "config": config or {}},
    )


def dr_flow(budget_seconds: Any = 86400, disaster_recovery: bool = True, **settings: str | None) -> list[Any]:
    """Flow a->b with its outage budget, and its source connector (topics "orders, payments")."""
    component = flow("a", "b", disaster_recovery=disaster_recovery)
    props = {k: component.props[k] for k in component.props}
    component = resource(component.resource_type, component.name, {**props, "outageBudgetSeconds": budget_seconds})
    return [component, connector("a", "b", "source", parent=component, **settings)]


def stack(*topics: Any, log_retention_ms: Any = None, **flow_args: Any) -> list[Any]:
    return [kafka_cluster("a", log_retention_ms), kafka_cluster("b"), *dr_flow(**flow_args), *topics]


def test_a_topic_kept_shorter_than_the_budget_stops_a_dr_flow_naming_topic_durations_and_fix() -> None:
    orders = topic("a", "orders", {"retention.ms": str(12 * 3_600_000)})
    resources = stack(orders, topic("a", "payments", {"retention.ms": str(3 * DAY_MS)}))
    found = run_stack(dr_retention_outlasts_outage_budget, resources)
    assert [where for _, where in found] == [orders.urn]
    (text,) = messages(found)
    assert "Topic orders on cluster a, replicated by flow a->b (disasterRecovery), keeps records for 12h" in text
    assert "retention.ms=43200000 in the topic's config" in text and "outage budget of 1d" in text
    assert "Fix: set retention.ms above 86400000 (1d) in mm2:clusters.a.topics.orders.config" in text
    assert "or lower mm2:flows.a->b.outageBudget below 12h" in text
    assert run_stack(retention_outlasts_outage_budget, resources) == []


def test_the_same_topic_on_a_flow_not_marked_dr_is_an_advisory() -> None:
    resources = stack(topic("a", "orders", {"retention.ms": "3600000"}), disaster_recovery=False)
    assert run_stack(dr_retention_outlasts_outage_budget, resources) == []
    (text,) = messages(run_stack(retention_outlasts_outage_budget, resources))
    assert "keeps records for 1h" in text and "(disasterRecovery)" not in text


def test_retention_equal_to_the_budget_does_not_outlast_it() -> None:
    resources = stack(topic("a", "orders", {"retention.ms": str(DAY_MS)}))
    assert len(run_stack(dr_retention_outlasts_outage_budget, resources)) == 1
    resources = stack(topic("a", "orders", {"retention.ms": str(DAY_MS + 1)}))
    assert run_stack(dr_retention_outlasts_outage_budget, resources) == []


def test_without_retention_ms_the_clusters_default_then_kafkas_seven_days_count() -> None:
    orders = topic("a", "orders")
    found = run_stack(dr_retention_outlasts_outage_budget, stack(orders, log_retention_ms=6 * 3_600_000))
    assert "keeps records for 6h (cluster a's default from its brokerConfig)" in messages(found)[0]
    assert run_stack(dr_retention_outlasts_outage_budget, stack(orders)) == []  # 7d > 1d
    (text,) = messages(run_stack(dr_retention_outlasts_outage_budget, stack(orders, budget_seconds=8 * 86400)))
    assert "keeps records for 7d (Kafka's default log.retention.hours=168)" in text and "budget of 8d" in text


@pytest.mark.parametrize(
    "config",
    [
        {"retention.ms": "-1"},  # unlimited
        {"cleanup.policy": "compact", "retention.ms": "1000"},  # records expire by key, not age
        {"retention.ms": UNKNOWN},
        UNKNOWN_MAP,
    ],
)
def test_unlimited_compacted_or_unknown_retention_is_not_judged(config: Any) -> None:
    assert run_stack(dr_retention_outlasts_outage_budget, stack(topic("a", "orders", config))) == []


def test_compact_and_delete_still_expires_by_age() -> None:
    config = {"cleanup.policy": "compact,delete", "retention.ms": "1000"}
    assert len(run_stack(dr_retention_outlasts_outage_budget, stack(topic("a", "orders", config)))) == 1


def test_only_topics_the_flow_replicates_from_its_source_are_judged() -> None:
    short = {"retention.ms": "1000"}
    resources = stack(
        topic("a", "audit", short),  # not in the flow's topics
        topic("b", "orders", short),  # on the target, not the source
        topic("a", "payments", short),
        **{"topics.exclude": "payments"},
    )
    assert run_stack(dr_retention_outlasts_outage_budget, resources) == []


def test_a_flow_without_a_declared_budget_or_an_unknown_filter_is_skipped() -> None:
    short = topic("a", "orders", {"retention.ms": "1000"})
    assert run_stack(dr_retention_outlasts_outage_budget, stack(short, budget_seconds=UNKNOWN)) == []
    older = [r for r in stack(short) if r.resource_type != "mm2:index:ReplicationFlow"]
    assert run_stack(dr_retention_outlasts_outage_budget, [flow("a", "b", disaster_recovery=True), *older]) == []
    assert run_stack(dr_retention_outlasts_outage_budget, stack(short, topics=UNKNOWN)) == []


@pytest.mark.parametrize(("ms", "text"), [(DAY_MS, "1d"), (3_600_000, "1h"), (90_000, "90s"), (1500, "1500ms")])
def test_durations_read_in_their_largest_exact_unit(ms: int, text: str) -> None:
    assert duration_text(ms) == text
