"""Complete connector configs for representative flows, written out literally."""

from __future__ import annotations

from typing import Any

from components.topology import flow_connectors, parse_topology
from tests.unit.topology.helpers import dev_config

BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
SECRETS = "/var/lib/mm2/secrets.properties"
DR_JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="mm2-dr" '
    'password="${file:/var/lib/mm2/secrets.properties:dr.mm2.password}";'
)
PRIMARY_JAAS = (
    'org.apache.kafka.common.security.scram.ScramLoginModule required username="mm2" '
    'password="${file:/var/lib/mm2/secrets.properties:primary.mm2.password}";'
)


def cross_cluster_config() -> dict[str, Any]:
    """SASL on both sides, client overrides, and workers on the *source* cluster."""
    return {
        "defaults": {"settings": {"refresh.topics.interval.seconds": "30"}},
        "clusters": {
            "primary": {
                "platform": "local",
                "brokers": 3,
                "port": 19092,
                "security": {
                    "protocol": "SASL_PLAINTEXT",
                    "saslMechanism": "SCRAM-SHA-512",
                    "username": "mm2",
                    "password": {"secret": "primary.mm2.password"},
                },
                "client": {"consumer.fetch.min.bytes": "1024"},
            },
            "dr": {
                "platform": "external",
                "brokers": 3,
                "bootstrap": "dr-1:9093,dr-2:9093",
                "security": {
                    "protocol": "SASL_SSL",
                    "saslMechanism": "PLAIN",
                    "username": "mm2-dr",
                    "password": {"secret": "dr.mm2.password"},
                    "truststoreLocation": "/etc/mm2/dr-truststore.jks",
                    "truststorePassword": {"secret": "dr.ssl.truststore.password"},
                },
                "client": {"producer.compression.type": "zstd"},
            },
        },
        "workerGroups": {
            "mm2": {"cluster": "primary", "workers": 2, "restPort": 18083, "secretsFile": SECRETS},
        },
        "flows": {
            "primary->dr": {
                "topics": ["orders", "payments-.*"],
                "groups": ["billing-.*"],
                "tasksMax": "4",
                "settings": {
                    "offset.lag.max": "50",
                    "emit.heartbeats.interval.seconds": "5",
                    "sync.group.offsets.enabled": True,
                },
            }
        },
    }


COMMON = {
    "source.cluster.alias": "primary",
    "target.cluster.alias": "dr",
    "source.cluster.bootstrap.servers": "127.0.0.1:19092,127.0.0.1:19094,127.0.0.1:19096",
    "source.cluster.security.protocol": "SASL_PLAINTEXT",
    "source.cluster.sasl.mechanism": "SCRAM-SHA-512",
    "source.cluster.sasl.jaas.config": PRIMARY_JAAS,
    "source.consumer.fetch.min.bytes": "1024",
    "target.cluster.bootstrap.servers": "dr-1:9093,dr-2:9093",
    "target.cluster.security.protocol": "SASL_SSL",
    "target.cluster.sasl.mechanism": "PLAIN",
    "target.cluster.sasl.jaas.config": DR_JAAS,
    "target.cluster.ssl.truststore.location": "/etc/mm2/dr-truststore.jks",
    "target.cluster.ssl.truststore.password": "${file:/var/lib/mm2/secrets.properties:dr.ssl.truststore.password}",
    "target.producer.compression.type": "zstd",
    "producer.override.bootstrap.servers": "dr-1:9093,dr-2:9093",
    "producer.override.security.protocol": "SASL_SSL",
    "producer.override.sasl.mechanism": "PLAIN",
    "producer.override.sasl.jaas.config": DR_JAAS,
    "producer.override.ssl.truststore.location": "/etc/mm2/dr-truststore.jks",
    "producer.override.ssl.truststore.password": "${file:/var/lib/mm2/secrets.properties:dr.ssl.truststore.password}",
    "producer.override.compression.type": "zstd",
    "key.converter": BYTES,
    "value.converter": BYTES,
    "header.converter": BYTES,
    "replication.policy.class": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
    "replication.policy.separator": ".",
}


def test_cross_cluster_sasl_flow_source_connector() -> None:
    topology = parse_topology(cross_cluster_config())
    spec = flow_connectors(topology, topology.flows[0]).source
    assert spec.name == "mm2-primary-to-dr-source"
    assert spec.connector_class == "org.apache.kafka.connect.mirror.MirrorSourceConnector"
    assert dict(spec.config) == {
        **COMMON,
        # Generated tuning, except where the clusters' client overrides (in COMMON) replace it:
        # source.consumer.fetch.min.bytes=1024 and producer.override.compression.type=zstd.
        "producer.override.enable.idempotence": "true",
        "producer.override.max.in.flight.requests.per.connection": "5",
        "producer.override.linger.ms": "10",
        "producer.override.batch.size": "262144",
        "source.consumer.fetch.max.wait.ms": "100",
        "source.consumer.max.poll.records": "2000",
        "source.consumer.max.partition.fetch.bytes": "2097152",
        "name": "mm2-primary-to-dr-source",
        "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
        "tasks.max": "4",
        "topics": "orders,payments-.*",
        "topics.exclude": r".*[\-\.]internal,.*\.replica,__.*",
        "refresh.topics.interval.seconds": "30",
        "offset.lag.max": "50",
        "replication.factor": "3",
        "offset-syncs.topic.replication.factor": "3",
    }


def test_cross_cluster_sasl_flow_checkpoint_connector() -> None:
    topology = parse_topology(cross_cluster_config())
    spec = flow_connectors(topology, topology.flows[0]).checkpoint
    assert dict(spec.config) == {
        **COMMON,
        "name": "mm2-primary-to-dr-checkpoint",
        "connector.class": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
        "tasks.max": "4",
        "topics": "orders,payments-.*",
        "topics.exclude": r".*[\-\.]internal,.*\.replica,__.*",
        "groups": "billing-.*",
        "groups.exclude": "console-consumer-.*,connect-.*,__.*",
        "checkpoints.topic.replication.factor": "3",
        "sync.group.offsets.enabled": "true",
    }


def test_cross_cluster_sasl_flow_heartbeat_connector() -> None:
    topology = parse_topology(cross_cluster_config())
    spec = flow_connectors(topology, topology.flows[0]).heartbeat
    assert dict(spec.config) == {
        **COMMON,
        "name": "mm2-primary-to-dr-heartbeat",
        "connector.class": "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
        "tasks.max": "1",
        "heartbeats.topic.replication.factor": "3",
        "emit.heartbeats.interval.seconds": "5",
    }


def test_dev_stack_source_connector_overrides_only_producer_tuning() -> None:
    # Workers on the target, PLAINTEXT: no producer bootstrap or security override, only tuning.
    topology = parse_topology(dev_config())
    spec = flow_connectors(topology, topology.flow("primary->dr")).source
    assert dict(spec.config) == {
        "producer.override.enable.idempotence": "true",
        "producer.override.max.in.flight.requests.per.connection": "5",
        "producer.override.linger.ms": "10",
        "producer.override.batch.size": "262144",
        "producer.override.compression.type": "lz4",
        "source.consumer.fetch.min.bytes": "65536",
        "source.consumer.fetch.max.wait.ms": "100",
        "source.consumer.max.poll.records": "2000",
        "source.consumer.max.partition.fetch.bytes": "2097152",
        "name": "mm2-primary-to-dr-source",
        "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
        "tasks.max": "3",
        "source.cluster.alias": "primary",
        "target.cluster.alias": "dr",
        "source.cluster.bootstrap.servers": "127.0.0.1:19092",
        "source.cluster.security.protocol": "PLAINTEXT",
        "target.cluster.bootstrap.servers": "127.0.0.1:19192",
        "target.cluster.security.protocol": "PLAINTEXT",
        "key.converter": BYTES,
        "value.converter": BYTES,
        "header.converter": BYTES,
        "replication.policy.class": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
        "replication.policy.separator": ".",
        "topics": "orders,payments",
        "topics.exclude": r".*[\-\.]internal,.*\.replica,__.*",
        "refresh.topics.interval.seconds": "5",
        "replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
    }


def test_dev_stack_checkpoint_gets_disaster_recovery_offset_sync() -> None:
    topology = parse_topology(dev_config())
    spec = flow_connectors(topology, topology.flow("primary->dr")).checkpoint
    assert spec.config["sync.group.offsets.enabled"] == "true"
    assert spec.config["groups"] == ".*"
    assert "refresh.topics.interval.seconds" not in spec.config


def test_exactly_once_flow_requires_eos_on_source_connector_only() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["exactlyOnce"] = True
    topology = parse_topology(config)
    connectors = flow_connectors(topology, topology.flows[0])
    assert connectors.source.config["exactly.once.support"] == "required"
    assert connectors.source.config["transaction.boundary"] == "poll"
    assert connectors.source.config["source.consumer.isolation.level"] == "read_committed"
    assert "exactly.once.support" not in connectors.checkpoint.config
    assert "exactly.once.support" not in connectors.heartbeat.config


def test_identity_policy_and_custom_separator_reach_every_connector() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["replicationPolicy"] = {"class": "identity", "separator": "_"}
    topology = parse_topology(config)
    for spec in flow_connectors(topology, topology.flows[0]).all():
        assert spec.config["replication.policy.class"] == "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
        assert spec.config["replication.policy.separator"] == "_"


def test_settings_merge_flow_beats_cluster_beats_defaults() -> None:
    config = dev_config()
    config["defaults"]["settings"] = {"offset.lag.max": "1", "admin.timeout.ms": "1000"}
    config["clusters"]["primary"]["settings"] = {"offset.lag.max": "2", "consumer.poll.timeout.ms": "700"}
    config["flows"]["primary->dr"]["settings"] = {"offset.lag.max": "3"}
    flow = parse_topology(config).flows[0]
    assert flow.settings["offset.lag.max"] == "3"
    assert flow.settings["consumer.poll.timeout.ms"] == "700"
    assert flow.settings["admin.timeout.ms"] == "1000"
    # the cluster level applies to flows whose *source* is that cluster only
    config["clusters"]["dr"]["settings"] = {"offset.lag.max": "9"}
    assert parse_topology(config).flows[0].settings["offset.lag.max"] == "3"
