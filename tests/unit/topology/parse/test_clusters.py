"""components/topology/parse/clusters.py: cluster problems name the key path and the fix."""

from __future__ import annotations

import pytest

from components.topology import parse_topology
from tests.unit.topology.helpers import FLOW, dev_config, problem_at


def test_other_client_keys_still_belong_to_the_cluster_client_map() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {"producer.override.buffer.memory": "1"}
    problem = problem_at(config, f'{FLOW}.settings["producer.override.buffer.memory"]')
    assert "owned by a typed field" in problem.message
    assert "clusters.<target>.client" in problem.fix


def test_topic_spec_replication_factor_above_brokers() -> None:
    config = dev_config()
    config["clusters"]["primary"]["topics"]["orders"]["replicationFactor"] = 2
    problem_at(config, "mm2:clusters.primary.topics.orders.replicationFactor")


@pytest.mark.parametrize("partitions", [1_000_000_000, 10_001])
def test_topic_partitions_above_what_kafka_creates_name_the_key_and_the_limit(partitions: int) -> None:
    config = dev_config()
    config["clusters"]["primary"]["topics"]["orders"]["partitions"] = partitions
    problem = problem_at(config, "mm2:clusters.primary.topics.orders.partitions")
    assert f"{partitions} partitions" in problem.message and "10000" in problem.message
    assert "at most 10000" in problem.fix


def test_the_largest_topic_kafka_creates_is_accepted() -> None:
    config = dev_config()
    config["clusters"]["primary"]["topics"]["orders"]["partitions"] = 10_000
    topics = {t.name: t for t in parse_topology(config).clusters["primary"].topics}
    assert topics["orders"].partitions == 10_000


def test_topic_replication_factor_names_the_broker_count() -> None:
    config = dev_config()
    config["clusters"]["primary"]["topics"]["orders"]["replicationFactor"] = 40_000
    problem = problem_at(config, "mm2:clusters.primary.topics.orders.replicationFactor")
    assert "above the cluster's 1 broker(s)" in problem.message and "at most 1" in problem.fix


def test_external_cluster_requires_broker_count_and_bootstrap() -> None:
    config = dev_config()
    config["clusters"]["dr"] = {"platform": "external"}
    problem_at(config, "mm2:clusters.dr.brokers")
    problem_at(config, "mm2:clusters.dr.bootstrap")


@pytest.mark.parametrize(
    ("where", "key"),
    [
        ("settings", "basic.auth.password"),
        ("client", "producer.my.secret"),
    ],
)
def test_plain_text_secret_in_free_form_cluster_config(where: str, key: str) -> None:
    config = dev_config()
    config["clusters"]["primary"][where] = {key: "hunter2"}
    assert "plain text" in problem_at(config, f'mm2:clusters.primary.{where}["{key}"]').message


def test_local_cluster_without_port() -> None:
    config = dev_config()
    del config["clusters"]["dr"]["port"]
    assert "port+2i" in problem_at(config, "mm2:clusters.dr.port").fix


def test_client_override_without_client_prefix() -> None:
    config = dev_config()
    config["clusters"]["primary"]["client"] = {"fetch.min.bytes": "1"}
    assert "producer., consumer. or admin." in problem_at(config, 'mm2:clusters.primary.client["fetch.min.bytes"]').fix


def test_internal_bootstrap_needs_bootstrap_and_a_cluster_with_two_addresses() -> None:
    config = dev_config()
    config["clusters"]["primary"]["internalBootstrap"] = "x:9092"
    assert "one address" in problem_at(config, "mm2:clusters.primary.internalBootstrap").message
    config = dev_config()
    config["clusters"]["k8s"] = {"platform": "kubernetes", "internalBootstrap": "k8s-kafka-bootstrap.mm2.svc:9092"}
    assert "Set bootstrap too" in problem_at(config, "mm2:clusters.k8s.internalBootstrap").fix


def test_min_insync_replicas_equal_to_the_brokers_names_the_key_and_a_spare() -> None:
    config = dev_config()
    config["clusters"]["primary"]["brokers"] = 3
    config["clusters"]["primary"]["brokerConfig"] = {"min.insync.replicas": "3"}
    problem = problem_at(config, "mm2:clusters.primary.brokerConfig.min.insync.replicas")
    assert "one broker down" in problem.message and "acks=all" in problem.message
    assert problem.fix == "Use at most 2 (2 with 3 replicas is usual)."


def test_min_insync_replicas_of_a_topic_counts_its_replicas() -> None:
    config = dev_config()
    config["clusters"]["primary"]["brokers"] = 3
    orders = config["clusters"]["primary"]["topics"]["orders"]
    orders.update(replicationFactor=2, config={"min.insync.replicas": "3"})
    problem = problem_at(config, "mm2:clusters.primary.topics.orders.config.min.insync.replicas")
    assert "no write could ever be acknowledged" in problem.message and "at most 1" in problem.fix


def test_min_insync_replicas_with_a_spare_or_a_single_replica_is_accepted() -> None:
    config = dev_config()
    config["clusters"]["primary"]["brokers"] = 3
    config["clusters"]["primary"]["brokerConfig"] = {"min.insync.replicas": "2"}
    config["clusters"]["primary"]["topics"]["orders"].update(replicationFactor=1, config={"min.insync.replicas": "1"})
    assert parse_topology(config).clusters["primary"].broker_config["min.insync.replicas"] == "2"
