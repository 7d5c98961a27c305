"""The stack as the rules see it: resources read out of the engine's args into plain data.

Every rule reads the resources the components register, matched by type token:

- `pulumi-python:dynamic/connect:Connector`: `name`, `config` (the exact MM2 connector keys),
  `connect_url`, `auth`; three per enabled flow `A->B` (`mm2-A-to-B-source|checkpoint|heartbeat`).
- `mm2:index:KafkaCluster`: `alias`, `platform`, `brokers`, `datacenter`, `securityProtocol`.
- `mm2:index:ConnectWorkerGroup`: `name`, `cluster`, `workers`, `restAuth`, `restTls`.
- `mm2:index:ReplicationFlow`: `source`, `target`, `enabled`, `replicationPolicy`, `separator`,
  `namePreserving`, `disasterRecovery`, `syncGroupOffsets`, `workerGroup`, `rpoSeconds`,
  `outageBudgetSeconds`.
- `mm2:index:KafkaCluster` also `logRetentionMs` (its topics' default retention, -1 unlimited).
- `pulumi-python:dynamic/kafka:Topic`: `cluster` (alias), `name`, `config` (the topic's configs).

Rules about one resource are resource validations (they see the resource's inputs); rules about
several resources are stack validations (they see every resource's outputs, so a component must
keep these properties in its registered outputs). During preview any value may be unknown: rules
skip what they cannot judge and never raise on a missing or unknown property.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from graph import FlowKey
from model_facts import (
    CLUSTER_TYPE,
    CONNECTOR_NAME,
    CONNECTOR_TYPE,
    FLOW_TYPE,
    KIND_BY_CLASS,
    MM2_DEFAULTS,
    REVERSE_HEARTBEAT_SUFFIX,
    TOPIC_TYPE,
    ConnectorKind,
)
from pulumi_policy import PolicyResource, Secret
from pulumi_policy.proxy import (
    UNKNOWN_ARCHIVE_VALUE,
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_ASSET_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
)

# --------------------------------------------------------------------------------------------
# Unknown values: the policy SDK wraps props in proxies that raise on unknowns during preview.
# We copy props into plain data once, with unknowns replaced by UNKNOWN, and never touch the
# proxies again.
# --------------------------------------------------------------------------------------------


class _Unknown:
    def __repr__(self) -> str:
        return "<unknown during preview>"


UNKNOWN: Final = _Unknown()

_UNKNOWN_SENTINELS: Final = frozenset(
    {
        UNKNOWN_BOOLEAN_VALUE,
        UNKNOWN_NUMBER_VALUE,
        UNKNOWN_STRING_VALUE,
        UNKNOWN_ARRAY_VALUE,
        UNKNOWN_ASSET_VALUE,
        UNKNOWN_ARCHIVE_VALUE,
        UNKNOWN_OBJECT_VALUE,
    }
)


def plain(value: Any) -> Any:
    """A plain copy of a property value: dicts, lists, scalars, and UNKNOWN where preview can't know."""
    if isinstance(value, Secret):
        return plain(value.value)
    if isinstance(value, str):
        return UNKNOWN if value in _UNKNOWN_SENTINELS else value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key in list(value):
            try:
                out[str(key)] = plain(value[key])
            except UnknownValueError:
                out[str(key)] = UNKNOWN
        return out
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        items: list[Any] = []
        for index in range(len(value)):
            try:
                items.append(plain(value[index]))
            except UnknownValueError:
                items.append(UNKNOWN)
        return items
    return value


def as_text(value: Any) -> str | None:
    """A config value as MM2 sees it (a string), or None when absent or unknown."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return None


def as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    return None


# --------------------------------------------------------------------------------------------
# MM2 list settings
# --------------------------------------------------------------------------------------------


def split_list(value: str) -> list[str]:
    """An MM2 list setting: comma-separated, whitespace around commas ignored, empty items dropped."""
    return [item.strip() for item in value.split(",") if item.strip()]


_LIST_KEYS: Final = frozenset({"topics", "topics.exclude"})


def comparable(key: str, value: str) -> str:
    return ",".join(split_list(value)) if key in _LIST_KEYS else value.strip()


# --------------------------------------------------------------------------------------------
# The stack as the rules see it
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Connector:
    """A Connector resource. `config` is None when the whole map is unknown."""

    urn: str
    name: str
    config: Mapping[str, Any] | None
    kind: ConnectorKind | None
    source: str | None
    target: str | None

    @property
    def flow(self) -> FlowKey | None:
        if self.source is None or self.target is None:
            return None
        return (self.source, self.target)

    def raw(self, key: str) -> Any:
        """The value as registered: None when absent, UNKNOWN when unknown (or the map is)."""
        if self.config is None:
            return UNKNOWN
        value = self.config.get(key)
        if value is None or value is UNKNOWN:
            return value
        text = as_text(value)
        return UNKNOWN if text is None else text

    def setting(self, key: str, default: str | None = None) -> str | None:
        """The effective value (MM2's default when absent), or None when it can't be known."""
        value = self.raw(key)
        if value is UNKNOWN:
            return None
        if value is None:
            return default if default is not None else MM2_DEFAULTS.get(key)
        return str(value)


@dataclass(frozen=True)
class Cluster:
    urn: str
    alias: str
    brokers: int | None
    datacenter: str | None
    security_protocol: str | None
    log_retention_ms: int | None = None  # None when absent (stacks before it) or unknown


@dataclass(frozen=True)
class Topic:
    """A Topic resource the stack owns; `config` is None when the map is unknown."""

    urn: str
    cluster: str
    name: str
    config: Mapping[str, Any] | None


@dataclass(frozen=True)
class FlowComponent:
    """A ReplicationFlow component. Optional fields are None when absent or unknown."""

    urn: str
    source: str | None
    target: str | None
    enabled: bool | None
    """Absent counts as enabled (only enabled flows get a component); None only when unknown."""
    replication_policy: str | None
    separator: str | None
    name_preserving: bool | None
    disaster_recovery: bool | None
    sync_group_offsets: bool | None
    outage_budget_seconds: int | None = None
    rpo_seconds: int | None = None

    @property
    def flow(self) -> FlowKey | None:
        if self.source is None or self.target is None:
            return None
        return (self.source, self.target)


def connector_from_props(urn: str, resource_name: str, props: Mapping[str, Any]) -> Connector:
    """Read a Connector from plain props; fall back on its name when the config is unknown."""
    name = as_text(props.get("name")) or resource_name
    raw_config = props.get("config")
    config = raw_config if isinstance(raw_config, Mapping) else None

    kind: ConnectorKind | None = None
    source: str | None = None
    target: str | None = None
    if config is not None:
        klass = as_text(config.get("connector.class"))
        if klass is not None:
            kind = KIND_BY_CLASS.get(klass.rsplit(".", 1)[-1])
        source = as_text(config.get("source.cluster.alias"))
        target = as_text(config.get("target.cluster.alias"))
    # Preview may not know the config yet; the name `mm2-A-to-B-kind` still tells the flow,
    # unless an alias itself contains "-to-" (then we don't guess).
    match = CONNECTOR_NAME.match(name)
    if match:
        if kind is None and (config is None or config.get("connector.class") is UNKNOWN):
            kind = ConnectorKind(match["kind"])
        parts = match["flow"].split("-to-")
        if len(parts) == 2 and all(parts):
            if source is None and (config is None or config.get("source.cluster.alias") is UNKNOWN):
                source = parts[0]
            if target is None and (config is None or config.get("target.cluster.alias") is UNKNOWN):
                target = parts[1]
    return Connector(urn=urn, name=name, config=config, kind=kind, source=source, target=target)


@dataclass(frozen=True)
class StackView:
    clusters: Mapping[str, Cluster]
    flows: tuple[FlowComponent, ...]
    connectors: tuple[Connector, ...]
    topics: tuple[Topic, ...] = ()

    @staticmethod
    def from_resources(resources: Iterable[PolicyResource]) -> StackView:
        clusters: dict[str, Cluster] = {}
        flows: list[FlowComponent] = []
        connectors: list[Connector] = []
        topics: list[Topic] = []
        for resource in resources:
            if resource.resource_type not in (CONNECTOR_TYPE, CLUSTER_TYPE, FLOW_TYPE, TOPIC_TYPE):
                continue
            props = plain(resource.props)
            if not isinstance(props, Mapping):
                continue
            if resource.resource_type == TOPIC_TYPE:
                topic = _topic(resource.urn, props)
                if topic is not None:
                    topics.append(topic)
            elif resource.resource_type == CONNECTOR_TYPE:
                if resource.name.endswith(REVERSE_HEARTBEAT_SUFFIX):
                    # A flow's reverse heartbeat connector (target->source) replicates nothing: it is
                    # no flow of its own, so it can close no loop and lacks no source connector.
                    continue
                connectors.append(connector_from_props(resource.urn, resource.name, props))
            elif resource.resource_type == CLUSTER_TYPE:
                alias = as_text(props.get("alias"))
                if alias is not None and alias not in clusters:
                    clusters[alias] = Cluster(
                        urn=resource.urn,
                        alias=alias,
                        brokers=as_int(props.get("brokers")),
                        datacenter=as_text(props.get("datacenter")),
                        security_protocol=as_text(props.get("securityProtocol")),
                        log_retention_ms=as_int(props.get("logRetentionMs")),
                    )
            else:
                enabled_raw = props.get("enabled")
                flows.append(
                    FlowComponent(
                        urn=resource.urn,
                        source=as_text(props.get("source")),
                        target=as_text(props.get("target")),
                        enabled=True if enabled_raw is None else as_bool(enabled_raw),
                        replication_policy=as_text(props.get("replicationPolicy")),
                        separator=as_text(props.get("separator")),
                        name_preserving=as_bool(props.get("namePreserving")),
                        disaster_recovery=as_bool(props.get("disasterRecovery")),
                        sync_group_offsets=as_bool(props.get("syncGroupOffsets")),
                        outage_budget_seconds=as_int(props.get("outageBudgetSeconds")),
                        rpo_seconds=as_int(props.get("rpoSeconds")),
                    )
                )
        return StackView(clusters=clusters, flows=tuple(flows), connectors=tuple(connectors), topics=tuple(topics))

    def enabled_flows(self) -> list[FlowKey]:
        """Flows that run: enabled components, and any flow that has a connector, in stack order."""
        keys: dict[FlowKey, None] = {}
        for flow in self.flows:
            if flow.enabled is True and flow.flow is not None:
                keys[flow.flow] = None
        for connector in self.connectors:
            if connector.flow is not None:
                keys[connector.flow] = None
        return list(keys)

    def connectors_of(self, flow: FlowKey, kind: ConnectorKind) -> list[Connector]:
        return [c for c in self.connectors if c.flow == flow and c.kind == kind]

    def component_of(self, flow: FlowKey) -> FlowComponent | None:
        return next((f for f in self.flows if f.flow == flow), None)

    def flow_urn(self, flow: FlowKey) -> str | None:
        """Where to attach a flow's violation: its component, else its first connector."""
        component = self.component_of(flow)
        if component is not None:
            return component.urn
        return next((c.urn for c in self.connectors if c.flow == flow), None)


def _topic(urn: str, props: Mapping[str, Any]) -> Topic | None:
    """A Topic from plain props; None when its cluster or name is not known yet."""
    cluster, name = as_text(props.get("cluster")), as_text(props.get("name"))
    if cluster is None or name is None:
        return None
    raw_config = props.get("config")
    config = raw_config if isinstance(raw_config, Mapping) else ({} if raw_config is None else None)
    return Topic(urn=urn, cluster=cluster, name=name, config=config)
