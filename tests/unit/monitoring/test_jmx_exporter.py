"""The JMX exporter's rules match the MBeans MM2, Connect and the brokers register (their
names as the exporter formats them: `domain<key=value, ...><>attribute`)."""

from __future__ import annotations

import json
import re

import pytest

from components.monitoring.jmx_exporter import jmx_exporter_config, jmx_exporter_text

BEANS = {
    "kafka.connect.mirror<type=MirrorSourceConnector, source=a, target=b, topic=a.orders, partition=0>"
    "<>replication-latency-ms-max": ("kafka_connect_mirror_source_connector_$5", "replication-latency-ms-max"),
    "kafka.connect.mirror<type=MirrorSourceConnector, target=b, topic=a.orders, partition=0><>record-count": (
        "kafka_connect_mirror_source_connector_$5",
        "record-count",
    ),
    "kafka.connect.mirror<type=MirrorCheckpointConnector, source=a, target=b, group=g1, topic=a.orders, "
    "partition=3><>checkpoint-latency-ms-max": ("kafka_connect_mirror_checkpoint_connector_$6", None),
    'kafka.connect<type=connect-worker-metrics, connector="mm2-a-to-b-source"><>connector-failed-task-count': (
        "kafka_connect_worker_$2",
        None,
    ),
    "kafka.connect<type=connector-metrics, connector=mm2-a-to-b-source><>status: failed": (
        "kafka_connect_connector_status",
        None,
    ),
    "kafka.connect<type=source-task-metrics, connector=mm2-a-to-b-heartbeat, task=0><>source-record-write-total": (
        "kafka_connect_source_task_records_written",
        None,
    ),
    "kafka.server<type=BrokerTopicMetrics, name=MessagesInPerSec, topic=orders><>Count": (
        "kafka_server_brokertopicmetrics_messagesin_count",
        None,
    ),
    # The broker's state, its partitions' replication and the controller's: their names as a
    # Kafka 4.3.1 broker's exporter serves them, lowercased (checked against a running broker).
    "kafka.server<type=KafkaServer, name=BrokerState><>Value": ("kafka_server_kafkaserver_brokerstate", None),
    "kafka.server<type=ReplicaManager, name=UnderMinIsrPartitionCount><>Value": (
        "kafka_server_replicamanager_$1",
        "UnderMinIsrPartitionCount",
    ),
    "kafka.controller<type=KafkaController, name=ActiveControllerCount><>Value": (
        "kafka_controller_kafkacontroller_$1",
        "ActiveControllerCount",
    ),
}


@pytest.mark.parametrize("bean", sorted(BEANS))
def test_rules_match_mm2_connect_and_broker_beans(bean: str) -> None:
    name, last_group = BEANS[bean]
    rules = jmx_exporter_config()["rules"]
    matching = [(r, m) for r in rules if (m := re.fullmatch(r["pattern"], bean))]
    assert matching, bean
    rule, match = matching[0]
    assert rule["name"] == name
    if last_group is not None:
        assert match.groups()[-1] == last_group


def test_unrelated_beans_are_not_exported() -> None:
    rules = jmx_exporter_config()["rules"]
    for bean in (
        "kafka.network<type=RequestMetrics, name=RequestsPerSec, request=Produce, version=11><>Count",
        "java.lang<type=Memory><>HeapMemoryUsage",
    ):
        assert not any(re.fullmatch(r["pattern"], bean) for r in rules), bean


def test_no_exported_name_ends_in_a_suffix_the_exporter_drops() -> None:
    # Checked against the running agent: a gauge named `..._total` is exported without `_total`.
    for rule in jmx_exporter_config()["rules"]:
        assert not rule["name"].endswith("_total"), rule["name"]


def test_string_status_rule_has_a_constant_value() -> None:
    [status] = [r for r in jmx_exporter_config()["rules"] if r["name"] == "kafka_connect_connector_status"]
    assert status["value"] == 1 and status["labels"]["status"] == "$2"


def test_agent_file_is_the_config() -> None:
    assert json.loads(jmx_exporter_text()) == jmx_exporter_config()
