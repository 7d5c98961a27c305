"""components/topology/connectors.py: complete connector configs for representative flows (written out
literally), generated throughput tuning and tasks.max, topic names under each replication policy."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from components.topology import (
    ReplicationPolicy,
    Topology,
    bootstrap_servers,
    broker_ports,
    checkpoints_topic,
    flow_connectors,
    heartbeats_topic,
    offset_syncs_cluster,
    offset_syncs_topic,
    parse_topology,
    remote_topic,
)
from components.topology.connectors import (
    MAX_TASKS_PER_WORKER,
    TUNED_SOURCE_CLIENT,
    exactly_once_active,
    flow_tasks_max,
    replicated_partitions,
    transform_aliases,
)
from components.topology.model import Flow, PolicyKind, frozen_map
from components.topology.runtime_config import with_exactly_once_stage, worker_properties
from tests.unit.topology.helpers import dev_config, secure_config

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


def dev_flow() -> Flow:
    return parse_topology(dev_config()).flows[0]


def derived(topology: Topology) -> Topology:
    """The topology with tasks.max left to the generator, as when a flow gives no tasksMax."""
    return replace(topology, flows=tuple(replace(f, tasks_max=None) for f in topology.flows))


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


def test_default_policy_names() -> None:
    flow = dev_flow()
    assert remote_topic(flow, "orders") == "primary.orders"
    assert checkpoints_topic(flow) == "primary.checkpoints.internal"
    assert heartbeats_topic(flow) == "heartbeats"
    assert offset_syncs_topic(flow) == "mm2-offset-syncs.dr.internal"
    assert offset_syncs_cluster(flow) == "primary"


def test_custom_separator_applies_to_internal_topics_unless_switched_off() -> None:
    flow = replace(dev_flow(), replication_policy=ReplicationPolicy(separator="_"))
    assert remote_topic(flow, "orders") == "primary_orders"
    assert checkpoints_topic(flow) == "primary_checkpoints_internal"
    assert offset_syncs_topic(flow) == "mm2-offset-syncs_dr_internal"
    off = replace(flow, settings=frozen_map({"replication.policy.internal.topic.separator.enabled": "false"}))
    assert checkpoints_topic(off) == "primary.checkpoints.internal"
    assert remote_topic(off, "orders") == "primary_orders"


def test_identity_keeps_names_except_heartbeats() -> None:
    flow = replace(dev_flow(), replication_policy=ReplicationPolicy(kind=PolicyKind.IDENTITY, preserves_names=True))
    assert remote_topic(flow, "orders") == "orders"
    assert remote_topic(flow, "heartbeats") == "primary.heartbeats"
    assert checkpoints_topic(flow) == "primary.checkpoints.internal"


def test_custom_policy_declared_name_preserving() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["replicationPolicy"] = {"class": "com.example.KeepNames", "preservesNames": True}
    flow = parse_topology(config).flows[0]
    assert flow.replication_policy.kind is PolicyKind.CUSTOM
    assert flow.replication_policy.class_name == "com.example.KeepNames"
    assert remote_topic(flow, "orders") == "orders"


def test_offset_syncs_on_target() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {"offset-syncs.topic.location": "target"}
    flow = parse_topology(config).flows[0]
    assert offset_syncs_topic(flow) == "mm2-offset-syncs.primary.internal"
    assert offset_syncs_cluster(flow) == "dr"


def test_bootstrap_servers_per_platform() -> None:
    config = dev_config()
    config["clusters"]["primary"]["brokers"] = 3
    config["clusters"]["k8s"] = {"platform": "kubernetes"}
    config["clusters"]["ext"] = {"platform": "external", "brokers": 3, "bootstrap": "a:9092,b:9092"}
    topology = parse_topology(config)
    assert bootstrap_servers(topology.clusters["primary"]) == "127.0.0.1:19092,127.0.0.1:19094,127.0.0.1:19096"
    assert bootstrap_servers(topology.clusters["k8s"]) == "k8s-kafka-bootstrap:9092"
    assert bootstrap_servers(topology.clusters["ext"]) == "a:9092,b:9092"
    assert broker_ports(topology.clusters["primary"]) == ((19092, 19093), (19094, 19095), (19096, 19097))


def test_the_stacks_pods_use_the_internal_address_and_everything_else_bootstrap() -> None:
    """A cluster reached from outside at its external listener and by the workers at the in-cluster
    Service: connector configs and worker storage use the latter, the stack's outputs the former."""
    config = dev_config()
    config["clusters"]["dr"] = {
        "platform": "kubernetes",
        "brokers": 1,
        "bootstrap": "127.0.0.1:30090",
        "internalBootstrap": "dr-kafka-bootstrap.mm2.svc:9092",
        "topics": config["clusters"]["dr"].get("topics", {}),
    }
    config["workerGroups"]["mm2"] = {"platform": "kubernetes", "cluster": "dr", "workers": 1}
    topology = parse_topology(config)
    dr = topology.clusters["dr"]
    assert bootstrap_servers(dr) == "127.0.0.1:30090"
    connectors = flow_connectors(topology, topology.flows[0])
    assert connectors.source.config["target.cluster.bootstrap.servers"] == "dr-kafka-bootstrap.mm2.svc:9092"
    assert connectors.source.config["source.cluster.bootstrap.servers"] == bootstrap_servers(
        topology.clusters["primary"]
    )
    worker = worker_properties(topology, topology.worker_groups["mm2"], 0)
    assert worker["bootstrap.servers"] == "dr-kafka-bootstrap.mm2.svc:9092"


def test_source_connector_gets_the_tuning_and_the_others_do_not() -> None:
    topology = parse_topology(dev_config())
    connectors = flow_connectors(topology, topology.flows[0])
    source = dict(connectors.source.config)
    assert {k: source[k] for k in TUNED_SOURCE_CLIENT} == {
        "producer.override.enable.idempotence": "true",
        "producer.override.max.in.flight.requests.per.connection": "5",
        "producer.override.linger.ms": "10",
        "producer.override.batch.size": "262144",
        "producer.override.compression.type": "lz4",
        "source.consumer.fetch.min.bytes": "65536",
        "source.consumer.fetch.max.wait.ms": "100",
        "source.consumer.max.poll.records": "2000",
        "source.consumer.max.partition.fetch.bytes": "2097152",
    }
    for spec in (connectors.checkpoint, connectors.heartbeat):
        assert not set(spec.config) & set(TUNED_SOURCE_CLIENT)


def test_cluster_client_overrides_beat_the_tuning() -> None:
    config = dev_config()
    config["clusters"]["primary"]["client"] = {"consumer.fetch.min.bytes": "1"}
    config["clusters"]["dr"]["client"] = {"producer.linger.ms": "0", "producer.compression.type": "zstd"}
    topology = parse_topology(config)
    source = flow_connectors(topology, topology.flows[0]).source.config
    assert source["source.consumer.fetch.min.bytes"] == "1"
    assert source["producer.override.linger.ms"] == "0"
    assert source["producer.override.compression.type"] == "zstd"
    assert source["producer.override.batch.size"] == "262144"


def test_flow_settings_override_the_tuning_for_that_flow_only() -> None:
    config = dev_config()
    config["clusters"]["dr"]["client"] = {"producer.compression.type": "zstd"}
    config["flows"]["primary->dr"]["settings"] = {
        "producer.override.compression.type": "none",
        "source.consumer.max.poll.records": "500",
    }
    config["clusters"]["other"] = {
        "platform": "local",
        "brokers": 1,
        "port": 19292,
        "security": {"protocol": "PLAINTEXT"},
    }
    config["flows"]["other->dr"] = {"workerGroup": "mm2", "topics": ["t"]}
    topology = parse_topology(config)
    tuned = flow_connectors(topology, topology.flow("primary->dr")).source.config
    assert tuned["producer.override.compression.type"] == "none"
    assert tuned["source.consumer.max.poll.records"] == "500"
    assert tuned["producer.override.linger.ms"] == "10"
    untouched = flow_connectors(topology, topology.flow("other->dr")).source.config
    assert untouched["producer.override.compression.type"] == "zstd"
    assert untouched["source.consumer.max.poll.records"] == "2000"


def test_defaults_level_can_switch_tuning_off_everywhere() -> None:
    config = dev_config()
    config["defaults"]["settings"]["producer.override.linger.ms"] = "0"
    topology = parse_topology(config)
    assert flow_connectors(topology, topology.flows[0]).source.config["producer.override.linger.ms"] == "0"


def test_tasks_max_defaults_to_the_replicated_partitions() -> None:
    # dev: orders 3 + payments 3 partitions, two workers.
    topology = derived(parse_topology(dev_config()))
    flow = topology.flows[0]
    assert replicated_partitions(topology, flow) == 6
    connectors = flow_connectors(topology, flow)
    assert connectors.source.config["tasks.max"] == "6"
    assert connectors.checkpoint.config["tasks.max"] == "6"
    assert connectors.heartbeat.config["tasks.max"] == "1"


def test_tasks_max_counts_only_topics_the_filter_replicates() -> None:
    config = dev_config()
    config["clusters"]["primary"]["topics"]["audit.internal"] = {"partitions": 5}
    config["clusters"]["primary"]["topics"]["orders-eu"] = {"partitions": 2}
    config["flows"]["primary->dr"]["topics"] = ["orders.*", "audit.*"]
    topology = derived(parse_topology(config))
    # orders (3) and orders-eu (2); payments is not included, audit.internal is excluded by default.
    assert flow_tasks_max(topology, topology.flows[0]) == 5


def test_tasks_max_is_capped_per_worker() -> None:
    config = dev_config()
    config["clusters"]["primary"]["topics"]["orders"] = {"partitions": 64}
    topology = derived(parse_topology(config))
    assert flow_tasks_max(topology, topology.flows[0]) == MAX_TASKS_PER_WORKER * 2


def test_tasks_max_is_one_per_worker_when_no_topic_is_declared() -> None:
    config = dev_config()
    del config["clusters"]["primary"]["topics"]
    topology = derived(parse_topology(config))
    assert flow_tasks_max(topology, topology.flows[0]) == 2


def test_explicit_tasks_max_wins_over_the_derived_value() -> None:
    topology = parse_topology(dev_config())  # tasksMax: 3
    assert flow_connectors(topology, topology.flows[0]).source.config["tasks.max"] == "3"


def test_reverse_heartbeat_connector_writes_heartbeats_into_the_source_as_its_mm2_user() -> None:
    from components.topology import reverse_heartbeat_connector
    from tests.unit.topology.helpers import secure_config

    config = secure_config()
    topology = parse_topology(config)
    assert reverse_heartbeat_connector(topology, topology.flows[0]) is None
    config["flows"]["primary->dr"]["reverseHeartbeats"] = True
    topology = parse_topology(config)
    spec = reverse_heartbeat_connector(topology, topology.flows[0])
    assert spec is not None
    secrets = "/etc/mm2/secrets.properties"
    scram = "org.apache.kafka.common.security.scram.ScramLoginModule required"
    primary_jaas = f'{scram} username="mm2" password="${{file:{secrets}:primary.mm2.password}}";'
    primary = {"bootstrap.servers": "127.0.0.1:19092", "security.protocol": "SASL_PLAINTEXT",
               "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": primary_jaas}  # fmt: skip
    assert dict(spec.config) == {
        "name": "mm2-primary-to-dr-reverse-heartbeat",
        "connector.class": "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
        "tasks.max": "1",
        "source.cluster.alias": "dr",
        "target.cluster.alias": "primary",
        "source.cluster.bootstrap.servers": "127.0.0.1:19192",
        "source.cluster.security.protocol": "SASL_PLAINTEXT",
        "source.cluster.sasl.mechanism": "SCRAM-SHA-512",
        "source.cluster.sasl.jaas.config": f'{scram} username="mm2" password="${{file:{secrets}:dr.mm2.password}}";',
        **{f"target.cluster.{k}": v for k, v in primary.items()},
        **{f"producer.override.{k}": v for k, v in primary.items()},
        "key.converter": BYTES,
        "value.converter": BYTES,
        "header.converter": BYTES,
        "replication.policy.class": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
        "replication.policy.separator": ".",
        "heartbeats.topic.replication.factor": "1",
    }


def test_pass_through_settings_reach_the_source_connector_and_role_settings_their_role() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {
        "transforms": "dropTest, route",
        "transforms.dropTest.type": "org.apache.kafka.connect.transforms.Filter",
        "use.incremental.alter.configs": "never",
        "sync.group.offsets.interval.seconds": "7",
    }
    config["flows"]["primary->dr"]["connectorSettings"] = {"heartbeat": {"transforms": "tag"}}
    topology = parse_topology(config)
    specs = flow_connectors(topology, topology.flows[0])
    assert specs.source.config["transforms.dropTest.type"] == "org.apache.kafka.connect.transforms.Filter"
    assert specs.source.config["use.incremental.alter.configs"] == "never"
    assert "sync.group.offsets.interval.seconds" not in specs.source.config
    assert specs.checkpoint.config["sync.group.offsets.interval.seconds"] == "7"
    assert "transforms" not in specs.checkpoint.config
    assert specs.heartbeat.config["transforms"] == "tag"
    assert transform_aliases(specs.source.config) == ("dropTest", "route")
    assert transform_aliases(specs.checkpoint.config) == ()


def test_exactly_once_waits_for_the_preparing_step_of_the_rollout() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["exactlyOnce"] = True
    topology = with_exactly_once_stage(parse_topology(config), "mm2", "preparing")
    flow = topology.flows[0]
    assert not exactly_once_active(topology, flow)
    assert "exactly.once.support" not in flow_connectors(topology, flow).source.config
    enabled = with_exactly_once_stage(topology, "mm2", "enabled")
    assert exactly_once_active(enabled, flow)
    assert flow_connectors(enabled, flow).source.config["exactly.once.support"] == "required"


def test_connectors_on_exactly_once_workers_fence_and_read_offsets_through_the_target() -> None:
    config = secure_config()
    config["flows"]["primary->dr"]["exactlyOnce"] = True
    topology = parse_topology(config)
    for spec in flow_connectors(topology, topology.flows[0]).all():
        assert spec.config["admin.override.sasl.jaas.config"] == spec.config["producer.override.sasl.jaas.config"]
        assert spec.config["consumer.override.security.protocol"] == "SASL_PLAINTEXT"
    # From the `preparing` step on: the rollout turns workers enabled one at a time before the
    # connectors change, and the leader fences their tasks with the connector's admin client.
    preparing = with_exactly_once_stage(topology, "mm2", "preparing")
    source = flow_connectors(preparing, preparing.flows[0]).source.config
    assert source["admin.override.sasl.jaas.config"] == source["producer.override.sasl.jaas.config"]
    assert "exactly.once.support" not in source  # the connector itself stays at-least-once until enabled
    config["flows"]["primary->dr"]["exactlyOnce"] = False
    plain = parse_topology(config)
    assert not any(k.startswith("admin.override.") for k in flow_connectors(plain, plain.flows[0]).source.config)
    # Turned off: until every worker has left `enabled`, their tasks still read offsets back and
    # fence through the target; the connector itself is at-least-once at once.
    disabling = with_exactly_once_stage(plain, "mm2", "disabling")
    source = flow_connectors(disabling, disabling.flows[0]).source.config
    assert source["consumer.override.sasl.jaas.config"] == source["producer.override.sasl.jaas.config"]
    assert "exactly.once.support" not in source
