"""CrossGuard rules for MirrorMaker 2 replication stacks.

Every rule reads the resources the components register, matched by type token:

- `pulumi-python:dynamic/connect:Connector`: `name`, `config` (the exact MM2 connector keys),
  `connect_url`, `auth`; three per enabled flow `A->B` (`mm2-A-to-B-source|checkpoint|heartbeat`).
- `mm2:index:KafkaCluster`: `alias`, `platform`, `brokers`, `datacenter`, `securityProtocol`.
- `mm2:index:ConnectWorkerGroup`: `name`, `cluster`, `workers`, `restAuth`, `restTls`.
- `mm2:index:ReplicationFlow`: `source`, `target`, `enabled`, `replicationPolicy`, `separator`,
  `namePreserving`, `disasterRecovery`, `syncGroupOffsets`, `workerGroup`.

Rules about one resource are resource validations (they see the resource's inputs); rules about
several resources are stack validations (they see every resource's outputs, so a component must
keep these properties in its registered outputs). During preview any value may be unknown: rules
skip what they cannot judge and never raise on a missing or unknown property.

The pack's `__main__.py` only builds `PolicyPack(policies=ALL_POLICIES)`; tests import this module.
`graph` (and this module) are imported as top-level modules: the policy host runs the pack
directory with `runpy.run_path`, which puts the directory first on `sys.path`; the tests do the same.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

import pulumi
from graph import (
    FlowKey,
    FlowObservation,
    cycle_edges,
    flow_label,
    format_cycle,
    merge_flows,
    name_preserving_cycles,
)
from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Secret,
    StackValidationArgs,
    StackValidationPolicy,
)
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
# Resource types and MM2 facts
# --------------------------------------------------------------------------------------------

CONNECTOR_TYPE: Final = "pulumi-python:dynamic/connect:Connector"
CLUSTER_TYPE: Final = "mm2:index:KafkaCluster"
WORKER_GROUP_TYPE: Final = "mm2:index:ConnectWorkerGroup"
FLOW_TYPE: Final = "mm2:index:ReplicationFlow"

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
_KIND_BY_CLASS: Final[Mapping[str, ConnectorKind]] = {v: k for k, v in _CLASS_BY_KIND.items()}
_CONNECTOR_NAME = re.compile(r"^mm2-(?P<flow>.+)-(?P<kind>source|checkpoint|heartbeat)$")


def connector_name(source: str, target: str, kind: ConnectorKind) -> str:
    """The name ReplicationFlow gives a connector (architecture.md)."""
    return f"mm2-{source}-to-{target}-{kind.value}"


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


def _as_text(value: Any) -> str | None:
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


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def _as_int(value: Any) -> int | None:
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
        text = _as_text(value)
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

    @property
    def flow(self) -> FlowKey | None:
        if self.source is None or self.target is None:
            return None
        return (self.source, self.target)


def connector_from_props(urn: str, resource_name: str, props: Mapping[str, Any]) -> Connector:
    """Read a Connector from plain props; fall back on its name when the config is unknown."""
    name = _as_text(props.get("name")) or resource_name
    raw_config = props.get("config")
    config = raw_config if isinstance(raw_config, Mapping) else None

    kind: ConnectorKind | None = None
    source: str | None = None
    target: str | None = None
    if config is not None:
        klass = _as_text(config.get("connector.class"))
        if klass is not None:
            kind = _KIND_BY_CLASS.get(klass.rsplit(".", 1)[-1])
        source = _as_text(config.get("source.cluster.alias"))
        target = _as_text(config.get("target.cluster.alias"))
    # Preview may not know the config yet; the name `mm2-A-to-B-kind` still tells the flow,
    # unless an alias itself contains "-to-" (then we don't guess).
    match = _CONNECTOR_NAME.match(name)
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

    @staticmethod
    def from_resources(resources: Iterable[PolicyResource]) -> StackView:
        clusters: dict[str, Cluster] = {}
        flows: list[FlowComponent] = []
        connectors: list[Connector] = []
        for resource in resources:
            if resource.resource_type not in (CONNECTOR_TYPE, CLUSTER_TYPE, FLOW_TYPE):
                continue
            props = plain(resource.props)
            if not isinstance(props, Mapping):
                continue
            if resource.resource_type == CONNECTOR_TYPE:
                connectors.append(connector_from_props(resource.urn, resource.name, props))
            elif resource.resource_type == CLUSTER_TYPE:
                alias = _as_text(props.get("alias"))
                if alias is not None and alias not in clusters:
                    clusters[alias] = Cluster(
                        urn=resource.urn,
                        alias=alias,
                        brokers=_as_int(props.get("brokers")),
                        datacenter=_as_text(props.get("datacenter")),
                        security_protocol=_as_text(props.get("securityProtocol")),
                    )
            else:
                enabled_raw = props.get("enabled")
                flows.append(
                    FlowComponent(
                        urn=resource.urn,
                        source=_as_text(props.get("source")),
                        target=_as_text(props.get("target")),
                        enabled=True if enabled_raw is None else _as_bool(enabled_raw),
                        replication_policy=_as_text(props.get("replicationPolicy")),
                        separator=_as_text(props.get("separator")),
                        name_preserving=_as_bool(props.get("namePreserving")),
                        disaster_recovery=_as_bool(props.get("disasterRecovery")),
                        sync_group_offsets=_as_bool(props.get("syncGroupOffsets")),
                    )
                )
        return StackView(clusters=clusters, flows=tuple(flows), connectors=tuple(connectors))

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


# --------------------------------------------------------------------------------------------
# Policy configuration
# --------------------------------------------------------------------------------------------

DEFAULT_DEV_STACKS: Final = ("dev",)
DEFAULT_NAME_PRESERVING_POLICIES: Final = (
    IDENTITY_POLICY_CLASS,
    # Strimzi's pre-Kafka-3.0 copy of the same policy.
    "io.strimzi.kafka.connect.mirror.IdentityReplicationPolicy",
)
DEFAULT_TLS_PROTOCOLS: Final = ("SSL", "SASL_SSL")
DEFAULT_SECRET_KEY_FRAGMENTS: Final = (
    "password",
    "secret",
    "sasl.jaas.config",
    "ssl.key.password",
    "basic.auth.user.info",
    "token",
)
# Keys that contain a fragment above but hold no secret (sasl.oauthbearer.token.endpoint.url).
DEFAULT_NON_SECRET_KEYS: Final = (r".*\.url", r".*\.class", r".*\.ms", r".*\.seconds")
# `{source}` and `{target}` are replaced by the flow's aliases.
DEFAULT_INTERNAL_TOPICS: Final = (
    "__consumer_offsets",
    "__transaction_state",
    "mm2-offset-syncs.{target}.internal",
    "mm2-configs.{target}.internal",
    "mm2-offsets.{source}.internal",
    "mm2-status.{target}.internal",
    "{target}.checkpoints.internal",
    "connect-configs",
    "connect-offsets",
    "connect-status",
    "heartbeats",
    "{target}.heartbeats",
)
# Patterns suggested in the fix, in the order tried; the list of internal topics.
_SUGGESTED_EXCLUDES: Final = (r"__.*", r".*[\-\.]internal", r"connect-.*", r"heartbeats", r".*\.heartbeats")

# Settings every flow into one target cluster must agree on, and which connector owns each.
# - replication.policy.class / .separator / .internal.topic.separator.enabled: remote and
#   internal topic names on the target are parsed back (MirrorClient, RemoteClusterUtils,
#   failover tooling, the next hop's cycle detection) with one policy; two flows naming topics
#   differently on one cluster make that parsing wrong for one of them.
# - heartbeats.topic.replication.factor: all heartbeat connectors into a target write the same
#   `heartbeats` topic there; whichever creates it first silently wins.
# - emit.heartbeats.enabled / emit.heartbeats.interval.seconds: heartbeats in that shared topic
#   are compared to judge liveness and lag; flows that don't emit, or emit at another rate, read
#   as stalled or lagging.
SHARED_TARGET_KEYS: Final[Mapping[str, tuple[ConnectorKind, ...]]] = {
    "replication.policy.class": (ConnectorKind.SOURCE, ConnectorKind.CHECKPOINT, ConnectorKind.HEARTBEAT),
    "replication.policy.separator": (ConnectorKind.SOURCE, ConnectorKind.CHECKPOINT, ConnectorKind.HEARTBEAT),
    "replication.policy.internal.topic.separator.enabled": (
        ConnectorKind.SOURCE,
        ConnectorKind.CHECKPOINT,
        ConnectorKind.HEARTBEAT,
    ),
    "heartbeats.topic.replication.factor": (ConnectorKind.HEARTBEAT,),
    "emit.heartbeats.enabled": (ConnectorKind.HEARTBEAT,),
    "emit.heartbeats.interval.seconds": (ConnectorKind.HEARTBEAT,),
}


def _strings(config: Mapping[str, Any], key: str, default: Sequence[str]) -> tuple[str, ...]:
    value = config.get(key) if isinstance(config, Mapping) else None
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return tuple(default)


def _integer(config: Mapping[str, Any], key: str, default: int) -> int:
    value = _as_int(config.get(key)) if isinstance(config, Mapping) else None
    return default if value is None else value


def _flag(config: Mapping[str, Any], key: str, default: bool) -> bool:
    value = _as_bool(config.get(key)) if isinstance(config, Mapping) else None
    return default if value is None else value


def current_stack_name() -> str:
    """The stack being previewed; the policy host sets PULUMI_STACK and the runtime settings."""
    name = os.environ.get("PULUMI_STACK") or pulumi.get_stack()
    return name.rsplit("/", 1)[-1]


def is_dev_stack(config: Mapping[str, Any]) -> bool:
    return current_stack_name() in _strings(config, "devStacks", DEFAULT_DEV_STACKS)


_DEV_STACKS_SCHEMA: Final[dict[str, Any]] = {
    "type": "array",
    "items": {"type": "string"},
    "default": list(DEFAULT_DEV_STACKS),
    "description": "Stack names treated as dev, where this rule does not apply.",
}


# --------------------------------------------------------------------------------------------
# Pure helpers
# --------------------------------------------------------------------------------------------


def is_name_preserving_class(class_name: str, preserving: Sequence[str]) -> bool:
    """Whether a replication policy class keeps topic names.

    Any class called IdentityReplicationPolicy does, whatever its package; other custom classes
    only when listed (or declared `namePreserving` on the flow).
    """
    name = class_name.strip()
    return name in preserving or name.rsplit(".", 1)[-1] == "IdentityReplicationPolicy"


def split_list(value: str) -> list[str]:
    """An MM2 list setting: comma-separated, whitespace around commas ignored, empty items dropped."""
    return [item.strip() for item in value.split(",") if item.strip()]


def compile_patterns(value: str) -> list[re.Pattern[str]] | None:
    """MM2 topic patterns (Java regexes, matched against the whole name); None if one won't compile.

    Python's `re` agrees with Java on the patterns people write for topic filters; a pattern it
    cannot compile (e.g. `\\Q...\\E`) makes the filter unjudgeable rather than guessed.
    """
    patterns: list[re.Pattern[str]] = []
    for item in split_list(value):
        try:
            patterns.append(re.compile(item))
        except re.error:
            return None
    return patterns


def replicated_topics(topics: Iterable[str], include: str, exclude: str) -> list[str] | None:
    """Which of `topics` MM2's DefaultTopicFilter lets through (None when a pattern won't compile)."""
    includes = compile_patterns(include)
    excludes = compile_patterns(exclude)
    if includes is None or excludes is None:
        return None
    return [
        topic
        for topic in topics
        if any(p.fullmatch(topic) for p in includes) and not any(p.fullmatch(topic) for p in excludes)
    ]


_PLACEHOLDER: Final = r"\$\{[A-Za-z0-9_.\-]+:[^}]+\}"
_ONLY_PLACEHOLDERS: Final = re.compile(rf"\s*(?:{_PLACEHOLDER}\s*)+")
_JAAS: Final = re.compile(
    r"\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)(?P<options>.*?);?\s*",
    re.DOTALL,
)
_JAAS_OPTION: Final = re.compile(r'\s*(?P<name>[\w.\-]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s;"]+))')
_JAAS_SECRET_OPTIONS: Final = ("password", "secret", "token")


def is_placeholder_only(value: str) -> bool:
    """True when the value is nothing but config-provider references like `${file:/path:key}`."""
    return _ONLY_PLACEHOLDERS.fullmatch(value) is not None


def is_safe_jaas(value: str) -> bool:
    """A JAAS config whose secret options are all placeholders (the usual way to write one).

    `...PlainLoginModule required username="${file:/p:user}" password="${file:/p:pw}";` is safe;
    a literal password, or text we can't parse as options, is not.
    """
    match = _JAAS.fullmatch(value)
    if match is None:
        return False
    options = match["options"]
    position = 0
    while position < len(options):
        if not options[position:].strip():
            break
        option = _JAAS_OPTION.match(options, position)
        if option is None:
            return False
        position = option.end()
        option_value = option["quoted"] if option["quoted"] is not None else option["bare"]
        if any(word in option["name"].lower() for word in _JAAS_SECRET_OPTIONS) and not is_placeholder_only(
            option_value
        ):
            return False
    return True


def is_secret_key(key: str, fragments: Sequence[str], non_secret: Sequence[str]) -> bool:
    lowered = key.lower()
    if not any(fragment.lower() in lowered for fragment in fragments):
        return False
    for pattern in non_secret:
        try:
            if re.fullmatch(pattern, lowered):
                return False
        except re.error:  # a bad exception pattern must not switch the rule off
            continue
    return True


def plaintext_secret_keys(config: Mapping[str, Any], fragments: Sequence[str], non_secret: Sequence[str]) -> list[str]:
    """Keys of `config` that hold a secret in plain text. Looks at values, never returns them."""
    found: list[str] = []
    for key in sorted(config):
        if not is_secret_key(key, fragments, non_secret):
            continue
        value = _as_text(config[key])
        if value is None or not value.strip():  # unknown, or nothing to leak
            continue
        if is_placeholder_only(value):
            continue
        if "jaas" in key.lower() and is_safe_jaas(value):
            continue
        found.append(key)
    return found


# --------------------------------------------------------------------------------------------
# 1. No name-preserving replication on a cycle (mandatory)
# --------------------------------------------------------------------------------------------


def check_no_name_preserving_cycles(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    preserving = _strings(args.get_config(), "namePreservingPolicies", DEFAULT_NAME_PRESERVING_POLICIES)
    view = StackView.from_resources(args.resources)
    observations: list[FlowObservation] = []
    for component in view.flows:
        if component.flow is None or component.enabled is not True:
            continue
        klass = component.replication_policy
        by_class = klass is not None and is_name_preserving_class(klass, preserving)
        declared = component.name_preserving is True
        label = klass
        if declared and not by_class:
            label = f"{klass or 'custom policy'} (declared namePreserving)"
        observations.append(
            FlowObservation(
                source=component.flow[0],
                target=component.flow[1],
                name_preserving=by_class or declared,
                policy=label,
                urn=component.urn,
                from_component=True,
            )
        )
    for connector in view.connectors:
        if connector.flow is None:
            continue
        klass = connector.setting("replication.policy.class")
        observations.append(
            FlowObservation(
                source=connector.flow[0],
                target=connector.flow[1],
                name_preserving=klass is not None and is_name_preserving_class(klass, preserving),
                policy=klass,
                urn=connector.urn,
            )
        )

    for finding in name_preserving_cycles(merge_flows(observations)):
        flows = "; ".join(
            f"{flow.label} ({', '.join(flow.policies) or 'name-preserving policy'}; {flow.urns[0]})"
            for flow in finding.offending
        )
        labels = ", ".join(flow.label for flow in finding.offending)
        cycles = "; ".join(format_cycle(cycle) for cycle in finding.cycles)
        # Closing edge of each cycle: for active/active that is the reverse flow.
        breakers = ", ".join(dict.fromkeys(flow_label(cycle_edges(c)[-1]) for c in finding.cycles))
        report_violation(
            f"Replication loop on cycle {cycles}: flow(s) {flows} keep topic names, so a record that "
            f"travels the cycle comes back to its origin cluster under a name MM2 cannot tell from a "
            f"local topic and is replicated again, forever (clusters {', '.join(finding.clusters)}). "
            f"Fix: use DefaultReplicationPolicy ({DEFAULT_POLICY_CLASS}, remote topics prefixed "
            f"'<source alias><separator>') instead of a name-preserving policy on {labels} - every flow of "
            f"the cycle needs the prefix - or disable the reverse flow to break the cycle (e.g. {breakers}).",
            finding.offending[0].urns[0],
        )


# --------------------------------------------------------------------------------------------
# 2. Replication factors fit the cluster the topic lives on
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _TopicRF:
    key: str
    topic: str
    on_source: bool


_RF_KEYS: Final[Mapping[ConnectorKind, tuple[_TopicRF, ...]]] = {
    ConnectorKind.SOURCE: (
        _TopicRF("replication.factor", "remote topics", on_source=False),
        _TopicRF("offset-syncs.topic.replication.factor", "offset-syncs topic", on_source=True),
    ),
    ConnectorKind.CHECKPOINT: (_TopicRF("checkpoints.topic.replication.factor", "checkpoints topic", False),),
    ConnectorKind.HEARTBEAT: (_TopicRF("heartbeats.topic.replication.factor", "heartbeats topic", False),),
}


def check_replication_factors(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    apply_defaults = _flag(args.get_config(), "applyMm2Defaults", True)
    view = StackView.from_resources(args.resources)
    for connector in view.connectors:
        if connector.kind is None or connector.flow is None or connector.config is None:
            continue
        for spec in _RF_KEYS[connector.kind]:
            on_source = spec.on_source
            if spec.key.startswith("offset-syncs"):
                location = connector.setting("offset-syncs.topic.location")
                if location is None:
                    continue
                on_source = location.strip().lower() != "target"
            alias = connector.flow[0] if on_source else connector.flow[1]
            cluster = view.clusters.get(alias)
            if cluster is None or cluster.brokers is None or cluster.brokers < 1:
                continue
            raw = connector.raw(spec.key)
            if raw is UNKNOWN or (raw is None and not apply_defaults):
                continue
            defaulted = raw is None
            factor = _as_int(MM2_DEFAULTS[spec.key] if defaulted else raw)
            if factor is None or factor < 1:  # -1: the broker's default.replication.factor
                continue
            if factor > cluster.brokers:
                how = "is not set, so MM2's default" if defaulted else "is"
                report_violation(
                    f"Connector {connector.name} (flow {flow_label(connector.flow)}): {spec.key} {how} "
                    f"{factor}, but it creates the {spec.topic} on cluster '{alias}', which has "
                    f"{cluster.brokers} broker(s); MM2 cannot create the topic and the connector fails. "
                    f"Fix: set {spec.key} to at most {cluster.brokers} in the flow's settings, or give "
                    f"'{alias}' at least {factor} brokers.",
                    connector.urn,
                )


# --------------------------------------------------------------------------------------------
# 3. Every enabled flow has its three connectors
# --------------------------------------------------------------------------------------------

_MISSING_WHY: Final[Mapping[ConnectorKind, str]] = {
    ConnectorKind.SOURCE: "no records are replicated",
    ConnectorKind.CHECKPOINT: "consumer-group offsets are not translated, so failover restarts consumers at "
    "the wrong position",
    ConnectorKind.HEARTBEAT: "nothing shows the flow is alive, so a silent stall is found only at failover",
}


def check_flow_connectors(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = StackView.from_resources(args.resources)
    for flow in view.enabled_flows():
        missing: list[ConnectorKind] = []
        for kind in ConnectorKind:
            expected = connector_name(flow[0], flow[1], kind)
            if view.connectors_of(flow, kind) or any(c.name == expected for c in view.connectors):
                continue
            missing.append(kind)
        if not missing:
            continue
        where = view.flow_urn(flow)
        details = "; ".join(f"no {k.class_name} ({_MISSING_WHY[k]})" for k in missing)
        names = ", ".join(connector_name(flow[0], flow[1], k) for k in missing)
        report_violation(
            f"Flow {flow_label(flow)} ({where}): {details}. Fix: deploy all three connectors for the flow "
            f"(expected {names}); do not remove or disable them in the flow's settings.",
            where,
        )


# --------------------------------------------------------------------------------------------
# 4. Source and checkpoint connectors of one flow agree
# --------------------------------------------------------------------------------------------

# The checkpoint connector re-derives what the source connector did: which topics were
# replicated (topic filter), what they are called on the target (policy, separator) and where
# the offset syncs are (location). Any disagreement breaks offset translation silently.
_AGREEMENT_KEYS: Final = (
    "replication.policy.class",
    "replication.policy.separator",
    "offset-syncs.topic.location",
    "topics",
    "topics.exclude",
    "topic.filter.class",
)
_LIST_KEYS: Final = frozenset({"topics", "topics.exclude"})


def _comparable(key: str, value: str) -> str:
    return ",".join(split_list(value)) if key in _LIST_KEYS else value.strip()


def check_connectors_agree(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = StackView.from_resources(args.resources)
    for flow in view.enabled_flows():
        sources = view.connectors_of(flow, ConnectorKind.SOURCE)
        if not sources:
            continue
        source = sources[0]
        for key in _AGREEMENT_KEYS:
            expected = source.setting(key)
            if expected is None:
                continue
            for other in view.connectors_of(flow, ConnectorKind.CHECKPOINT):
                actual = other.setting(key)
                if actual is None or _comparable(key, actual) == _comparable(key, expected):
                    continue
                report_violation(
                    f"Flow {flow_label(flow)}: {key} differs between {source.name} ('{expected}'"
                    f"{' by default' if source.raw(key) is None else ''}) and {other.name} ('{actual}'"
                    f"{' by default' if other.raw(key) is None else ''}). The checkpoint connector then "
                    f"looks for other topics, other remote names or another offset-syncs topic than the "
                    f"source connector wrote, and translated offsets are wrong or never emitted. "
                    f"Fix: set {key} once at the flow level so all connectors of {flow_label(flow)} get "
                    f"the same value.",
                    other.urn,
                )


# --------------------------------------------------------------------------------------------
# 5. Disaster-recovery flows sync consumer-group offsets
# --------------------------------------------------------------------------------------------


def check_dr_offset_sync(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    view = StackView.from_resources(args.resources)
    for component in view.flows:
        flow = component.flow
        if flow is None or component.enabled is not True or component.disaster_recovery is not True:
            continue
        label = flow_label(flow)
        checkpoints = [c for c in view.connectors_of(flow, ConnectorKind.CHECKPOINT) if c.config is not None]
        fix = (
            f'Fix: set sync.group.offsets.enabled: "true" (and leave emit.checkpoints.enabled true) in the '
            f"settings of flow {label}, or set disasterRecovery: false if consumers will not fail over."
        )
        if not checkpoints:
            # Connector missing is rule 3's finding; an unknown config falls back to the component.
            if component.sync_group_offsets is False:
                report_violation(
                    f"Flow {label} ({component.urn}) is marked disasterRecovery but syncGroupOffsets is false: "
                    f"after failover its consumer groups have no committed offsets on '{flow[1]}'. {fix}",
                    component.urn,
                )
            continue
        for checkpoint in checkpoints:
            sync = _as_bool(checkpoint.setting("sync.group.offsets.enabled"))
            emit = _as_bool(checkpoint.setting("emit.checkpoints.enabled"))
            problems: list[str] = []
            if sync is False:
                problems.append("sync.group.offsets.enabled is not true")
            if emit is False:
                problems.append("emit.checkpoints.enabled is false (offset sync needs checkpoints)")
            if problems:
                report_violation(
                    f"Flow {label} is marked disasterRecovery but its checkpoint connector {checkpoint.name}: "
                    f"{'; '.join(problems)}. After failover, consumers on '{flow[1]}' find no translated "
                    f"offsets in __consumer_offsets and restart from the reset policy. {fix}",
                    checkpoint.urn,
                )


# --------------------------------------------------------------------------------------------
# 6. Internal topics are excluded from replication
# --------------------------------------------------------------------------------------------


def _suggest_exclude(topic: str) -> str:
    return next((p for p in _SUGGESTED_EXCLUDES if re.fullmatch(p, topic)), re.escape(topic))


def check_internal_topics_excluded(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    samples = _strings(args.get_config(), "internalTopics", DEFAULT_INTERNAL_TOPICS)
    view = StackView.from_resources(args.resources)
    for connector in view.connectors:
        if connector.kind is not ConnectorKind.SOURCE or connector.flow is None:
            continue
        filter_class = connector.setting("topic.filter.class")
        if filter_class is None or filter_class.strip() != DEFAULT_TOPIC_FILTER_CLASS:
            continue  # unknown, or a custom filter we can't evaluate
        include = connector.setting("topics")
        exclude = connector.setting("topics.exclude")
        if include is None or exclude is None:
            continue
        source, target = connector.flow
        names = list(dict.fromkeys(s.replace("{source}", source).replace("{target}", target) for s in samples))
        leaked = replicated_topics(names, include, exclude)
        if not leaked:
            continue
        suggestion = ", ".join(dict.fromkeys(_suggest_exclude(t) for t in leaked))
        report_violation(
            f"Source connector {connector.name} (flow {flow_label(connector.flow)}) would replicate internal "
            f"topics {', '.join(leaked)}: topics='{include}' matches them and topics.exclude='{exclude}' does "
            f"not exclude them. Copying another cluster's offsets, Connect state or MM2 bookkeeping onto "
            f"'{target}' corrupts it. Fix: add {suggestion} to topics.exclude for flow "
            f"{flow_label(connector.flow)} (keep MM2's defaults in the list), or list the topics to replicate "
            f"explicitly.",
            connector.urn,
        )


# --------------------------------------------------------------------------------------------
# 7. Flows across datacenters use TLS
# --------------------------------------------------------------------------------------------


def check_cross_datacenter_tls(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    tls = {p.upper() for p in _strings(args.get_config(), "tlsProtocols", DEFAULT_TLS_PROTOCOLS)}
    view = StackView.from_resources(args.resources)
    for flow in view.enabled_flows():
        source = view.clusters.get(flow[0])
        target = view.clusters.get(flow[1])
        if source is None or target is None or source.datacenter is None or target.datacenter is None:
            continue
        if source.datacenter == target.datacenter:
            continue
        connectors = [c for c in view.connectors if c.flow == flow and c.config is not None]
        problems: list[str] = []
        urn: str | None = None
        for side, cluster in (("source", source), ("target", target)):
            key = f"{side}.cluster.security.protocol"
            explicit = [(c, c.raw(key)) for c in connectors if c.raw(key) is not None]
            if explicit:
                for connector, value in explicit:
                    if value is not UNKNOWN and str(value).strip().upper() not in tls:
                        problems.append(f"{connector.name} sets {key}={value}")
                        urn = urn or connector.urn
            elif cluster.security_protocol is not None and cluster.security_protocol.upper() not in tls:
                problems.append(f"cluster '{cluster.alias}' uses {cluster.security_protocol}")
                urn = urn or cluster.urn
        if problems:
            report_violation(
                f"Flow {flow_label(flow)} crosses datacenters ({source.alias} in {source.datacenter}, "
                f"{target.alias} in {target.datacenter}) without TLS: {'; '.join(problems)}. Records and "
                f"credentials would cross the inter-datacenter network in clear text. Fix: give both clusters "
                f"security.protocol SSL or SASL_SSL (cluster `security: {{protocol: SASL_SSL}}` in stack config).",
                urn or view.flow_urn(flow),
            )


# --------------------------------------------------------------------------------------------
# 8. Connect REST API requires authentication outside dev (resource validation)
# --------------------------------------------------------------------------------------------


def check_rest_auth(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type != WORKER_GROUP_TYPE or is_dev_stack(args.get_config()):
        return
    props = plain(args.props)
    if not isinstance(props, Mapping):
        return
    raw = props.get("restAuth")
    if raw is UNKNOWN:
        return
    if _as_bool(raw) is True:
        return
    name = _as_text(props.get("name")) or args.name
    state = "is not set" if raw is None else "is false"
    report_violation(
        f"Connect worker group '{name}' ({args.urn}): restAuth {state} on stack '{current_stack_name()}', so "
        f"anyone who reaches the REST API can read connector configs and create, change or delete connectors. "
        f"Fix: enable REST basic auth for worker group '{name}' (restAuth with a username and a password "
        f"secret in mm2:workerGroups), or add this stack to the rule's devStacks if it really is a dev stack.",
        None,
    )


# --------------------------------------------------------------------------------------------
# 9. No plain-text secret in a connector config (resource validation)
# --------------------------------------------------------------------------------------------


def check_no_plaintext_secrets(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type != CONNECTOR_TYPE:
        return
    config_args = args.get_config()
    fragments = _strings(config_args, "secretKeyFragments", DEFAULT_SECRET_KEY_FRAGMENTS)
    non_secret = _strings(config_args, "nonSecretKeys", DEFAULT_NON_SECRET_KEYS)
    props = plain(args.props)
    if not isinstance(props, Mapping):
        return
    config = props.get("config")
    if not isinstance(config, Mapping):
        return
    name = _as_text(props.get("name")) or args.name
    for key in plaintext_secret_keys(config, fragments, non_secret):
        # Never echo the value, not even part of it: violations end up in CI logs.
        report_violation(
            f"Connector {name} ({args.urn}): config key '{key}' holds a secret in plain text (value withheld). "
            f"It would be stored in the Pulumi state, sent to the Connect REST API and shown by "
            f"GET /connectors/{name}/config. Fix: keep the secret in a file or environment variable on the "
            f"workers and reference it with a config-provider placeholder such as "
            f"${{file:/etc/mm2/secrets.properties:<name>}} or ${{env:<VAR>}} (in a JAAS config, for each "
            f"password option).",
            None,
        )


# --------------------------------------------------------------------------------------------
# 10. tasks.max >= 2 for source connectors outside dev (resource validation)
# --------------------------------------------------------------------------------------------


def check_source_tasks(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type != CONNECTOR_TYPE:
        return
    config_args = args.get_config()
    if is_dev_stack(config_args):
        return
    minimum = _integer(config_args, "minTasks", 2)
    props = plain(args.props)
    if not isinstance(props, Mapping):
        return
    connector = connector_from_props(args.urn, args.name, props)
    if connector.kind is not ConnectorKind.SOURCE or connector.config is None:
        return
    tasks = _as_int(connector.setting("tasks.max"))
    if tasks is None or tasks >= minimum:
        return
    how = "is not set (Connect's default 1)" if connector.raw("tasks.max") is None else f"is {tasks}"
    flow = f" (flow {flow_label(connector.flow)})" if connector.flow else ""
    report_violation(
        f"Source connector {connector.name}{flow}: tasks.max {how} on stack '{current_stack_name()}'; one task "
        f"replicates every partition alone, cannot keep up with production load and stops the flow whenever "
        f"its worker restarts. Fix: set tasksMax (tasks.max) to at least {minimum} for the flow.",
        None,
    )


# --------------------------------------------------------------------------------------------
# 11. Flows into one target agree on target-shared settings
# --------------------------------------------------------------------------------------------


def _shared_value(view: StackView, flow: FlowKey, key: str) -> tuple[str, str] | None:
    """(value, where) for a flow's setting, from the connector that owns it; None when unknown."""
    kinds = SHARED_TARGET_KEYS.get(key, tuple(ConnectorKind))
    for kind in kinds:
        for connector in view.connectors_of(flow, kind):
            if connector.config is None:
                continue
            raw = connector.raw(key)
            if raw is UNKNOWN:
                return None
            if raw is None and key not in MM2_DEFAULTS:
                return ("(unset)", connector.name)
            value = connector.setting(key)
            return None if value is None else (value, connector.name)
    component = view.component_of(flow)
    if component is not None:
        if key == "replication.policy.class" and component.replication_policy is not None:
            return (component.replication_policy, component.urn)
        if key == "replication.policy.separator" and component.separator is not None:
            return (component.separator, component.urn)
    return None


def check_shared_target_settings(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    keys = _strings(args.get_config(), "sharedKeys", tuple(SHARED_TARGET_KEYS))
    view = StackView.from_resources(args.resources)
    by_target: dict[str, list[FlowKey]] = {}
    for flow in view.enabled_flows():
        by_target.setdefault(flow[1], []).append(flow)
    for target, flows in by_target.items():
        if len(flows) < 2:
            continue
        for key in keys:
            values: dict[FlowKey, tuple[str, str]] = {}
            for flow in flows:
                found = _shared_value(view, flow, key)
                if found is not None:
                    values[flow] = found
            distinct = {_comparable(key, value) for value, _ in values.values()}
            if len(distinct) < 2:
                continue
            listing = "; ".join(f"{flow_label(f)}: '{v}' ({where})" for f, (v, where) in values.items())
            cluster = view.clusters.get(target)
            report_violation(
                f"Flows into cluster '{target}' disagree on {key}: {listing}. These flows share topics and "
                f"naming on '{target}' (remote and internal topic names are parsed with one replication "
                f"policy; all heartbeat connectors write the one heartbeats topic), so one of them is "
                f"misread or silently overridden. Fix: set {key} once in mm2:defaults.settings (or to the "
                f"same value on every flow into '{target}').",
                cluster.urn if cluster is not None else view.flow_urn(next(iter(values))),
            )


# --------------------------------------------------------------------------------------------
# The policies
# --------------------------------------------------------------------------------------------


def _schema(**properties: dict[str, Any]) -> PolicyConfigSchema:
    return PolicyConfigSchema(properties=dict(properties))


def _string_array(default: Sequence[str], description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "default": list(default), "description": description}


no_name_preserving_replication_on_cycles = StackValidationPolicy(
    name="no-name-preserving-replication-on-cycles",
    description=(
        "No flow that keeps topic names (IdentityReplicationPolicy or a custom name-preserving policy) may "
        "lie on a cycle of replication flows: records would be replicated around the cycle forever."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=check_no_name_preserving_cycles,
    config_schema=_schema(
        namePreservingPolicies=_string_array(
            DEFAULT_NAME_PRESERVING_POLICIES,
            "Replication policy classes that keep topic names (besides any *.IdentityReplicationPolicy and "
            "flows declared namePreserving).",
        )
    ),
)

replication_factor_within_broker_count = StackValidationPolicy(
    name="replication-factor-within-broker-count",
    description=(
        "Replication factors of remote topics and of MM2's checkpoints, heartbeats and offset-syncs topics "
        "must not exceed the broker count of the cluster that hosts them."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=check_replication_factors,
    config_schema=_schema(
        applyMm2Defaults={
            "type": "boolean",
            "default": True,
            "description": "Check MM2's defaults (2 for remote topics, 3 for internal topics) when a key is unset.",
        }
    ),
)

flow_has_all_connectors = StackValidationPolicy(
    name="flow-has-all-connectors",
    description="Every enabled flow runs its source, checkpoint and heartbeat connectors.",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=check_flow_connectors,
)

flow_connectors_agree = StackValidationPolicy(
    name="flow-connectors-agree",
    description=(
        "The source and checkpoint connectors of one flow agree on replication policy, separator, "
        "offset-syncs topic location and topic filter."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=check_connectors_agree,
)

disaster_recovery_syncs_group_offsets = StackValidationPolicy(
    name="disaster-recovery-syncs-group-offsets",
    description="Flows marked disasterRecovery sync consumer-group offsets to the target.",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=check_dr_offset_sync,
)

internal_topics_excluded = StackValidationPolicy(
    name="internal-topics-excluded",
    description="Internal topics (__*, *.internal, connect-*, heartbeats, checkpoints) are not replicated.",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=check_internal_topics_excluded,
    config_schema=_schema(
        internalTopics=_string_array(
            DEFAULT_INTERNAL_TOPICS,
            "Representative internal topic names checked against each source connector's topics and "
            "topics.exclude; {source} and {target} are replaced by the flow's aliases.",
        )
    ),
)

cross_datacenter_flows_use_tls = StackValidationPolicy(
    name="cross-datacenter-flows-use-tls",
    description="Flows between clusters in different datacenters use TLS on both clusters.",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=check_cross_datacenter_tls,
    config_schema=_schema(
        tlsProtocols=_string_array(DEFAULT_TLS_PROTOCOLS, "security.protocol values that encrypt traffic.")
    ),
)

connect_rest_requires_auth = ResourceValidationPolicy(
    name="connect-rest-requires-auth",
    description="The Kafka Connect REST API of every worker group requires authentication outside dev stacks.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=check_rest_auth,
    config_schema=_schema(devStacks=_DEV_STACKS_SCHEMA),
)

no_plaintext_secrets_in_connector_config = ResourceValidationPolicy(
    name="no-plaintext-secrets-in-connector-config",
    description="Connector configs hold secrets only as config-provider placeholders (${file:...}, ${env:...}).",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=check_no_plaintext_secrets,
    config_schema=_schema(
        secretKeyFragments=_string_array(
            DEFAULT_SECRET_KEY_FRAGMENTS, "A config key containing one of these (case-insensitive) holds a secret."
        ),
        nonSecretKeys=_string_array(
            DEFAULT_NON_SECRET_KEYS, "Regexes of keys that contain a fragment but hold no secret (full match)."
        ),
    ),
)

source_connector_min_tasks = ResourceValidationPolicy(
    name="source-connector-min-tasks",
    description="MirrorSourceConnector runs at least two tasks outside dev stacks.",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=check_source_tasks,
    config_schema=_schema(
        devStacks=_DEV_STACKS_SCHEMA,
        minTasks={"type": "integer", "minimum": 1, "default": 2, "description": "Smallest tasks.max allowed."},
    ),
)

shared_target_settings_consistent = StackValidationPolicy(
    name="shared-target-settings-consistent",
    description="Flows into the same target cluster set target-shared MM2 settings identically.",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=check_shared_target_settings,
    config_schema=_schema(
        sharedKeys=_string_array(
            tuple(SHARED_TARGET_KEYS), "MM2 settings that every flow into one target cluster must agree on."
        )
    ),
)

ALL_POLICIES: Final[list[Policy]] = [
    no_name_preserving_replication_on_cycles,
    replication_factor_within_broker_count,
    flow_has_all_connectors,
    flow_connectors_agree,
    disaster_recovery_syncs_group_offsets,
    internal_topics_excluded,
    cross_datacenter_flows_use_tls,
    connect_rest_requires_auth,
    no_plaintext_secrets_in_connector_config,
    source_connector_min_tasks,
    shared_target_settings_consistent,
]
