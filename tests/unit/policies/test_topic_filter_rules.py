"""topic_filter_rules: internal-topics-excluded, with input that passes and input that fails, asserting the
exact findings."""

from __future__ import annotations

from topic_filter_rules import internal_topics_excluded

from .builders import (
    UNKNOWN,
    connector,
    messages,
    run_stack,
)

# --- internal-topics-excluded ---------------------------------------------------------------


def test_replicate_everything_with_mm2_default_excludes_leaks_connect_and_heartbeat_topics() -> None:
    resources = [connector("a", "b", "source", topics=".*", **{"topics.exclude": None})]
    [(message, where)] = run_stack(internal_topics_excluded, resources)
    assert message.startswith(
        "Source connector mm2-a-to-b-source (flow a->b) would replicate internal topics "
        "connect-configs, connect-offsets, connect-status, heartbeats, b.heartbeats: topics='.*' matches them"
    )
    assert r"Fix: add connect-.*, heartbeats, .*\.heartbeats to topics.exclude for flow a->b" in message
    assert where == resources[0].urn


def test_no_exclude_at_all_leaks_kafka_internal_topics() -> None:
    resources = [connector("a", "b", "source", topics=".*", **{"topics.exclude": ""})]
    [message] = messages(run_stack(internal_topics_excluded, resources))
    assert "__consumer_offsets, __transaction_state, mm2-offset-syncs.b.internal" in message
    assert r"__.*, .*[\-\.]internal, connect-.*" in message


def test_explicit_topics_or_complete_excludes_pass() -> None:
    complete = r"__.*, .*[\-\.]internal, connect-.*, heartbeats, .*\.heartbeats"
    resources = [
        connector("a", "b", "source"),  # topics: orders, payments
        connector("b", "a", "source", topics=".*", **{"topics.exclude": complete}),
        connector("c", "a", "source", topics=".*", **{"topic.filter.class": "com.example.MyFilter"}),
        connector("d", "a", "source", topics="[", **{"topics.exclude": ""}),  # won't compile: not judged
        connector("e", "a", "source", topics=UNKNOWN),
    ]
    assert run_stack(internal_topics_excluded, resources) == []


def test_internal_topic_samples_are_configurable() -> None:
    resources = [connector("a", "b", "source", topics="orders.*", **{"topics.exclude": ""})]
    assert run_stack(internal_topics_excluded, resources) == []
    [message] = messages(
        run_stack(internal_topics_excluded, resources, {"internalTopics": ["orders-{source}-internal"]})
    )
    assert "internal topics orders-a-internal:" in message
