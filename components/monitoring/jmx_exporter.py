"""The Prometheus JMX exporter's rules for MM2, Connect and broker MBeans, the same on every
platform (Kubernetes ConfigMap, the local platform's agent file). Pure: no pulumi, no I/O.

MBean names: mm2-internals §4 and Kafka's Connect/broker metrics. Only matching beans are exported.
Metric names are what the alert rules (`components/monitoring/rules.py`) query; every rule is a
GAUGE, and no name ends in `_total` (the exporter 1.x would drop that suffix from a gauge).
"""

from __future__ import annotations

import json
from typing import Any

# Metric names the alert rules and the status/metrics tests rely on (one spelling each).
REPLICATION_LATENCY_MAX = "kafka_connect_mirror_source_connector_replication_latency_ms_max"
RECORD_COUNT = "kafka_connect_mirror_source_connector_record_count"
BYTE_RATE = "kafka_connect_mirror_source_connector_byte_rate"  # bytes/s copied, the metrics window's mean
CHECKPOINT_LATENCY_MAX = "kafka_connect_mirror_checkpoint_connector_checkpoint_latency_ms_max"
FAILED_TASK_COUNT = "kafka_connect_worker_connector_failed_task_count"
CONNECTOR_STATUS = "kafka_connect_connector_status"
SOURCE_RECORDS_WRITTEN = "kafka_connect_source_task_records_written"  # source-record-write-total
BROKER_MESSAGES_IN = "kafka_server_brokertopicmetrics_messagesin_count"
# The broker's state (kafka.metadata.BrokerState): 3 is RUNNING, caught up with the metadata log
# and serving; what a broker pod's readiness asks on Kubernetes.
BROKER_STATE = "kafka_server_kafkaserver_brokerstate"
BROKER_RUNNING = 3
UNDER_REPLICATED = "kafka_server_replicamanager_underreplicatedpartitions"
UNDER_MIN_ISR = "kafka_server_replicamanager_underminisrpartitioncount"
AT_MIN_ISR = "kafka_server_replicamanager_atminisrpartitioncount"
ACTIVE_CONTROLLERS = "kafka_controller_kafkacontroller_activecontrollercount"
OFFLINE_PARTITIONS = "kafka_controller_kafkacontroller_offlinepartitionscount"
# How old the last metadata record a controller applied is: small on every caught-up voter (the
# active controller appends one at least every 500 ms).
METADATA_LAG_MS = "kafka_controller_kafkacontroller_lastappliedrecordlagms"
# The MBeans a broker's exporter reads (`broker_exporter_config`), so a scrape, and the readiness
# probe that makes one every few seconds, never walks the broker's thousands of others.
BROKER_BEANS = (
    "kafka.server:type=KafkaServer,name=BrokerState",
    "kafka.server:type=ReplicaManager,*",
    "kafka.controller:type=KafkaController,*",
    "kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,*",
)


def jmx_exporter_config() -> dict[str, Any]:
    """The exporter's config. The MirrorSourceConnector pattern accepts beans with and without the
    `source` tag (Kafka versions differ); label `source` is empty when it is absent."""
    return {
        "lowercaseOutputName": True,
        "lowercaseOutputLabelNames": True,
        "rules": [
            {
                "pattern": r"kafka.connect.mirror<type=MirrorSourceConnector, (?:source=([^,]+), )?target=([^,]+), "
                r"topic=([^,]+), partition=([0-9]+)><>([a-z-]+)",
                "name": "kafka_connect_mirror_source_connector_$5",
                "labels": {"source": "$1", "target": "$2", "topic": "$3", "partition": "$4"},
                "type": "GAUGE",
            },
            {
                "pattern": r"kafka.connect.mirror<type=MirrorCheckpointConnector, source=([^,]+), target=([^,]+), "
                r"group=([^,]+), topic=([^,]+), partition=([0-9]+)><>([a-z-]+)",
                "name": "kafka_connect_mirror_checkpoint_connector_$6",
                "labels": {"source": "$1", "target": "$2", "group": "$3", "topic": "$4", "partition": "$5"},
                "type": "GAUGE",
            },
            {
                "pattern": r"kafka.connect<type=connect-worker-metrics, connector=\"?([^\"]+)\"?><>([a-z-]+)",
                "name": "kafka_connect_worker_$2",
                "labels": {"connector": "$1"},
                "type": "GAUGE",
            },
            {
                "pattern": r"kafka.connect<type=connect-worker-metrics><>([a-z-]+)",
                "name": "kafka_connect_worker_$1",
                "type": "GAUGE",
            },
            {
                "pattern": r"kafka.connect<type=connect-worker-rebalance-metrics><>([a-z-]+)",
                "name": "kafka_connect_worker_rebalance_$1",
                "type": "GAUGE",
            },
            {
                # A string attribute: one series per connector, 1, labelled with the state.
                "pattern": r"kafka.connect<type=connector-metrics, connector=\"?([^\"]+)\"?><>status: ([a-z]+)",
                "name": CONNECTOR_STATUS,
                "labels": {"connector": "$1", "status": "$2"},
                "value": 1,
                "type": "GAUGE",
            },
            {
                # Explicit name: the exporter drops a `_total` suffix from gauge names.
                "pattern": r"kafka.connect<type=source-task-metrics, connector=\"?([^\"]+)\"?, task=([0-9]+)>"
                r"<>source-record-write-total",
                "name": SOURCE_RECORDS_WRITTEN,
                "labels": {"connector": "$1", "task": "$2"},
                "type": "GAUGE",
            },
            {
                "pattern": r"kafka.server<type=BrokerTopicMetrics, name=MessagesInPerSec, topic=([^,]+)><>Count",
                "name": BROKER_MESSAGES_IN,
                "labels": {"topic": "$1"},
                "type": "GAUGE",
            },
            {
                "pattern": r"kafka.server<type=KafkaServer, name=BrokerState><>Value",
                "name": BROKER_STATE,
                "type": "GAUGE",
            },
            {
                "pattern": r"kafka.server<type=ReplicaManager, name=([A-Za-z]+)><>Value",
                "name": "kafka_server_replicamanager_$1",
                "type": "GAUGE",
            },
            {
                "pattern": r"kafka.controller<type=KafkaController, name=([A-Za-z]+)><>Value",
                "name": "kafka_controller_kafkacontroller_$1",
                "type": "GAUGE",
            },
        ],
    }


def broker_exporter_config() -> dict[str, Any]:
    """The exporter's config on a broker: the same rules, reading only `BROKER_BEANS`."""
    return {**jmx_exporter_config(), "includeObjectNames": list(BROKER_BEANS)}


def jmx_exporter_text() -> str:
    """The config as the agent's file (JSON is YAML)."""
    return json.dumps(jmx_exporter_config(), indent=2, sort_keys=True) + "\n"
