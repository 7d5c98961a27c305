"""The product's language: clusters, Connect worker groups and replication flows.

Every type here is a frozen dataclass or a `str` Enum so a parsed topology can be shared,
hashed into property tests and compared in golden tests without defensive copies.
Nothing here imports pulumi, httpx or pyspark, and nothing does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType

from components.topology.config_provider import file_placeholder
from components.topology.emulated_network import NetworkPlan

DEFAULT_POLICY_CLASS = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
IDENTITY_POLICY_CLASS = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
DEFAULT_SEPARATOR = "."
# Where the local platform's processes listen, unless their datacenter's link is emulated
# (components/topology/emulation.py: then the datacenter's home address in its namespace).
LOOPBACK = "127.0.0.1"

# Where workers read `${file:<path>:<key>}` placeholders from unless the platform code
# overrides it (see `with_secrets_file`). A concrete path, never an unexpanded variable:
# Kafka's FileConfigProvider does not expand environment variables.
DEFAULT_SECRETS_FILE = "/etc/mm2/secrets.properties"

# Users the stack creates on a local cluster with SASL (see components/topology/security.py).
DEFAULT_MM2_USER = "mm2"
ADMIN_USER = "admin"


def frozen_map(values: Mapping[str, str] | None = None) -> Mapping[str, str]:
    """A read-only, key-sorted copy, so equal inputs give equal (and stably ordered) maps."""
    return MappingProxyType(dict(sorted((values or {}).items())))


class Platform(str, Enum):
    """Where a cluster (and, through its cluster, a worker group) runs."""

    LOCAL = "local"
    KUBERNETES = "kubernetes"
    DOCKER = "docker"
    EXTERNAL = "external"


class SecurityProtocol(str, Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)


class SaslMechanism(str, Enum):
    PLAIN = "PLAIN"
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"

    @property
    def login_module(self) -> str:
        if self is SaslMechanism.PLAIN:
            return "org.apache.kafka.common.security.plain.PlainLoginModule"
        return "org.apache.kafka.common.security.scram.ScramLoginModule"


class ConnectorState(str, Enum):
    """The state a flow's connector should be in, as `mm2:flows.<flow>.state` spells it.

    running: copying; paused: tasks paused, config and assignments kept, resumes at once;
    stopped: tasks shut down and their assignments released, offsets kept (Connect's STOPPED).
    """

    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"

    @property
    def connect_state(self) -> str:
        """The name Connect's REST API uses (RUNNING, PAUSED, STOPPED)."""
        return self.value.upper()


class ConnectorRole(str, Enum):
    """The three connectors MM2 runs for every flow, as connector names and `connectorStates` spell them.

    source: copies records, topic configs and ACLs, writes offset syncs; checkpoint: translates
    consumer-group offsets; heartbeat: emits heartbeats.
    """

    SOURCE = "source"
    CHECKPOINT = "checkpoint"
    HEARTBEAT = "heartbeat"

    def __str__(self) -> str:
        # The plain word in str() and f-strings on every Python version (3.12 changed how
        # mixed-in Enums format), so names, keys and JSON built from a role never change.
        return self.value


# The roles as config keys, CLI choices and connector-name suffixes spell them, in MM2's order.
ROLE_NAMES: tuple[str, ...] = tuple(role.value for role in ConnectorRole)


class RestartMode(str, Enum):
    """How a change that restarts a group's processes restarts them, as `restarts` spells it.

    rolling: one at a time, each back (rejoined, its work running again) before the next stops;
    all-at-once: every process at the same moment (replication pauses for the whole restart).
    """

    ROLLING = "rolling"
    ALL_AT_ONCE = "all-at-once"


class PolicyKind(str, Enum):
    DEFAULT = "default"
    IDENTITY = "identity"
    CUSTOM = "custom"


@dataclass(frozen=True)
class SecretRef:
    """A reference to a secret held outside the stack config, never the secret itself."""

    key: str  # e.g. "primary.mm2.password"

    def placeholder(self, secrets_file: str) -> str:
        """Kafka FileConfigProvider syntax, resolved by the worker when it reads the config."""
        return file_placeholder(secrets_file, self.key)


@dataclass(frozen=True)
class Security:
    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    sasl_mechanism: SaslMechanism | None = None
    username: str | None = None
    password: SecretRef | None = None
    truststore_location: str | None = None
    truststore_password: SecretRef | None = None
    keystore_location: str | None = None
    keystore_password: SecretRef | None = None
    key_password: SecretRef | None = None
    # A PEM CA file on the machine running pulumi and the bin/ tools, to verify a non-local TLS
    # cluster's brokers with (None: the system's trust store; local TLS clusters use the stack's CA).
    ca_location: str | None = None

    def secret_refs(self) -> tuple[SecretRef, ...]:
        refs = (self.password, self.truststore_password, self.keystore_password, self.key_password)
        return tuple(ref for ref in refs if ref is not None)


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int
    config: Mapping[str, str] = field(default_factory=frozen_map)


@dataclass(frozen=True)
class Cluster:
    alias: str
    platform: Platform
    brokers: int
    # local/docker: broker i's client port is port+2i and its controller port port+2i+1.
    port: int | None = None
    # external (required) and kubernetes (optional) address as given in config.
    bootstrap: str | None = None
    # The address the stack's own pods (Connect workers, lag exporter) reach it at, when not
    # `bootstrap` (e.g. the in-cluster Service beside an external listener); kubernetes/external.
    internal_bootstrap: str | None = None
    datacenter: str | None = None
    security: Security = field(default_factory=Security)
    topics: tuple[TopicSpec, ...] = ()
    broker_config: Mapping[str, str] = field(default_factory=frozen_map)
    # MM2 client overrides, keys prefixed producer./consumer./admin.
    client: Mapping[str, str] = field(default_factory=frozen_map)
    # Cluster-level MM2 settings for flows whose source is this cluster.
    settings: Mapping[str, str] = field(default_factory=frozen_map)
    # local: broker i serves Prometheus metrics (JMX exporter agent) on host:metrics_port+i.
    metrics_port: int | None = None
    # local: the address its brokers listen on and advertise (derived, emulation.with_network).
    host: str = LOOPBACK


@dataclass(frozen=True)
class WorkerGroup:
    name: str
    cluster: str  # alias of the cluster holding the storage topics
    workers: int
    group_id: str
    config_topic: str
    offset_topic: str
    status_topic: str
    rest_port: int | None = None  # local/docker: worker i listens on rest_port+i
    url: str | None = None  # an existing (external) Connect endpoint
    rest_auth: bool = False
    secrets_file: str = DEFAULT_SECRETS_FILE
    worker_config: Mapping[str, str] = field(default_factory=frozen_map)
    # Derived: the hosting cluster's platform, or EXTERNAL when `url` is given.
    platform: Platform = Platform.LOCAL
    rest_username: str | None = None
    rest_password: SecretRef | None = None
    # HTTPS for the REST API, with a certificate from the stack's CA (local platform).
    rest_tls: bool = False
    # local: worker i serves Prometheus metrics (JMX exporter agent) on host:metrics_port+i.
    metrics_port: int | None = None
    # local: the address its workers listen on, its cluster's (derived, emulation.with_network).
    host: str = LOOPBACK
    # local: the group's lag exporter listens on 127.0.0.1:lag_port; None: a free port at each start.
    lag_port: int | None = None
    # `restarts`; None: rolling when the group has more than one worker (platform/restarts.py).
    restarts: RestartMode | None = None
    # Derived at deploy time from the running workers (connect_group.with_exactly_once_stages):
    # "preparing" while an existing group takes the first step of Connect's two-step
    # exactly-once rollout, "disabling" while workers turned off still run with it; None means
    # "enabled" whenever a flow on the group is exactly-once.
    exactly_once_stage: str | None = None
    # Derived at deploy time from the platform settings (platform/kubernetes/in_cluster.py
    # `with_public_clusters`): clusters with an `internalBootstrap` that this group runs outside the
    # network of (a kubernetes cluster in another Kubernetes cluster), so it reaches them at `bootstrap`.
    public_clusters: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ReplicationPolicy:
    kind: PolicyKind = PolicyKind.DEFAULT
    class_name: str = DEFAULT_POLICY_CLASS
    separator: str = DEFAULT_SEPARATOR
    # True for identity, and for custom classes declared name-preserving.
    preserves_names: bool = False


@dataclass(frozen=True)
class AutoRestart:
    """Opt-in restarts of a connector role's FAILED instances by the stack's watcher, as
    Strimzi's `autoRestart`: with a back-off that grows per restart (components/watch/backoff.py)
    and a counter that resets once the connector has been healthy for a stable period.

    max_restarts None: no limit (Strimzi's default)."""

    enabled: bool = False
    max_restarts: int | None = None


# Platforms on which the stack runs the auto-restart watcher itself.
WATCHER_PLATFORMS = frozenset({Platform.LOCAL, Platform.KUBERNETES})


@dataclass(frozen=True)
class Flow:
    source: str
    target: str
    enabled: bool
    worker_group: str
    topics: tuple[str, ...]
    topics_exclude: tuple[str, ...]
    groups: tuple[str, ...]
    groups_exclude: tuple[str, ...]
    replication_policy: ReplicationPolicy
    disaster_recovery: bool
    # Fully merged project default < global < cluster < flow MM2 settings (string values,
    # MM2 connector keys only; typed fields above own their keys).
    settings: Mapping[str, str]
    # None: one task per replicated partition, derived by connectors.flow_tasks_max.
    tasks_max: int | None = None
    exactly_once: bool = False
    # Desired state per connector role (source, checkpoint, heartbeat); a missing role runs.
    connector_states: Mapping[ConnectorRole, ConnectorState] = field(default_factory=lambda: MappingProxyType({}))
    # Roles whose FAILED instances the watcher restarts (only enabled roles are kept).
    auto_restart: Mapping[ConnectorRole, AutoRestart] = field(default_factory=lambda: MappingProxyType({}))
    # `reverseHeartbeats`: a fourth connector emits heartbeats target -> source, so the source
    # side sees that the target is alive (connectors.reverse_heartbeat_connector).
    reverse_heartbeats: bool = False
    # `connectorSettings.<role>`: keys outside the settings catalogue for one connector only
    # (checked by Connect's validation at preview); applied over the routed `settings`.
    role_settings: Mapping[ConnectorRole, Mapping[str, str]] = field(default_factory=lambda: MappingProxyType({}))
    # Declared objectives (`rpo`, `outageBudget`; components/topology/objectives.py), in seconds:
    # the longest acceptable replication delay, and the longest outage the flow must survive
    # (the source topics' retention must outlast it). Defaults: 5m and 1d.
    rpo_seconds: int = 300
    outage_budget_seconds: int = 86400
    # `lossAcknowledged` (components/topology/acknowledgement.py), ms since the epoch: records the
    # lag exporter found gone before replication at or before it no longer make the flow
    # unhealthy. None: nothing acknowledged.
    loss_acknowledged_at_ms: int | None = None
    # `peakRate` in bits per second: the most the flow's producers write at their busiest, which
    # the link its records cross should carry (components/topology/link_preview.py). None: not declared.
    peak_rate_bps: float | None = None

    @property
    def name(self) -> str:
        return f"{self.source}->{self.target}"

    def state_of(self, role: ConnectorRole) -> ConnectorState:
        return self.connector_states.get(role, ConnectorState.RUNNING)

    @property
    def slug(self) -> str:
        return f"{self.source}-to-{self.target}"


PAIR_SEPARATOR = "<->"  # a cluster pair's key: `primary<->dr`


class Divergence(str, Enum):
    """What a failback does with records the old active side took after its writes were fenced
    (written by a principal the fence does not hold, e.g. a super user): they never reached the
    other side.

    keep: the moved consumer groups resume before them and the restarted flow copies them;
    discard: the groups and the flow resume after them (they stay in the log, named in the plan).
    """

    KEEP = "keep"
    DISCARD = "discard"


@dataclass(frozen=True)
class Pair:
    """Two clusters replicating both ways, one of them active (`mm2:failover.<a><-><b>`).

    The applications write and read on `active`; the flow active->passive runs and the flow
    passive->active (the standby flow) is stopped; the passive side's copies of the replicated
    topics refuse the applications' writes (the fence). Changing `active` is a planned switchover
    (components/switchover.py runs it during `pulumi up`).
    """

    first: str
    second: str
    active: str
    principals: tuple[str, ...]  # "User:app": the application principals the fence holds
    groups: tuple[str, ...] = ()  # regexes of the consumer groups that move; () = every checkpointed group
    drain_timeout_s: int = 120
    divergence: Divergence | None = None
    # The old active side is lost (`unplanned: true`): bin/failover moved the groups, `up` records
    # the switch without fencing or draining it, and both flows stay stopped until it is back.
    unplanned: bool = False

    @property
    def name(self) -> str:
        return f"{self.first}{PAIR_SEPARATOR}{self.second}"

    @property
    def passive(self) -> str:
        return self.second if self.active == self.first else self.first

    @property
    def active_flow(self) -> str:
        """The flow that runs: active -> passive."""
        return f"{self.active}->{self.passive}"

    @property
    def standby_flow(self) -> str:
        """The flow stopped until the next switchover: passive -> active."""
        return f"{self.passive}->{self.active}"


@dataclass(frozen=True)
class Link:
    """The WAN between two datacenters (`mm2:links.<a><-><b>`), as it is: its round-trip time,
    bandwidth (bits per second) and packet loss (percent). The clients of a flow whose records
    cross it get settings derived from it (components/topology/links.py)."""

    a: str
    b: str
    rtt_ms: float
    bandwidth_bps: float
    loss_pct: float = 0.0

    @property
    def name(self) -> str:
        return f"{self.a}{PAIR_SEPARATOR}{self.b}"

    def joins(self, first: str, second: str) -> bool:
        """True when the link runs between these two datacenters, in either order."""
        return {self.a, self.b} == {first, second}


@dataclass(frozen=True)
class Topology:
    clusters: Mapping[str, Cluster]
    worker_groups: Mapping[str, WorkerGroup]
    flows: tuple[Flow, ...]
    pairs: tuple[Pair, ...] = ()
    links: tuple[Link, ...] = ()
    # local: the namespaces and links that emulate `links` (derived, emulation.with_network).
    network: NetworkPlan | None = None

    def enabled_flows(self) -> tuple[Flow, ...]:
        return tuple(flow for flow in self.flows if flow.enabled)

    def flow(self, name: str) -> Flow:
        """The flow named `source->target`; KeyError if there is none."""
        for flow in self.flows:
            if flow.name == name:
                return flow
        raise KeyError(name)


@dataclass(frozen=True)
class Problem:
    key: str  # stack config path, e.g. "mm2:flows.primary->dr.topics[1]"
    message: str
    fix: str


class TopologyError(ValueError):
    """Every problem found in a stack config, reported at once."""

    def __init__(self, problems: tuple[Problem, ...] | list[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__(self._render())

    def _render(self) -> str:
        count = len(self.problems)
        lines = [f"{count} problem{'s' if count != 1 else ''} in the mm2 stack config:"]
        for problem in self.problems:
            lines.append(f"  {problem.key}: {problem.message} Fix: {problem.fix}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self._render()
