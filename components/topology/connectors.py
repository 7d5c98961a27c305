"""A flow becomes three MM2 connector configs; topic names under each replication policy.

Connector configs use MM2's exact property names as `MirrorConnectorConfig` reads them when
the connectors run on a plain distributed Connect cluster:

- `source.cluster.*` / `target.cluster.*`: bootstrap and security of each side (MM2 keeps
  only client-level keys from these prefixes);
- `source.<client>.*` / `target.<client>.*` with client in producer/consumer/admin: per-cluster
  client overrides (`source.consumer.fetch.min.bytes`). MM2 drops `source.cluster.consumer.*`,
  which is why overrides are not written that way;
- `producer.override.*`: the Connect framework producer, which writes each connector's records
  (replicated records, checkpoints, heartbeats). It writes to the worker group's cluster unless
  overridden, so when a flow's target is not that cluster all three connectors get
  `producer.override.bootstrap.servers` and security for the target (as seed 000 does), and
  the target cluster's `producer.*` client overrides are applied there too. With security on
  the target, the override carries the target's MM2 credentials even when the workers live on
  the target, so records are written as the MM2 user, never as the worker.

Secrets appear only as FileConfigProvider placeholders naming the worker group's secrets file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from components.topology.jaas_quoting import jaas_quote
from components.topology.links import derived_link_settings
from components.topology.model import (
    Cluster,
    ConnectorRole,
    Flow,
    Platform,
    PolicyKind,
    Security,
    SecurityProtocol,
    Topology,
    WorkerGroup,
    frozen_map,
)
from components.topology.settings import KNOWN_SETTINGS, ROLE_SETTINGS, TUNED_SOURCE_CLIENT

BYTE_ARRAY_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter"
CONNECTOR_CLASSES: dict[ConnectorRole, str] = {
    ConnectorRole.SOURCE: "org.apache.kafka.connect.mirror.MirrorSourceConnector",
    ConnectorRole.CHECKPOINT: "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
    ConnectorRole.HEARTBEAT: "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
}
HEARTBEATS_TOPIC = "heartbeats"
# Strimzi's naming for a Kafka cluster's bootstrap Service, in the namespace of the workers.
KUBERNETES_BOOTSTRAP = "{alias}-kafka-bootstrap:9092"

# Derived tasks.max: one source task per replicated partition (more would idle), at most this
# many per worker of the group; one per worker when the source declares none of the topics.
MAX_TASKS_PER_WORKER = 4


@dataclass(frozen=True)
class ConnectorSpec:
    name: str
    role: ConnectorRole
    connector_class: str
    config: Mapping[str, str]


@dataclass(frozen=True)
class FlowConnectors:
    source: ConnectorSpec
    checkpoint: ConnectorSpec
    heartbeat: ConnectorSpec

    def all(self) -> tuple[ConnectorSpec, ...]:
        return (self.source, self.checkpoint, self.heartbeat)


def connector_name(flow: Flow, role: ConnectorRole) -> str:
    return f"mm2-{flow.source}-to-{flow.target}-{role.value}"


def bootstrap_servers(cluster: Cluster) -> str:
    """local/docker: every broker's client port on the cluster's host (127.0.0.1, or its emulated
    datacenter's address); external: as configured;
    kubernetes: as configured, else the Strimzi-style `<alias>-kafka-bootstrap:9092` Service."""
    if cluster.platform in (Platform.LOCAL, Platform.DOCKER):
        if cluster.port is None:
            raise ValueError(f"cluster {cluster.alias} has no port")
        return ",".join(f"{cluster.host}:{client}" for client, _ in _ports(cluster))
    if cluster.bootstrap:
        return cluster.bootstrap
    if cluster.platform is Platform.KUBERNETES:
        return KUBERNETES_BOOTSTRAP.format(alias=cluster.alias)
    raise ValueError(f"cluster {cluster.alias} has no bootstrap address")


def _ports(cluster: Cluster) -> tuple[tuple[int, int], ...]:
    base = cluster.port or 0
    return tuple((base + 2 * i, base + 2 * i + 1) for i in range(cluster.brokers))


def security_properties(security: Security, secrets_file: str) -> dict[str, str]:
    """Unprefixed Kafka client security keys; secrets as `${file:...}` placeholders."""
    props = {"security.protocol": security.protocol.value}
    if security.protocol.uses_sasl and security.sasl_mechanism is not None:
        props["sasl.mechanism"] = security.sasl_mechanism.value
        password = security.password.placeholder(secrets_file) if security.password else ""
        props["sasl.jaas.config"] = (
            f"{security.sasl_mechanism.login_module} required "
            f'username="{jaas_quote(security.username or "")}" password="{password}";'
        )
    if security.protocol.uses_tls:
        if security.truststore_location:
            props["ssl.truststore.location"] = security.truststore_location
        if security.truststore_password:
            props["ssl.truststore.password"] = security.truststore_password.placeholder(secrets_file)
        if security.keystore_location:
            props["ssl.keystore.location"] = security.keystore_location
        if security.keystore_password:
            props["ssl.keystore.password"] = security.keystore_password.placeholder(secrets_file)
        if security.key_password:
            props["ssl.key.password"] = security.key_password.placeholder(secrets_file)
    return props


def group_bootstrap_servers(cluster: Cluster, group: WorkerGroup) -> str:
    """The address worker group `group`'s own processes (its workers and the connectors they run,
    its lag exporter) reach `cluster` at: its `internalBootstrap` when it gives one and the group
    runs in its network (not in `group.public_clusters`), else the one everything uses."""
    if cluster.internal_bootstrap and cluster.alias not in group.public_clusters:
        return cluster.internal_bootstrap
    return bootstrap_servers(cluster)


def client_properties(cluster: Cluster, group: WorkerGroup) -> dict[str, str]:
    """`bootstrap.servers` plus security: what a connector run by `group`'s workers needs."""
    return {
        "bootstrap.servers": group_bootstrap_servers(cluster, group),
        **security_properties(cluster.security, group.secrets_file),
    }


def _prefixed(prefix: str, values: Mapping[str, str]) -> dict[str, str]:
    return {f"{prefix}{k}": v for k, v in values.items()}


def needs_producer_override(topology: Topology, flow: Flow) -> bool:
    """True when the flow's records must be produced to a cluster other than the workers'."""
    return topology.worker_groups[flow.worker_group].cluster != flow.target


def replicated_partitions(topology: Topology, flow: Flow) -> int:
    """Partitions of the source's declared topics that the flow's topic filter accepts.

    MM2 joins `topics` into one Java regex matched against the whole name; Python's `re` agrees
    on the patterns parse accepts. Topics not declared under the source cluster are unknown here.
    """
    includes = [_compiled(p) for p in flow.topics]
    excludes = [_compiled(p) for p in flow.topics_exclude]
    return sum(
        topic.partitions
        for topic in topology.clusters[flow.source].topics
        if any(p is not None and p.fullmatch(topic.name) for p in includes)
        and not any(p is not None and p.fullmatch(topic.name) for p in excludes)
    )


def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def flow_tasks_max(topology: Topology, flow: Flow) -> int:
    """`tasksMax` when the flow (or `defaults`) sets it; otherwise one task per replicated
    partition, capped at MAX_TASKS_PER_WORKER per worker, or one per worker if none is declared."""
    if flow.tasks_max is not None:
        return flow.tasks_max
    workers = max(1, topology.worker_groups[flow.worker_group].workers)
    partitions = replicated_partitions(topology, flow)
    if partitions == 0:
        return workers
    return min(partitions, MAX_TASKS_PER_WORKER * workers)


EXACTLY_ONCE_PREPARING = "preparing"
EXACTLY_ONCE_ENABLED = "enabled"
# Exactly-once turned off while workers still run with it: they roll to disabled, and what their
# transactions need (grants, connector overrides) stays until none runs with it any more.
EXACTLY_ONCE_DISABLING = "disabling"


def exactly_once_active(topology: Topology, flow: Flow) -> bool:
    """An exactly-once flow whose workers are past the `preparing` step of the rollout."""
    group = topology.worker_groups[flow.worker_group]
    return flow.exactly_once and group.exactly_once_stage != EXACTLY_ONCE_PREPARING


def routed_settings(flow: Flow, role: ConnectorRole) -> dict[str, str]:
    """The flow's settings that `role`'s connector receives: catalogue keys where MM2 reads them,
    keys outside the catalogue (transforms, predicates, any key Connect's validation accepts) on
    the source connector, then `connectorSettings.<role>`."""
    routed = {
        k: v
        for k, v in flow.settings.items()
        if k in ROLE_SETTINGS[role] or (role is ConnectorRole.SOURCE and k not in KNOWN_SETTINGS)
    }
    routed.update(flow.role_settings.get(role, {}))
    return routed


def transform_aliases(config: Mapping[str, str]) -> tuple[str, ...]:
    """The SMT aliases a connector config applies to records, in order (empty when none)."""
    return tuple(a.strip() for a in config.get("transforms", "").split(",") if a.strip())


def _target_client(topology: Topology, flow: Flow, target: Cluster, secrets: str) -> dict[str, str]:
    """How the connectors' framework clients reach the target: its address when the workers
    live elsewhere, its MM2 credentials when it is secured."""
    if needs_producer_override(topology, flow):
        return client_properties(target, topology.worker_groups[flow.worker_group])
    if target.security.protocol is not SecurityProtocol.PLAINTEXT:
        return security_properties(target.security, secrets)
    return {}


def _exactly_once_source() -> dict[str, str]:
    return {
        "exactly.once.support": "required",
        "transaction.boundary": "poll",
        # MM2 supports exactly-once only when it skips aborted source records.
        "source.consumer.isolation.level": "read_committed",
    }


def wants_exactly_once(topology: Topology, group: WorkerGroup) -> bool:
    """True when an enabled flow on `group` is exactly-once."""
    return any(f.exactly_once for f in topology.enabled_flows() if f.worker_group == group.name)


def transactional_workers(topology: Topology, group: WorkerGroup) -> bool:
    """Workers of `group` run, or may run, with exactly-once source support: a flow on the group
    is exactly-once (the rollout's `preparing` step included), or exactly-once was turned off and
    some worker still runs with it (`disabling`). On such a worker every source task (checkpoint
    and heartbeat ones too, exactly-once flow or not) writes in transactions, and the leader (even
    one at `preparing`) fences old task generations with the connector's admin client before a
    task starts."""
    return group.exactly_once_stage == EXACTLY_ONCE_DISABLING or wants_exactly_once(topology, group)


def transactional_group(topology: Topology, flow: Flow) -> bool:
    """The flow runs on transactional workers (`transactional_workers`). Its connectors must then
    reach the target as its MM2 user: the rollout turns the workers enabled one at a time before
    the connectors change, so from the `preparing` step on, or the first enabled worker's tasks
    fail, their fencing refused to the worker's own user (TransactionalIdAuthorizationException);
    and until the last worker has left `enabled`, or its tasks fail to read their offsets back."""
    return transactional_workers(topology, topology.worker_groups[flow.worker_group])


def source_client_defaults(topology: Topology, flow: Flow) -> dict[str, str]:
    """The source connector's client settings below every explicit level: the tuned defaults, and
    over them the settings derived from the WAN link the flow's records cross (links.py)."""
    return {**TUNED_SOURCE_CLIENT, **{d.key: d.value for d in derived_link_settings(topology, flow)}}


def flow_connectors(topology: Topology, flow: Flow) -> FlowConnectors:
    group: WorkerGroup = topology.worker_groups[flow.worker_group]
    source = topology.clusters[flow.source]
    target = topology.clusters[flow.target]
    secrets = group.secrets_file
    policy = flow.replication_policy

    common: dict[str, str] = {
        "source.cluster.alias": flow.source,
        "target.cluster.alias": flow.target,
        **_prefixed("source.cluster.", client_properties(source, group)),
        **_prefixed("target.cluster.", client_properties(target, group)),
        **_prefixed("source.", dict(source.client)),
        **_prefixed("target.", dict(target.client)),
        "key.converter": BYTE_ARRAY_CONVERTER,
        "value.converter": BYTE_ARRAY_CONVERTER,
        "header.converter": BYTE_ARRAY_CONVERTER,
        "replication.policy.class": policy.class_name,
        "replication.policy.separator": policy.separator,
    }
    # The framework producer writes every connector's records; aim it at the target, as the
    # target's MM2 user: otherwise it would write as the worker, whose rights (least privilege)
    # end at the group's storage topics.
    to_target = _target_client(topology, flow, target, secrets)
    common.update(_prefixed("producer.override.", to_target))
    if transactional_group(topology, flow):
        # The worker fences zombie task producers with the connector's admin client and reads
        # a connector's offsets back with its consumer: both must reach the target as the
        # producer does (Worker.adminConfigs / baseConsumerConfigs start from the worker's own
        # cluster and user).
        common.update(_prefixed("admin.override.", to_target))
        common.update(_prefixed("consumer.override.", to_target))
    common.update(
        {f"producer.override.{k[len('producer.') :]}": v for k, v in target.client.items() if k.startswith("producer.")}
    )
    topic_filter = {
        "topics": ",".join(flow.topics),
        "topics.exclude": ",".join(flow.topics_exclude),
    }
    tasks_max = str(flow_tasks_max(topology, flow))
    per_role: dict[ConnectorRole, dict[str, str]] = {
        ConnectorRole.SOURCE: {**topic_filter, "tasks.max": tasks_max},
        ConnectorRole.CHECKPOINT: {
            **topic_filter,
            "groups": ",".join(flow.groups),
            "groups.exclude": ",".join(flow.groups_exclude),
            "tasks.max": tasks_max,
        },
        # MirrorHeartbeatConnector only ever runs one task.
        ConnectorRole.HEARTBEAT: {"tasks.max": "1"},
    }
    if exactly_once_active(topology, flow):
        per_role[ConnectorRole.SOURCE].update(_exactly_once_source())

    specs: dict[ConnectorRole, ConnectorSpec] = {}
    for role in ConnectorRole:
        name = connector_name(flow, role)
        config = {
            # Tuning first, then what the flow's WAN link derives: cluster client overrides (in
            # common) and settings win over both.
            **(source_client_defaults(topology, flow) if role is ConnectorRole.SOURCE else {}),
            **common,
            **routed_settings(flow, role),
            **per_role[role],
            "name": name,
            "connector.class": CONNECTOR_CLASSES[role],
        }
        specs[role] = ConnectorSpec(
            name=name, role=role, connector_class=CONNECTOR_CLASSES[role], config=frozen_map(config)
        )
    return FlowConnectors(
        source=specs[ConnectorRole.SOURCE],
        checkpoint=specs[ConnectorRole.CHECKPOINT],
        heartbeat=specs[ConnectorRole.HEARTBEAT],
    )


def reverse_heartbeat_name(flow: Flow) -> str:
    """`mm2-<source>-to-<target>-reverse-heartbeat`: named after the flow it belongs to, so it
    never collides with the heartbeat connector of a `target->source` flow."""
    return f"mm2-{flow.source}-to-{flow.target}-reverse-heartbeat"


def reverse_heartbeat_connector(topology: Topology, flow: Flow) -> ConnectorSpec | None:
    """With `reverseHeartbeats`, a MirrorHeartbeatConnector for `target->source` on the flow's
    worker group: it writes heartbeats keyed (target, source) into `heartbeats` on the flow's
    source, so the source side sees that the target is alive (Strimzi's recommendation). It is the
    heartbeat connector of the reversed flow, so the producer override aims it at the source as the
    source's MM2 user exactly as a forward flow's connectors are aimed at their target."""
    if not flow.reverse_heartbeats:
        return None
    back = replace(flow, source=flow.target, target=flow.source, reverse_heartbeats=False)
    spec = flow_connectors(topology, back).heartbeat
    name = reverse_heartbeat_name(flow)
    source = topology.clusters[flow.source]
    config = {
        **spec.config,
        "name": name,
        # The topic lives on the flow's source: size it there (the flow's own is sized to the target).
        "heartbeats.topic.replication.factor": str(min(3, source.brokers)),
    }
    return ConnectorSpec(
        name=name, role=ConnectorRole.HEARTBEAT, connector_class=spec.connector_class, config=frozen_map(config)
    )


# ---- names MM2 gives topics -------------------------------------------------------------


def _internal_separator(flow: Flow) -> str:
    # KIP-949: internal topic names use the separator unless this switch is off.
    enabled = flow.settings.get("replication.policy.internal.topic.separator.enabled", "true")
    return flow.replication_policy.separator if enabled.lower() == "true" else "."


def remote_topic(flow: Flow, topic: str) -> str:
    """The name `topic` from the source gets on the target.

    Identity keeps names, except heartbeats: IdentityReplicationPolicy defers to the default
    naming for any topic ending in "heartbeats". A custom class is assumed to name like the
    default policy unless declared name-preserving.
    """
    policy = flow.replication_policy
    keeps = policy.kind is PolicyKind.IDENTITY or (policy.kind is PolicyKind.CUSTOM and policy.preserves_names)
    if keeps and not topic.endswith(HEARTBEATS_TOPIC):
        return topic
    return f"{flow.source}{policy.separator}{topic}"


def checkpoints_topic(flow: Flow) -> str:
    """`<source>.checkpoints.internal`, on the target cluster."""
    sep = _internal_separator(flow)
    return f"{flow.source}{sep}checkpoints{sep}internal"


def heartbeats_topic(flow: Flow) -> str:
    """`heartbeats`, on the target cluster (written by the flow's heartbeat connector)."""
    return HEARTBEATS_TOPIC


def offset_syncs_location(flow: Flow) -> str:
    return flow.settings.get("offset-syncs.topic.location", "source")


def offset_syncs_cluster(flow: Flow) -> str:
    """Alias of the cluster holding the flow's offset-syncs topic (the source by default)."""
    return flow.source if offset_syncs_location(flow) == "source" else flow.target


def offset_syncs_topic(flow: Flow) -> str:
    """`mm2-offset-syncs.<other alias>.internal`: it names the cluster it does not live on."""
    sep = _internal_separator(flow)
    other = flow.target if offset_syncs_location(flow) == "source" else flow.source
    return f"mm2-offset-syncs{sep}{other}{sep}internal"


def heartbeat_topics(topology: Topology, group: WorkerGroup) -> tuple[tuple[str, str], ...]:
    """(target, remote heartbeats topic) pairs that should keep arriving for this group's flows.

    Flow A->B replicates A's `heartbeats` to `A.heartbeats` on B, but only some flow X->A's
    heartbeat connector writes into A (active/active does; a lone one-way flow does not).
    """
    into = {flow.target for flow in topology.enabled_flows()}
    return tuple(
        (flow.target, remote_topic(flow, "heartbeats"))
        for flow in topology.enabled_flows()
        if flow.worker_group == group.name and flow.source in into
    )
