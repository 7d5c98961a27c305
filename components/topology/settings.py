"""Which MM2 keys exist, which connector each belongs to, and which keys typed fields own.

Sources: Kafka 4.x `MirrorConnectorConfig`, `MirrorSourceConfig`, `MirrorCheckpointConfig`,
`MirrorHeartbeatConfig` and Connect's `ConnectorConfig`, cross-checked with seed 000's table.

Placement (each setting goes only to the connector that reads it, so a preview diff on
`emit.heartbeats.interval.seconds` touches the heartbeat connector alone):

- source only: topic refresh, topic config/ACL sync, `config.properties.exclude`,
  `offset.lag.max`, remote-topic and offset-syncs replication factors, heartbeat replication;
- checkpoint only: `emit.checkpoints.*`, `sync.group.offsets.*`, `refresh.groups.*`, group
  filter class, checkpoints replication factor;
- heartbeat only: `emit.heartbeats.*`, heartbeats replication factor;
- source and checkpoint (they must agree, or checkpoints read the wrong offset-syncs topic or
  translate topics the source never replicated): `offset-syncs.topic.location`,
  `emit.offset-syncs.enabled`, `topic.filter.class`, `consumer.poll.timeout.ms`, and the typed
  topic filter (`topics`, `topics.exclude`);
- all three: replication policy class and separator (typed), the internal-topic separator
  switch, `admin.timeout.ms`, metrics reporters, forwarding admin, Connect's `errors.*`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

SOURCE_ONLY: frozenset[str] = frozenset(
    {
        "refresh.topics.enabled",
        "refresh.topics.interval.seconds",
        "sync.topic.configs.enabled",
        "sync.topic.configs.interval.seconds",
        "sync.topic.acls.enabled",
        "sync.topic.acls.interval.seconds",
        "config.properties.exclude",
        "config.property.filter.class",
        "offset.lag.max",
        "replication.factor",
        "offset-syncs.topic.replication.factor",
        "heartbeats.replication.enabled",
    }
)
SOURCE_AND_CHECKPOINT: frozenset[str] = frozenset(
    {
        "offset-syncs.topic.location",
        "emit.offset-syncs.enabled",
        "topic.filter.class",
        "consumer.poll.timeout.ms",
    }
)
CHECKPOINT_ONLY: frozenset[str] = frozenset(
    {
        "emit.checkpoints.enabled",
        "emit.checkpoints.interval.seconds",
        "sync.group.offsets.enabled",
        "sync.group.offsets.interval.seconds",
        "refresh.groups.enabled",
        "refresh.groups.interval.seconds",
        "group.filter.class",
        "checkpoints.topic.replication.factor",
    }
)
HEARTBEAT_ONLY: frozenset[str] = frozenset(
    {
        "emit.heartbeats.enabled",
        "emit.heartbeats.interval.seconds",
        "heartbeats.topic.replication.factor",
    }
)
ALL_CONNECTORS: frozenset[str] = frozenset(
    {
        "admin.timeout.ms",
        "replication.policy.internal.topic.separator.enabled",
        "forwarding.admin.class",
        "metric.reporters",
        "errors.tolerance",
        "errors.log.enable",
        "errors.log.include.messages",
        "errors.retry.timeout",
        "errors.retry.delay.max.ms",
    }
)
KNOWN_SETTINGS: frozenset[str] = SOURCE_ONLY | SOURCE_AND_CHECKPOINT | CHECKPOINT_ONLY | HEARTBEAT_ONLY | ALL_CONNECTORS

# role -> the free-form settings that connector receives
ROLE_SETTINGS: dict[str, frozenset[str]] = {
    "source": SOURCE_ONLY | SOURCE_AND_CHECKPOINT | ALL_CONNECTORS,
    "checkpoint": CHECKPOINT_ONLY | SOURCE_AND_CHECKPOINT | ALL_CONNECTORS,
    "heartbeat": HEARTBEAT_ONLY | ALL_CONNECTORS,
}

# Flows into one target share these through that cluster: the remote-topic naming every
# consumer and every onward flow parses there (policy class and separators), and the single
# `heartbeats` topic all heartbeat connectors for that target create and write (first
# creator wins its replication factor). MM2 docs: "MM2 processes share configuration via
# their target Kafka clusters ... keep configuration consistent across flows to the same
# target cluster."
TARGET_SHARED: tuple[str, ...] = (
    "replication.policy.class",
    "replication.policy.separator",
    "replication.policy.internal.topic.separator.enabled",
    "heartbeats.topic.replication.factor",
)

# Keys that name a replication factor, and the cluster on which that topic lives.
REPLICATION_FACTOR_KEYS: tuple[str, ...] = (
    "replication.factor",
    "checkpoints.topic.replication.factor",
    "heartbeats.topic.replication.factor",
    "offset-syncs.topic.replication.factor",
)

BOOLEAN_SETTINGS: frozenset[str] = frozenset(k for k in KNOWN_SETTINGS if k.endswith(".enabled")) | {
    "errors.log.enable",
    "errors.log.include.messages",
}
INTEGER_SETTINGS: frozenset[str] = frozenset(
    k for k in KNOWN_SETTINGS if k.endswith((".seconds", ".ms", ".factor", ".max"))
) | {"errors.retry.timeout"}
ENUM_SETTINGS: dict[str, tuple[str, ...]] = {
    "offset-syncs.topic.location": ("source", "target"),
    "errors.tolerance": ("none", "all"),
}

# Keys removed from Kafka 4 (KIP-629 names), with their modern replacement.
REMOVED_KEYS: dict[str, str] = {
    "topics.blacklist": "topics.exclude",
    "groups.blacklist": "groups.exclude",
    "config.properties.blacklist": "config.properties.exclude",
    "topics.whitelist": "topics",
    "groups.whitelist": "groups",
    "topic.whitelist": "topics",
    "whitelist": "topics",
}

# Free-form setting keys owned by a typed field: key -> where to put it instead.
SETTINGS_OWNED: dict[str, str] = {
    "name": "nothing: connector names derive from the flow (mm2-<source>-to-<target>-<role>)",
    "connector.class": "nothing: each flow always gets its three MM2 connectors",
    "tasks.max": "`tasksMax` on the flow or under `defaults`",
    "enabled": "`enabled` on the flow",
    "clusters": "the `clusters` map",
    "source.cluster.alias": "nothing: the alias comes from the flow key `source->target`",
    "target.cluster.alias": "nothing: the alias comes from the flow key `source->target`",
    "key.converter": "nothing: MM2 connectors always use ByteArrayConverter",
    "value.converter": "nothing: MM2 connectors always use ByteArrayConverter",
    "header.converter": "nothing: MM2 connectors always use ByteArrayConverter",
    "bootstrap.servers": "`clusters.<alias>.bootstrap` (external) or the cluster's platform",
    "security.protocol": "`clusters.<alias>.security.protocol`",
    "replication.policy.class": "`replicationPolicy.class` on the flow or under `defaults`",
    "replication.policy.separator": "`replicationPolicy.separator` on the flow or under `defaults`",
    "topics": "`topics` (a list of patterns) on the flow or under `defaults`",
    "topics.exclude": "`topicsExclude` on the flow or under `defaults`",
    "groups": "`groups` on the flow or under `defaults`",
    "groups.exclude": "`groupsExclude` on the flow or under `defaults`",
    "exactly.once.support": "`exactlyOnce: true` on the flow",
    "transaction.boundary": "`exactlyOnce: true` on the flow (MM2 uses poll boundaries)",
}
SETTINGS_OWNED_PREFIXES: dict[str, str] = {
    "source.cluster.": "`clusters.<source>.security` / `.client`",
    "target.cluster.": "`clusters.<target>.security` / `.client`",
    "source.": "`clusters.<source>.client` (producer./consumer./admin. keys)",
    "target.": "`clusters.<target>.client` (producer./consumer./admin. keys)",
    "producer.override.": "`clusters.<target>.client` with `producer.` keys",
    "consumer.override.": "`clusters.<source>.client` with `consumer.` keys",
    "admin.override.": "`clusters.<alias>.client` with `admin.` keys",
    "producer.": "`clusters.<alias>.client`",
    "consumer.": "`clusters.<alias>.client`",
    "admin.": "`clusters.<alias>.client`",
    "sasl.": "`clusters.<alias>.security`",
    "ssl.": "`clusters.<alias>.security`",
    "config.providers": "nothing: workers get the file config provider automatically",
}

CLIENT_PREFIXES: tuple[str, ...] = ("producer.", "consumer.", "admin.")
# Inside a client override (after producer./consumer./admin.) these belong to typed fields.
CLIENT_OWNED: dict[str, str] = {
    "bootstrap.servers": "`clusters.<alias>.bootstrap` or the cluster's platform",
    "security.protocol": "`clusters.<alias>.security.protocol`",
}
CLIENT_OWNED_PREFIXES: dict[str, str] = {
    "sasl.": "`clusters.<alias>.security`",
    "ssl.": "`clusters.<alias>.security`",
}

WORKER_OWNED: dict[str, str] = {
    "bootstrap.servers": "`workerGroups.<name>.cluster`",
    "group.id": "`workerGroups.<name>.groupId`",
    "config.storage.topic": "`workerGroups.<name>.configTopic`",
    "offset.storage.topic": "`workerGroups.<name>.offsetTopic`",
    "status.storage.topic": "`workerGroups.<name>.statusTopic`",
    "config.storage.replication.factor": "nothing: it is min(3, brokers of the group's cluster)",
    "offset.storage.replication.factor": "nothing: it is min(3, brokers of the group's cluster)",
    "status.storage.replication.factor": "nothing: it is min(3, brokers of the group's cluster)",
    "key.converter": "nothing: workers use ByteArrayConverter, as MM2 requires",
    "value.converter": "nothing: workers use ByteArrayConverter, as MM2 requires",
    "header.converter": "nothing: workers use ByteArrayConverter, as MM2 requires",
    "listeners": "`workerGroups.<name>.restPort`",
    "rest.advertised.host.name": "nothing: derived from the platform",
    "rest.advertised.port": "`workerGroups.<name>.restPort`",
    "rest.extension.classes": "`workerGroups.<name>.restAuth`",
    "security.protocol": "`clusters.<alias>.security.protocol` of the group's cluster",
    "connector.client.config.override.policy": "nothing: derived from the flows on the group",
    "exactly.once.source.support": "`exactlyOnce: true` on the flows of the group",
}
WORKER_OWNED_PREFIXES: dict[str, str] = {
    "sasl.": "`clusters.<alias>.security` of the group's cluster",
    "ssl.": "`clusters.<alias>.security` of the group's cluster",
    "config.providers": "nothing: workers get the file config provider automatically",
    "producer.security.": "`clusters.<alias>.security`",
    "consumer.security.": "`clusters.<alias>.security`",
    "admin.security.": "`clusters.<alias>.security`",
    "producer.sasl.": "`clusters.<alias>.security`",
    "consumer.sasl.": "`clusters.<alias>.security`",
    "admin.sasl.": "`clusters.<alias>.security`",
    "producer.ssl.": "`clusters.<alias>.security`",
    "consumer.ssl.": "`clusters.<alias>.security`",
    "admin.ssl.": "`clusters.<alias>.security`",
    "producer.bootstrap.servers": "`workerGroups.<name>.cluster`",
    "consumer.bootstrap.servers": "`workerGroups.<name>.cluster`",
    "admin.bootstrap.servers": "`workerGroups.<name>.cluster`",
}

BROKER_OWNED: dict[str, str] = {
    "node.id": "nothing: node ids are 0..brokers-1",
    "broker.id": "nothing: node ids are 0..brokers-1",
    "process.roles": "nothing: local brokers are combined broker+controller",
    "listeners": "`clusters.<alias>.port`",
    "advertised.listeners": "`clusters.<alias>.port`",
    "controller.quorum.voters": "`clusters.<alias>.brokers` and `.port`",
    "controller.quorum.bootstrap.servers": "`clusters.<alias>.brokers` and `.port`",
    "controller.listener.names": "nothing: fixed to CONTROLLER",
    "inter.broker.listener.name": "nothing: fixed to CLIENT",
    "listener.security.protocol.map": "`clusters.<alias>.security.protocol`",
    "log.dirs": "nothing: the platform chooses the data directory",
    "log.dir": "nothing: the platform chooses the data directory",
    "security.inter.broker.protocol": "`clusters.<alias>.security.protocol`",
    "sasl.enabled.mechanisms": "`clusters.<alias>.security.saslMechanism`",
    "sasl.mechanism.inter.broker.protocol": "`clusters.<alias>.security.saslMechanism`",
}
BROKER_OWNED_PREFIXES: dict[str, str] = {
    "listener.name.": "`clusters.<alias>.security`",
    "config.providers": "nothing: brokers get the file config provider automatically",
}

_PLACEHOLDER = re.compile(r"^\$\{[A-Za-z0-9_.-]+:[^}]*\}$")


def owned_reason(key: str, owned: dict[str, str], prefixes: dict[str, str]) -> str | None:
    """Where a key owned by a typed field belongs instead, or None if it is free-form."""
    if key in owned:
        return owned[key]
    for prefix, reason in prefixes.items():
        if key.startswith(prefix):
            return reason
    return None


def suggest(key: str, candidates: Iterable[str]) -> str | None:
    matches = difflib.get_close_matches(key, sorted(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def looks_secret(key: str) -> bool:
    lowered = key.lower()
    return "password" in lowered or "secret" in lowered or lowered.endswith("jaas.config")


def is_placeholder(value: str) -> bool:
    """A config-provider reference (e.g. `${file:/etc/mm2/secrets.properties:key}`), not a value."""
    return bool(_PLACEHOLDER.match(value.strip()))
