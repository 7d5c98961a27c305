"""TopicProvider against an in-memory Admin client: preview checks, diffs, and every operation."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AlterConfigOpType

from components.kafka import topic
from components.kafka.topic import TopicError, TopicProvider

from .fakes import BOOTSTRAP, FakeAdmin, kafka_error, secret


def props(**over: Any) -> dict[str, Any]:
    return {
        "cluster": "primary",
        "bootstrap": BOOTSTRAP,
        "name": "orders",
        "partitions": 3,
        "replication_factor": 1,
        "config": {"retention.ms": "604800000"},
        "client": {"sasl.username": "admin", "sasl.password": "s3cret"},
        **over,
    }


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeAdmin:
    admin = FakeAdmin()
    monkeypatch.setattr(topic, "_admin", admin.factory)
    return admin


def with_orders(fake: FakeAdmin, partitions: int = 3, rf: int = 1, **config: str) -> None:
    fake.topics["orders"] = [[1 + r for r in range(rf)] for _ in range(partitions)]
    fake.configs["orders"] = {"retention.ms": "604800000", "cleanup.policy": "delete", **config}


# -- check ---------------------------------------------------------------------------------------


def test_check_accepts_a_new_topic_and_a_partition_increase() -> None:
    assert TopicProvider().check({}, props()).failures == []
    result = TopicProvider().check(props(), props(partitions=6))
    assert (result.failures, result.inputs) == ([], props(partitions=6))


@pytest.mark.parametrize("partitions", [0, -1, None])
def test_check_refuses_fewer_than_one_partition(partitions: int | None) -> None:
    news = (
        props(partitions=partitions)
        if partitions is not None
        else {k: v for k, v in props().items() if k != "partitions"}
    )
    failures = TopicProvider().check({}, news).failures
    assert [f.property for f in failures] == ["partitions"]
    assert "'orders' on cluster 'primary'" in failures[0].reason


@pytest.mark.parametrize(("key", "value"), [("partitions", "three"), ("replication_factor", None)])
def test_check_names_the_key_of_a_count_that_is_not_a_whole_number(key: str, value: Any) -> None:
    failures = TopicProvider().check(props(), props(**{key: value})).failures
    assert [f.property for f in failures] == [key]
    assert repr(value) in failures[0].reason and "Fix:" in failures[0].reason


def test_check_refuses_fewer_partitions_than_the_state_holds() -> None:
    failures = TopicProvider().check(props(partitions=6), props(partitions=3)).failures
    assert [f.property for f in failures] == ["partitions"]
    assert "(6 -> 3)" in failures[0].reason
    assert "cluster 'primary'" in failures[0].reason


def test_check_refuses_a_replication_factor_change_in_either_direction() -> None:
    for old, new in ((1, 3), (3, 1)):
        failures = TopicProvider().check(props(replication_factor=old), props(replication_factor=new)).failures
        assert [f.property for f in failures] == ["replication_factor"]
        assert "kafka-reassign-partitions" in failures[0].reason


# -- diff ----------------------------------------------------------------------------------------


def test_diff_of_identical_props_has_no_changes_even_with_a_secret_wrapped_client() -> None:
    news = props(client=secret(props()["client"]))
    result = TopicProvider().diff("primary/orders", props(), news)
    assert (result.changes, result.replaces) == (False, [])


@pytest.mark.parametrize(
    "change",
    [{"partitions": 6}, {"config": {"retention.ms": "1"}}, {"config": {}}, {"client": {"sasl.password": "rotated"}}],
)
def test_diff_of_partitions_config_or_client_is_an_in_place_update(change: dict[str, Any]) -> None:
    result = TopicProvider().diff("primary/orders", props(), props(**change))
    assert (result.changes, result.replaces) == (True, [])


@pytest.mark.parametrize("change", [{"name": "payments"}, {"bootstrap": "dr-0:9092"}])
def test_diff_of_name_or_bootstrap_replaces_deleting_first(change: dict[str, Any]) -> None:
    result = TopicProvider().diff("primary/orders", props(), props(**change))
    assert (result.changes, result.replaces, result.delete_before_replace) == (True, list(change), True)


# -- create --------------------------------------------------------------------------------------


def test_create_makes_the_topic_with_the_configured_shape(fake: FakeAdmin) -> None:
    result = TopicProvider().create(props())
    created = [arg for method, arg in fake.calls if method == "create_topics"]
    assert [(t.topic, t.num_partitions, t.replication_factor, t.config) for t in created] == [
        ("orders", 3, 1, {"retention.ms": "604800000"})
    ]
    assert (result.id, result.outs) == ("primary/orders", props())
    assert fake.clients[-1]["client"] == props()["client"]


def test_create_adopts_a_topic_that_already_has_the_configured_partitions(fake: FakeAdmin) -> None:
    with_orders(fake)
    assert TopicProvider().create(props()).id == "primary/orders"
    assert [m for m, _ in fake.calls if m == "create_topics"] == []


def test_create_refuses_to_adopt_a_topic_with_other_partitions(fake: FakeAdmin) -> None:
    with_orders(fake, partitions=12)
    with pytest.raises(TopicError, match=r"'orders' on cluster 'primary' already exists with 12 partitions.*says 3"):
        TopicProvider().create(props())
    assert [m for m, _ in fake.calls if m == "create_topics"] == []


def test_create_does_not_take_a_metadata_error_for_a_missing_topic(fake: FakeAdmin) -> None:
    fake.topic_errors["orders"] = KafkaError.TOPIC_AUTHORIZATION_FAILED
    with pytest.raises(TopicError, match=r"'orders' on cluster 'primary': the cluster could not describe it.*Fix:"):
        TopicProvider().create(props())
    assert [m for m, _ in fake.calls if m == "create_topics"] == []


def test_a_refused_create_is_a_topic_error_naming_the_cluster(fake: FakeAdmin) -> None:
    fake.failures["create_topics"] = kafka_error(KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(TopicError, match=r"cluster 'primary'.*create failed.*TOPIC_AUTHORIZATION_FAILED") as info:
        TopicProvider().create(props())
    assert isinstance(info.value.__cause__, Exception)


# -- update --------------------------------------------------------------------------------------


def test_update_adds_partitions_without_touching_the_config(fake: FakeAdmin) -> None:
    result = TopicProvider().update("primary/orders", props(), props(partitions=6))
    assert fake.calls == [("create_partitions", ("orders", 6))]
    assert result.outs == props(partitions=6)


def test_update_sets_changed_keys_and_deletes_removed_ones(fake: FakeAdmin) -> None:
    olds = props(config={"retention.ms": "604800000", "cleanup.policy": "compact"})
    news = props(config={"retention.ms": "86400000", "min.insync.replicas": "2"})
    TopicProvider().update("primary/orders", olds, news)
    [(method, resource)] = fake.calls
    ops = {e.name: (e.incremental_operation, e.value) for e in resource.incremental_configs}
    assert (method, resource.name) == ("incremental_alter_configs", "orders")
    assert ops == {
        "retention.ms": (AlterConfigOpType.SET, "86400000"),
        "min.insync.replicas": (AlterConfigOpType.SET, "2"),
        "cleanup.policy": (AlterConfigOpType.DELETE, None),
    }


def test_update_of_the_client_alone_asks_nothing_but_keeps_the_new_credentials(fake: FakeAdmin) -> None:
    news = props(client={"sasl.username": "admin", "sasl.password": "rotated"})
    assert TopicProvider().update("primary/orders", props(), news).outs == news
    assert fake.calls == []
    assert fake.clients[-1]["client"]["sasl.password"] == "rotated"


@pytest.mark.parametrize(
    ("method", "change", "step"),
    [
        ("create_partitions", {"partitions": 6}, "adding partitions"),
        ("incremental_alter_configs", {"config": {"retention.ms": "1"}}, "changing its config"),
    ],
)
def test_a_refused_update_is_a_topic_error_naming_the_step(
    fake: FakeAdmin, method: str, change: dict[str, Any], step: str
) -> None:
    fake.failures[method] = kafka_error(KafkaError.POLICY_VIOLATION)
    with pytest.raises(TopicError, match=rf"'orders' on cluster 'primary': {step} failed.*POLICY_VIOLATION.*Fix:"):
        TopicProvider().update("primary/orders", props(), props(**change))


# -- read ----------------------------------------------------------------------------------------


def test_read_of_a_topic_as_configured_reports_the_state_unchanged(fake: FakeAdmin) -> None:
    with_orders(fake)
    result = TopicProvider().read("primary/orders", props())
    assert (result.id, result.outs) == ("primary/orders", props())


def test_read_reports_partitions_replication_and_config_changed_by_hand(fake: FakeAdmin) -> None:
    with_orders(fake, partitions=8, rf=3, **{"retention.ms": "1000"})
    outs = TopicProvider().read("primary/orders", props()).outs
    # Only the configured keys are compared: broker defaults such as cleanup.policy stay out.
    assert outs == props(partitions=8, replication_factor=3, config={"retention.ms": "1000"})


def test_read_skips_the_config_request_when_no_key_is_configured(fake: FakeAdmin) -> None:
    with_orders(fake)
    assert TopicProvider().read("primary/orders", props(config={})).outs == props(config={})
    assert [m for m, _ in fake.calls if m == "describe_configs"] == []


def test_read_of_a_topic_deleted_by_hand_drops_it_from_the_state(fake: FakeAdmin) -> None:
    result = TopicProvider().read("primary/orders", props())
    assert (result.id, result.outs) == ("", {})


def test_read_keeps_a_topic_it_may_not_describe_and_waits_the_read_timeout_only(fake: FakeAdmin) -> None:
    fake.topic_errors["orders"] = KafkaError.TOPIC_AUTHORIZATION_FAILED
    result = TopicProvider().read("primary/orders", props())
    assert (result.id, result.outs) == ("primary/orders", props())
    assert ("list_topics", topic.READ_TIMEOUT_S) in fake.calls


def test_read_leaves_the_state_as_it_was_when_the_cluster_does_not_answer(fake: FakeAdmin) -> None:
    fake.unreachable.add("list_topics")
    result = TopicProvider().read("primary/orders", props())
    assert (result.id, result.outs) == ("primary/orders", props())


# -- delete --------------------------------------------------------------------------------------


def test_delete_removes_the_topic(fake: FakeAdmin) -> None:
    TopicProvider().delete("primary/orders", props())
    assert fake.calls == [("delete_topics", "orders")]


def test_delete_of_a_topic_already_gone_succeeds(fake: FakeAdmin) -> None:
    fake.failures["delete_topics"] = kafka_error(KafkaError.UNKNOWN_TOPIC_OR_PART)
    TopicProvider().delete("primary/orders", props())
    assert fake.calls == [("delete_topics", "orders")]


def test_a_delete_on_a_cluster_that_does_not_answer_says_so_in_one_line_with_the_fix(fake: FakeAdmin) -> None:
    from components.kafka.topic import ClusterUnreachable

    fake.failures["delete_topics"] = kafka_error(KafkaError._TRANSPORT)
    fake.unreachable = {"list_topics"}
    with pytest.raises(ClusterUnreachable) as raised:
        TopicProvider().delete("primary/orders", props())
    said = str(raised.value)
    assert said.startswith("topic 'orders' on cluster 'primary': not deleted: the cluster at ")
    assert "does not answer" in said and "pulumi state delete" in said and "\n" not in said
    assert ClusterUnreachable.refusal  # the provider host shows it without a traceback


def test_a_refused_delete_is_a_topic_error_naming_the_cluster(fake: FakeAdmin) -> None:
    fake.failures["delete_topics"] = kafka_error(KafkaError.TOPIC_DELETION_DISABLED)
    with pytest.raises(
        TopicError, match=r"topic 'orders' on cluster 'primary': delete failed.*TOPIC_DELETION_DISABLED"
    ):
        TopicProvider().delete("primary/orders", props())
