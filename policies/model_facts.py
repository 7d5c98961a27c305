"""Facts about MM2 and about the stack's components that the rules read resources by.

The pack runs with only its own folder on the import path, so it cannot import `components`;
these are copies of the model's facts (type tokens, connector roles, classes and names, MM2's
defaults, target-shared settings), and tests/unit/policies/test_model_facts.py pins every one
of them to the model's own value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import Enum
from typing import Final

CONNECTOR_TYPE: Final = "pulumi-python:dynamic/connect:Connector"
CLUSTER_TYPE: Final = "mm2:index:KafkaCluster"
WORKER_GROUP_TYPE: Final = "mm2:index:ConnectWorkerGroup"
FLOW_TYPE: Final = "mm2:index:ReplicationFlow"
TOPIC_TYPE: Final = "pulumi-python:dynamic/kafka:Topic"

# Kafka's `log.retention.hours` default (168 h): a topic's retention when neither it nor its
# cluster sets one (components/topology/objectives.py KAFKA_DEFAULT_RETENTION_MS).
KAFKA_DEFAULT_RETENTION_MS: Final = 7 * 86400 * 1000

DEFAULT_POLICY_CLASS: Final = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
IDENTITY_POLICY_CLASS: Final = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
DEFAULT_TOPIC_FILTER_CLASS: Final = "org.apache.kafka.connect.mirror.DefaultTopicFilter"

# MM2's own defaults for the keys the rules compare, so "unset" and "set to the default" agree.
MM2_DEFAULTS: Final[Mapping[str, str]] = {
    "replication.policy.class": DEFAULT_POLICY_CLASS,
    "replication.policy.separator": ".",
    "replication.policy.internal.topic.separator.enabled": "true",
    "offset-syncs.topic.location": "source",
    "topics": ".*",
    "topics.exclude": r".*[\-\.]internal, .*\.replica, __.*",
    "topic.filter.class": DEFAULT_TOPIC_FILTER_CLASS,
    "replication.factor": "2",
    "checkpoints.topic.replication.factor": "3",
    "heartbeats.topic.replication.factor": "3",
    "offset-syncs.topic.replication.factor": "3",
    "sync.group.offsets.enabled": "false",
    "emit.checkpoints.enabled": "true",
    "emit.heartbeats.enabled": "true",
    "emit.heartbeats.interval.seconds": "1",
    "tasks.max": "1",  # Kafka Connect's default
}


class ConnectorKind(str, Enum):
    """The three connectors of a flow, by the suffix of their names."""

    SOURCE = "source"
    CHECKPOINT = "checkpoint"
    HEARTBEAT = "heartbeat"

    @property
    def class_name(self) -> str:
        return _CLASS_BY_KIND[self]


_CLASS_BY_KIND: Final[Mapping[ConnectorKind, str]] = {
    ConnectorKind.SOURCE: "MirrorSourceConnector",
    ConnectorKind.CHECKPOINT: "MirrorCheckpointConnector",
    ConnectorKind.HEARTBEAT: "MirrorHeartbeatConnector",
}
KIND_BY_CLASS: Final[Mapping[str, ConnectorKind]] = {v: k for k, v in _CLASS_BY_KIND.items()}
CONNECTOR_NAME = re.compile(r"^mm2-(?P<flow>.+)-(?P<kind>source|checkpoint|heartbeat)$")
# What a flow's reverse heartbeat connector's name ends with (`reverseHeartbeats`,
# components/topology/connectors.py reverse_heartbeat_name): it runs target->source, copies no records.
REVERSE_HEARTBEAT_SUFFIX: Final = "-reverse-heartbeat"


def connector_name(source: str, target: str, kind: ConnectorKind) -> str:
    """The name ReplicationFlow gives a connector (architecture.md)."""
    return f"mm2-{source}-to-{target}-{kind.value}"


# Settings every flow into one target cluster must agree on, and which connector owns each: the
# model's TARGET_SHARED (components/topology/settings.py), which rejects the same disagreements
# at parse time.
# - replication.policy.class / .separator / .internal.topic.separator.enabled: remote and
#   internal topic names on the target are parsed back (MirrorClient, RemoteClusterUtils,
#   failover tooling, the next hop's cycle detection) with one policy; two flows naming topics
#   differently on one cluster make that parsing wrong for one of them.
# - heartbeats.topic.replication.factor: all heartbeat connectors into a target write the same
#   `heartbeats` topic there; whichever creates it first silently wins.
# Not emit.heartbeats.enabled / .interval.seconds: they are per flow in MM2. Each heartbeat
# connector writes its own records, keyed (source alias, target alias), at its own interval, and
# MirrorMakerConfig reads `A->B.emit.heartbeats.enabled` per cluster pair; two flows into one
# target emitting at different rates (or one not at all) override nothing of each other.
SHARED_TARGET_KEYS: Final[Mapping[str, tuple[ConnectorKind, ...]]] = {
    "replication.policy.class": (ConnectorKind.SOURCE, ConnectorKind.CHECKPOINT, ConnectorKind.HEARTBEAT),
    "replication.policy.separator": (ConnectorKind.SOURCE, ConnectorKind.CHECKPOINT, ConnectorKind.HEARTBEAT),
    "replication.policy.internal.topic.separator.enabled": (
        ConnectorKind.SOURCE,
        ConnectorKind.CHECKPOINT,
        ConnectorKind.HEARTBEAT,
    ),
    "heartbeats.topic.replication.factor": (ConnectorKind.HEARTBEAT,),
}
