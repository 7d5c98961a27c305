"""The stack-outputs contract: what the program exports, as frozen dataclasses with a JSON encoding.

Pure (no pulumi, no I/O): the program builds its exports with it (`components/program.py`,
`ReplicationFlow`), and the operator commands and the Spark stage decode what
`pulumi stack output --json --show-secrets` prints with it (`components/outputs/loader.py`).

    {"clusters": {alias: ClusterExport}, "connect": {group: ConnectGroupExport}, "flows": {name: FlowExport},
     "failover": {pair: PairExport}}  (failover only with `mm2:failover` pairs)

The program fills some fields with pulumi Outputs (connector states, secrets): `to_json` only
places each value under its key, so `pulumi.export` resolves them, each keeping its own secrecy.

Secrets (`clusters.*.client`, `clusters.*.users`, `connect.*.auth`) are exported as Pulumi
secrets; decoded, they stay in memory and no `repr` here shows them. Stacks deployed before
`separator`, `offsetSyncsCluster` and `namePreserving` were exported decode too: those are then
inferred from the internal topic names, as the Spark stage always did. A pair exported before its
`principals` and `patterns` were decodes with none: `bin/status` then does not read its fence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from components.topology.acknowledgement import InstantError, instant_text, parse_instant

HIDDEN = "[secret]"  # what `pulumi stack output --json` prints for a secret without --show-secrets
FLOW_KEYS = ("source", "target", "topics", "checkpointsTopic", "offsetSyncsTopic", "heartbeatsTopic")


class OutputsError(ValueError):
    """The stack outputs cannot be read or do not match the contract; the message lists every problem."""


@dataclass(frozen=True)
class ClusterExport:
    alias: str
    bootstrap: str
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    # librdkafka settings of the stack's admin (`security.protocol`, `sasl.username`, ...). Secret.
    client: Mapping[str, Any] = field(default_factory=dict, repr=False)
    users: Mapping[str, str] = field(default_factory=dict, repr=False)  # user -> password. Secret.
    ca_location: str | None = None  # local TLS: the stack CA as PEM file (public)
    # Java SASL settings {mechanism, jaasConfig} of hand-written outputs; the program exports `client`.
    sasl: Mapping[str, str] = field(default_factory=dict, repr=False)
    # Kubernetes: where the brokers run as pods {context, namespace, statefulset}; broker N is pod
    # `<statefulset>-N`. Empty elsewhere. `bin/status` names a down broker's pod and node with it.
    pods: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "bootstrap": self.bootstrap,
            "securityProtocol": self.security_protocol,
            "saslMechanism": self.sasl_mechanism,
            "client": self.client,
            "users": self.users,
            "caLocation": self.ca_location,
        }
        if self.sasl:
            data["sasl"] = self.sasl
        if self.pods:
            data["pods"] = self.pods
        return data


@dataclass(frozen=True)
class ConnectGroupExport:
    name: str
    url: str
    cluster: str = ""  # alias of the cluster the workers are attached to
    auth: Mapping[str, str] | None = field(default=None, repr=False)  # REST basic auth {username, password}. Secret.
    ca_pem: str | None = None  # the stack CA an https:// REST listener is verified against (restTls)
    # where the workers keep their connectors' source offsets (`workerGroups.<name>.offsetTopic`),
    # on `cluster`; empty in outputs written before it was exported
    offset_topic: str = ""
    # every worker's own REST URL, first worker first, where the stack runs the workers on this
    # machine (local, docker): `bin/status` asks each at once to tell a dead group in seconds.
    # Empty for one URL in front of the group (Kubernetes Service, external) and in older outputs.
    worker_urls: tuple[str, ...] = ()
    # the group's lag exporter (GET /metrics, /expired; components/ops/lag_exporter.py), where the
    # stack runs one: on local a loopback URL this machine reaches; on Kubernetes the in-cluster
    # Service URL (http://<group>-lag-exporter.<namespace>.svc:9404), reachable from inside the
    # cluster or through `kubectl port-forward`; empty otherwise and in older outputs
    lag_url: str = ""
    # every worker's Prometheus endpoint (its JMX exporter agent, `metricsPort`), first worker
    # first, where the stack runs the workers on this machine with one: `bin/status` reads MM2's
    # byte-rate from them. Empty otherwise and in older outputs.
    metrics_urls: tuple[str, ...] = ()
    # Kubernetes: where the workers run as pods {context, namespace, selector, port (of their
    # metrics, empty without)}: `bin/status` reads each worker's metrics through the API server.
    pods: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = {
            "url": self.url,
            "cluster": self.cluster,
            "auth": self.auth,
            "caPem": self.ca_pem,
            "offsetTopic": self.offset_topic,
            "workerUrls": list(self.worker_urls),
            "lagUrl": self.lag_url,
            "metricsUrls": list(self.metrics_urls),
        }
        if self.pods:
            data["pods"] = self.pods
        return data

    @property
    def probe_urls(self) -> tuple[str, ...]:
        """The URLs that reach the group's workers: each worker's, else the group's one URL."""
        return self.worker_urls or ((self.url,) if self.url else ())


@dataclass(frozen=True)
class LinkExport:
    """The declared WAN link a flow's records cross (`mm2:links`), as the outputs carry it."""

    name: str  # "dc1<->dc2"
    rtt_ms: float
    bandwidth_bps: float

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "rttMs": self.rtt_ms, "bandwidthBps": self.bandwidth_bps}


@dataclass(frozen=True)
class FlowExport:
    name: str  # "primary->dr"
    source: str
    target: str
    topics: Mapping[str, str]  # source topic -> remote topic on the target
    checkpoints_topic: str
    offset_syncs_topic: str
    heartbeats_topic: str
    worker_group: str = ""
    connectors: Mapping[str, str] = field(default_factory=dict)  # role -> connector name
    states: Mapping[str, str] = field(default_factory=dict)  # connector name -> state at the last `up`
    desired_states: Mapping[str, str] = field(default_factory=dict)  # role -> declared state
    exactly_once: bool = False
    offset_lag_max: int = 100
    groups: tuple[str, ...] = ()
    separator: str = "."  # the replication policy's: remote topics are `<source><separator><topic>`
    name_preserving: bool = False  # IdentityReplicationPolicy: remote names equal source names
    offset_syncs_cluster: str = ""  # alias of the cluster holding the offset-syncs topic
    enabled: bool = True
    # `reverseHeartbeats`: the connector emitting heartbeats target -> source into the source's
    # `heartbeats_topic` (records keyed (target, source)); None when the flow has none.
    reverse_heartbeats_connector: str | None = None
    # SMT aliases the source connector applies to records (empty when none): a transformed
    # flow's records differ from the source's, so record-level checks do not apply.
    transforms: tuple[str, ...] = ()
    # Declared objectives (`rpo`, `outageBudget`) in seconds: the longest acceptable replication
    # delay and the longest outage the flow must survive. None in outputs written before them.
    rpo_seconds: int | None = None
    outage_budget_seconds: int | None = None
    # `lossAcknowledged` (components/topology/acknowledgement.py), ms since the epoch, exported as
    # `lossAcknowledgedAt`, the UTC instant: what the lag exporter found gone before replication
    # at or before it is listed, not judged. None: nothing acknowledged (and in older outputs).
    loss_acknowledged_at_ms: int | None = None
    # The declared link between the source's and the target's datacenters; None when there is
    # none (one datacenter, none declared) and in older outputs.
    link: LinkExport | None = None

    @property
    def loss_acknowledged_at(self) -> str | None:
        """The loss acknowledgement as the outputs write it (2026-11-26T10:00:00Z), or None."""
        return None if self.loss_acknowledged_at_ms is None else instant_text(self.loss_acknowledged_at_ms)

    @property
    def replicated_heartbeats_topic(self) -> str:
        # Every policy, Identity included, renames heartbeats: `<source><sep>heartbeats`.
        return f"{self.source}{self.separator}heartbeats"

    @property
    def connector_names(self) -> tuple[str, ...]:
        """Every connector of the flow: its roles' and the reverse heartbeats one, if any."""
        reverse = (self.reverse_heartbeats_connector,) if self.reverse_heartbeats_connector else ()
        return (*self.connectors.values(), *reverse)

    def remote_topic_of(self, topic: str) -> str:
        """The remote topic on the target that source `topic` is replicated into (the policy's
        name for a topic the outputs do not list, e.g. one created since)."""
        return self.topics.get(topic) or (topic if self.name_preserving else f"{self.source}{self.separator}{topic}")

    def source_topic_of(self, remote: str) -> str | None:
        """The source topic replicated into `remote` on the target, if this flow has one."""
        for src, rem in self.topics.items():
            if rem == remote:
                return src
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "workerGroup": self.worker_group,
            "connectors": dict(self.connectors),
            "states": dict(self.states),
            "desiredStates": dict(self.desired_states),
            "topics": dict(self.topics),
            "checkpointsTopic": self.checkpoints_topic,
            "offsetSyncsTopic": self.offset_syncs_topic,
            "heartbeatsTopic": self.heartbeats_topic,
            "exactlyOnce": self.exactly_once,
            "offsetLagMax": self.offset_lag_max,
            "groups": list(self.groups),
            "separator": self.separator,
            "namePreserving": self.name_preserving,
            "offsetSyncsCluster": self.offset_syncs_cluster,
            "enabled": self.enabled,
            "reverseHeartbeats": (
                {"connector": self.reverse_heartbeats_connector, "cluster": self.source, "topic": self.heartbeats_topic}
                if self.reverse_heartbeats_connector
                else None
            ),
            "transforms": list(self.transforms),
            "rpoSeconds": self.rpo_seconds,
            "outageBudgetSeconds": self.outage_budget_seconds,
            "lossAcknowledgedAt": self.loss_acknowledged_at,
            "link": self.link.to_json() if self.link else None,
        }


@dataclass(frozen=True, order=True)
class PartitionCut:
    """Where a flow stopped by a switchover stopped on one source partition: the source's log end,
    and the remote partition's log end when everything before it had been copied."""

    topic: str
    partition: int
    source_end: int
    remote_end: int


def cut_document(cut: Any) -> list[dict[str, Any]]:
    return [
        {"topic": c.topic, "partition": c.partition, "sourceEnd": c.source_end, "remoteEnd": c.remote_end}
        for c in sorted(cut)
    ]


def cut_from_document(doc: Any) -> tuple[PartitionCut, ...]:
    return tuple(
        sorted(
            PartitionCut(str(d["topic"]), int(d["partition"]), int(d["sourceEnd"]), int(d["remoteEnd"]))
            for d in doc or ()
        )
    )


@dataclass(frozen=True)
class PairExport:
    """A cluster pair (`failover.<a><->b>`): its active side and, per flow a switchover stopped,
    where it stopped (components/switchover.py)."""

    name: str
    active: str
    cuts: Mapping[str, tuple[PartitionCut, ...]] = field(default_factory=dict)
    principals: tuple[str, ...] = ()  # the applications' principals: the passive side's fence holds them
    # flow -> (topics, topicsExclude): the passive side's outbound flow's select the fenced topics
    patterns: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict)
    unplanned: bool = False  # the last change of `active` was a failover: the lost side is not asked
    last: Mapping[str, Any] | None = None  # the latest switchover's report (docs/failover.md)

    @property
    def passive(self) -> str:
        first, second = self.name.split("<->", 1)
        return second if self.active == first else first

    @property
    def standby_cut(self) -> tuple[PartitionCut, ...]:
        """Where the passive side's outbound flow stopped (empty before its first switchover)."""
        return self.cuts.get(f"{self.passive}->{self.active}", ())

    def to_json(self) -> dict[str, Any]:
        return {
            "active": self.active,
            "cuts": {f: cut_document(c) for f, c in self.cuts.items()},
            "principals": list(self.principals),
            "patterns": {f: pattern_document(*p) for f, p in self.patterns.items()},
            "unplanned": self.unplanned,
            "last": None if self.last is None else dict(self.last),
        }


def pattern_document(topics: Sequence[str], exclude: Sequence[str]) -> dict[str, list[str]]:
    """A flow's topic patterns as the failover export (and the Switchover resource) hold them."""
    return {"topics": list(topics), "topicsExclude": list(exclude)}


def patterns_from_document(doc: Any) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """flow -> (topics, topicsExclude) from `{flow: pattern_document(...)}`; None holds none."""
    return {
        str(flow): (tuple(str(t) for t in p["topics"]), tuple(str(t) for t in p.get("topicsExclude") or ()))
        for flow, p in (doc or {}).items()
    }


@dataclass(frozen=True)
class StackExports:
    clusters: Mapping[str, ClusterExport]
    connect: Mapping[str, ConnectGroupExport]
    flows: Mapping[str, FlowExport]
    pairs: Mapping[str, PairExport] = field(default_factory=dict)  # `failover`; absent without pairs

    def to_json(self) -> dict[str, Any]:
        data = {
            "clusters": {alias: c.to_json() for alias, c in self.clusters.items()},
            "connect": {name: g.to_json() for name, g in self.connect.items()},
            "flows": {name: f.to_json() for name, f in self.flows.items()},
        }
        if self.pairs:
            data["failover"] = {name: pair.to_json() for name, pair in self.pairs.items()}
        return data

    @classmethod
    def from_json(cls, data: Any) -> StackExports:
        """Decode what `pulumi stack output --json --show-secrets` printed; one error lists every problem."""
        problems: list[str] = []
        if not isinstance(data, Mapping):
            raise OutputsError(f"stack outputs: expected a JSON object, got {type(data).__name__}")
        raw_clusters = data.get("clusters")
        if not isinstance(raw_clusters, Mapping) or not raw_clusters:
            problems.append('"clusters" is missing or empty')
            raw_clusters = {}
        clusters = {str(alias): c for alias, raw in raw_clusters.items() if (c := _cluster(str(alias), raw, problems))}
        raw_connect = data.get("connect") or {}
        connect = {str(name): _connect_group(str(name), raw, problems) for name, raw in raw_connect.items()}
        raw_flows = data.get("flows")
        if not isinstance(raw_flows, Mapping):
            problems.append('"flows" is missing')
            raw_flows = {}
        flows = {
            str(name): f for name, raw in raw_flows.items() if (f := _flow(str(name), raw, raw_clusters, problems))
        }
        pairs = {str(name): _pair(str(name), raw, problems) for name, raw in (data.get("failover") or {}).items()}
        if problems:
            raise OutputsError(
                "stack outputs do not match the contract in docs/architecture.md:\n  - " + "\n  - ".join(problems)
            )
        return cls(clusters=clusters, connect=connect, flows=flows, pairs=pairs)


def _pair(name: str, raw: Any, problems: list[str]) -> PairExport:
    try:
        cuts = {str(f): cut_from_document(doc) for f, doc in (raw.get("cuts") or {}).items()}
        patterns = patterns_from_document(raw.get("patterns"))
        principals = tuple(str(p) for p in raw.get("principals") or ())
        last = raw.get("last") if isinstance(raw.get("last"), Mapping) else None
        return PairExport(name, str(raw["active"]), cuts, principals, patterns, bool(raw.get("unplanned")), last)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        problems.append(f'failover["{name}"] is not {{active, cuts}}: {exc!r}')
        return PairExport(name, "", {})


def _mapping(where: str, value: Any, problems: list[str]) -> Mapping[str, Any]:
    if value is None:
        return {}
    if value == HIDDEN:
        problems.append(
            f"{where} is hidden ({value!r}): write the outputs with `pulumi stack output --json --show-secrets`"
        )
        return {}
    if not isinstance(value, Mapping):
        problems.append(f"{where} is not an object")
        return {}
    return value


def _cluster(alias: str, raw: Any, problems: list[str]) -> ClusterExport | None:
    if not isinstance(raw, Mapping) or not raw.get("bootstrap"):
        problems.append(f'clusters["{alias}"] has no "bootstrap"')
        return None
    where = f'clusters["{alias}"]'
    return ClusterExport(
        alias=alias,
        bootstrap=str(raw["bootstrap"]),
        security_protocol=str(raw.get("securityProtocol") or "PLAINTEXT"),
        sasl_mechanism=str(raw["saslMechanism"]) if raw.get("saslMechanism") else None,
        client={str(k): v for k, v in _mapping(f"{where}.client", raw.get("client"), problems).items()},
        users={str(k): str(v) for k, v in _mapping(f"{where}.users", raw.get("users"), problems).items()},
        ca_location=str(raw["caLocation"]) if raw.get("caLocation") else None,
        sasl={str(k): str(v) for k, v in _mapping(f"{where}.sasl", raw.get("sasl"), problems).items()},
        pods={str(k): str(v) for k, v in _mapping(f"{where}.pods", raw.get("pods"), problems).items()},
    )


def _connect_group(name: str, raw: Any, problems: list[str]) -> ConnectGroupExport:
    entry = _mapping(f'connect["{name}"]', raw, problems)
    # `auth: {username, password}` as the program exports it, or top-level username/password.
    auth = _mapping(f'connect["{name}"].auth', entry.get("auth"), problems) or entry
    user, password = auth.get("username"), auth.get("password")
    return ConnectGroupExport(
        name=name,
        url=str(entry.get("url") or ""),
        cluster=str(entry.get("cluster") or ""),
        auth={"username": str(user), "password": str(password)} if user and password is not None else None,
        ca_pem=str(entry["caPem"]) if entry.get("caPem") else None,
        offset_topic=str(entry.get("offsetTopic") or ""),
        worker_urls=tuple(str(u) for u in entry.get("workerUrls") or ()),
        lag_url=str(entry.get("lagUrl") or ""),
        metrics_urls=tuple(str(u) for u in entry.get("metricsUrls") or ()),
        pods={str(k): str(v) for k, v in _mapping(f'connect["{name}"].pods', entry.get("pods"), problems).items()},
    )


def _flow(name: str, raw: Any, clusters: Mapping[str, Any], problems: list[str]) -> FlowExport | None:
    if not isinstance(raw, Mapping):
        problems.append(f'flows["{name}"] is not an object')
        return None
    missing = [k for k in FLOW_KEYS if k not in raw]
    if missing:
        problems.append(f'flows["{name}"] lacks {", ".join(missing)}')
        return None
    source, target = str(raw["source"]), str(raw["target"])
    for alias in (source, target):
        if alias not in clusters:
            problems.append(f'flows["{name}"] refers to cluster "{alias}", which is not in "clusters"')
    topics = {str(k): str(v) for k, v in dict(raw["topics"]).items()}
    sep = _separator(source, str(raw["checkpointsTopic"]), raw.get("separator"))
    return FlowExport(
        name=name,
        source=source,
        target=target,
        topics=topics,
        checkpoints_topic=str(raw["checkpointsTopic"]),
        offset_syncs_topic=str(raw["offsetSyncsTopic"]),
        heartbeats_topic=str(raw["heartbeatsTopic"]),
        worker_group=str(raw.get("workerGroup") or ""),
        connectors={str(k): str(v) for k, v in dict(raw.get("connectors") or {}).items()},
        states={str(k): str(v) for k, v in dict(raw.get("states") or {}).items()},
        desired_states={str(k): str(v) for k, v in dict(raw.get("desiredStates") or {}).items()},
        exactly_once=bool(raw.get("exactlyOnce", False)),
        offset_lag_max=int(raw["offsetLagMax"]) if raw.get("offsetLagMax") is not None else 100,
        groups=tuple(str(g) for g in raw.get("groups") or ()),
        separator=sep,
        name_preserving=bool(raw.get("namePreserving", bool(topics) and all(k == v for k, v in topics.items()))),
        offset_syncs_cluster=_offset_syncs_cluster(
            str(raw["offsetSyncsTopic"]), source, target, sep, raw.get("offsetSyncsCluster")
        ),
        enabled=raw.get("enabled") is not False,
        reverse_heartbeats_connector=_reverse_heartbeats_connector(raw.get("reverseHeartbeats")),
        transforms=tuple(str(a) for a in raw.get("transforms") or ()),
        rpo_seconds=_seconds(f'flows["{name}"].rpoSeconds', raw.get("rpoSeconds"), problems),
        outage_budget_seconds=_seconds(
            f'flows["{name}"].outageBudgetSeconds', raw.get("outageBudgetSeconds"), problems
        ),
        loss_acknowledged_at_ms=_instant(
            f'flows["{name}"].lossAcknowledgedAt', raw.get("lossAcknowledgedAt"), problems
        ),
        link=_link(f'flows["{name}"].link', raw.get("link"), problems),
    )


def _link(where: str, raw: Any, problems: list[str]) -> LinkExport | None:
    """The flow's link; absent or null (no link, older outputs) is None."""
    if raw is None:
        return None
    try:
        link = LinkExport(str(raw["name"]), float(raw["rttMs"]), float(raw["bandwidthBps"]))
    except (KeyError, TypeError, ValueError):
        problems.append(f"{where} is not {{name, rttMs, bandwidthBps}}: {raw!r}")
        return None
    if link.rtt_ms <= 0 or link.bandwidth_bps <= 0:
        problems.append(f"{where} has a round trip or bandwidth that is not positive: {raw!r}")
        return None
    return link


def _seconds(where: str, raw: Any, problems: list[str]) -> int | None:
    """A declared duration in whole seconds; absent (older outputs) is None."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw != int(raw) or raw <= 0:
        problems.append(f"{where} is not a positive whole number of seconds: {raw!r}")
        return None
    return int(raw)


def _instant(where: str, raw: Any, problems: list[str]) -> int | None:
    """An instant with its zone (2026-11-26T10:00:00Z) in ms; absent (older outputs) is None."""
    if raw is None:
        return None
    try:
        return parse_instant(raw)
    except InstantError as exc:
        problems.append(f"{where} is not an ISO-8601 instant with its time zone ({exc}): {raw!r}")
        return None


def _reverse_heartbeats_connector(raw: Any) -> str | None:
    """The reverse heartbeat connector's name from `reverseHeartbeats` (absent in older outputs)."""
    if isinstance(raw, Mapping) and raw.get("connector"):
        return str(raw["connector"])
    return None


def _separator(source: str, checkpoints_topic: str, explicit: Any) -> str:
    if isinstance(explicit, str) and explicit:
        return explicit
    # `<source><sep>checkpoints<sep>internal` names the separator when the outputs do not.
    rest = checkpoints_topic[len(source) :] if checkpoints_topic.startswith(source) else ""
    if rest.endswith("internal") and "checkpoints" in rest:
        sep = rest[: rest.index("checkpoints")]
        if sep:
            return sep
    return "."


def _offset_syncs_cluster(topic: str, source: str, target: str, sep: str, explicit: Any) -> str:
    if isinstance(explicit, str) and explicit:
        return explicit
    # The topic names the cluster it does NOT live on (offset-syncs.topic.location).
    return target if topic == f"mm2-offset-syncs{sep}{source}{sep}internal" else source
