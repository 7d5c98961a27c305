"""Stacks as the policy host hands them to the rules: PolicyResource lists and validation args.

Props go through the SDK's own `unknown_checking_proxy`, so unknown values behave exactly as in a
real preview (reading one raises UnknownValueError).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pulumi_policy import (
    Policy,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UNKNOWN_OBJECT_VALUE, UNKNOWN_STRING_VALUE, unknown_checking_proxy

PROJECT = "mm2-replication"
DEFAULT_POLICY = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
IDENTITY_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
UNKNOWN = UNKNOWN_STRING_VALUE
UNKNOWN_MAP = UNKNOWN_OBJECT_VALUE
KINDS = ("source", "checkpoint", "heartbeat")
CLASSES = {
    "source": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
    "checkpoint": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
    "heartbeat": "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
}
SECRETS = "/etc/mm2/secrets.properties"


def urn(type_: str, name: str, parent_type: str | None = None, stack: str = "prod") -> str:
    qualified = f"{parent_type}${type_}" if parent_type else type_
    return f"urn:pulumi:{stack}::{PROJECT}::{qualified}::{name}"


def _options(parent: str | None = None) -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], parent)


def resource(type_: str, name: str, props: Mapping[str, Any], parent: PolicyResource | None = None) -> PolicyResource:
    return PolicyResource(
        type_,
        unknown_checking_proxy(dict(props)),
        urn(type_, name, parent.resource_type if parent else None),
        name,
        _options(parent.urn if parent else None),
        None,
        parent,
        [],
        {},
    )


def cluster(alias: str, brokers: Any = 3, datacenter: Any = "dc1", protocol: Any = "SASL_SSL") -> PolicyResource:
    return resource(
        "mm2:index:KafkaCluster",
        f"kafka-{alias}",
        {
            "alias": alias,
            "platform": "kubernetes",
            "brokers": brokers,
            "datacenter": datacenter,
            "securityProtocol": protocol,
        },
    )


def worker_group(name: str = "mm2", rest_auth: Any = True, **extra: Any) -> PolicyResource:
    props = {"name": name, "cluster": "b", "workers": 3, "restAuth": rest_auth, "restTls": True, **extra}
    if rest_auth is None:
        del props["restAuth"]
    return resource("mm2:index:ConnectWorkerGroup", f"connect-{name}", props)


def flow(
    source: str,
    target: str,
    policy: Any = DEFAULT_POLICY,
    *,
    name_preserving: Any = None,
    enabled: Any = True,
    disaster_recovery: Any = False,
    sync_group_offsets: Any = True,
) -> PolicyResource:
    props: dict[str, Any] = {
        "source": source,
        "target": target,
        "enabled": enabled,
        "replicationPolicy": policy,
        "separator": ".",
        "disasterRecovery": disaster_recovery,
        "syncGroupOffsets": sync_group_offsets,
        "workerGroup": "mm2",
    }
    if name_preserving is not None:
        props["namePreserving"] = name_preserving
    return resource("mm2:index:ReplicationFlow", f"flow-{source}-to-{target}", props)


def jaas(user_key: str, password: str) -> str:
    return (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="${{file:{SECRETS}:{user_key}}}" password="{password}";'
    )


def connector_config(
    source: str, target: str, kind: str, policy: str = DEFAULT_POLICY, **settings: str | None
) -> dict[str, Any]:
    """A complete, safe config for one connector of flow source->target; `settings` override (None removes)."""
    config: dict[str, Any] = {
        "connector.class": CLASSES[kind],
        "source.cluster.alias": source,
        "target.cluster.alias": target,
        "source.cluster.bootstrap.servers": f"{source}-kafka:9093",
        "target.cluster.bootstrap.servers": f"{target}-kafka:9093",
        "source.cluster.security.protocol": "SASL_SSL",
        "target.cluster.security.protocol": "SASL_SSL",
        "source.cluster.sasl.mechanism": "SCRAM-SHA-512",
        "source.cluster.sasl.jaas.config": jaas("mm2.user", f"${{file:{SECRETS}:{source}.password}}"),
        "target.cluster.sasl.mechanism": "SCRAM-SHA-512",
        "target.cluster.sasl.jaas.config": jaas("mm2.user", f"${{file:{SECRETS}:{target}.password}}"),
        "target.cluster.ssl.truststore.password": f"${{file:{SECRETS}:truststore.password}}",
        "replication.policy.class": policy,
        "replication.policy.separator": ".",
        "emit.heartbeats.interval.seconds": "1",
        "heartbeats.topic.replication.factor": "3",
    }
    if kind in ("source", "checkpoint"):
        config.update(
            {
                "topics": "orders, payments",
                "topics.exclude": r".*[\-\.]internal, .*\.replica, __.*",
                "offset-syncs.topic.location": "source",
                "offset-syncs.topic.replication.factor": "3",
            }
        )
    if kind == "source":
        config.update({"tasks.max": "4", "replication.factor": "3"})
    if kind == "checkpoint":
        config.update(
            {"groups": ".*", "sync.group.offsets.enabled": "true", "checkpoints.topic.replication.factor": "3"}
        )
    for key, value in settings.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    return config


def connector(
    source: str,
    target: str,
    kind: str,
    policy: str = DEFAULT_POLICY,
    parent: PolicyResource | None = None,
    config: Any = None,
    **settings: str | None,
) -> PolicyResource:
    name = f"mm2-{source}-to-{target}-{kind}"
    return resource(
        "pulumi-python:dynamic/connect:Connector",
        name,
        {
            "connect_url": "https://mm2-connect:8083",
            "name": name,
            "config": connector_config(source, target, kind, policy, **settings) if config is None else config,
            "auth": {"username": "admin", "password": "not-visible-to-rules"},
            "timeout_seconds": 120,
        },
        parent,
    )


def replication_flow(
    source: str,
    target: str,
    policy: str = DEFAULT_POLICY,
    *,
    name_preserving: Any = None,
    disaster_recovery: Any = False,
    kinds: Iterable[str] = KINDS,
    **settings: str | None,
) -> list[PolicyResource]:
    """A ReplicationFlow component and its connectors (children), as the stack registers them."""
    component = flow(source, target, policy, name_preserving=name_preserving, disaster_recovery=disaster_recovery)
    return [component, *(connector(source, target, k, policy, parent=component, **settings) for k in kinds)]


Violation = tuple[str, str | None]


def run_stack(
    policy: Policy, resources: Iterable[PolicyResource], config: Mapping[str, Any] | None = None
) -> list[Violation]:
    assert isinstance(policy, StackValidationPolicy)
    found: list[Violation] = []
    policy.validate(
        StackValidationArgs(list(resources), dict(config or {})),
        lambda message, where=None: found.append((message, where)),
    )
    return found


def run_resource(policy: Policy, res: PolicyResource, config: Mapping[str, Any] | None = None) -> list[str]:
    assert isinstance(policy, ResourceValidationPolicy)
    found: list[str] = []
    args = ResourceValidationArgs(res.resource_type, res.props, res.urn, res.name, res.opts, None, dict(config or {}))
    policy.validate(args, lambda message, where=None: found.append(message))
    return found


def run_resources(
    policy: Policy, resources: Iterable[PolicyResource], config: Mapping[str, Any] | None = None
) -> list[str]:
    """A resource policy over every resource of a stack, as the engine calls it."""
    return [message for res in resources for message in run_resource(policy, res, config)]


def messages(violations: Iterable[Violation]) -> list[str]:
    return [message for message, _ in violations]
