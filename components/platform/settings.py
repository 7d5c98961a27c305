"""The `mm2-platform` stack config: settings of the `kubernetes` and `docker` platforms.

Pure: parsing only, no pulumi import and no I/O. Kept apart from the `mm2:` namespace so the
replication model stays platform-neutral; every problem is reported at once
(`PlatformSettingsError`).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, TypeVar

from components.monitoring.broker_rules import CRITICAL_FOR, UNDER_REPLICATED_FOR
from components.monitoring.rules import Thresholds
from components.platform.errors import PlatformError
from components.platform.image_layout import KAFKA_IMAGE, WATCHER_IMAGE
from components.platform.placement import PLACEMENT_FIELDS, Placement, parse_placement
from components.topology.objectives import format_duration, parse_duration

# The project's own images (bin/bootstrap --images builds them; see image_layout). A prod
# cluster pulls them from the user's registry under the names these fields are set to.
DEFAULT_KAFKA_IMAGE = KAFKA_IMAGE
DEFAULT_WATCHER_IMAGE = WATCHER_IMAGE
# Keys that once existed, with why they went and what to do instead.
_BAKED_AGENT = "the JMX exporter agent is baked into the Kafka image (bin/bootstrap --images); nothing downloads it"
_REMOVED = {
    "agentUrl": _BAKED_AGENT,
    "downloaderImage": _BAKED_AGENT,
    "kafkaUi": "Kafka UI is not deployed (no build of it is obtainable where the images are built); "
    "bin/status is the health view",
}


@dataclass(frozen=True)
class Resources:
    cpu_request: str
    memory_request: str
    cpu_limit: str | None
    memory_limit: str

    def spec(self) -> dict[str, Any]:
        limits = {"memory": self.memory_limit}
        if self.cpu_limit:
            limits["cpu"] = self.cpu_limit
        return {"requests": {"cpu": self.cpu_request, "memory": self.memory_request}, "limits": limits}


KUBERNETES_CONFIG = "mm2-platform:kubernetes"  # the stack config namespace of these settings


@dataclass(frozen=True)
class BrokerAlertSettings:
    """How long a cluster's broker alerts wait before they fire (components/monitoring/broker_rules.py):
    `under_replicated_for` longer than one broker's restart, so a healthy roll stays quiet."""

    under_replicated_for: str = UNDER_REPLICATED_FOR
    critical_for: str = CRITICAL_FOR


@dataclass(frozen=True)
class KafkaPodSettings(Placement):
    """Per Kafka cluster on Kubernetes. Secret names default to `<alias>-kafka-secrets|tls`."""

    image: str = DEFAULT_KAFKA_IMAGE
    storage_size: str = "100Gi"
    storage_class: str | None = None
    heap: str = "2g"
    resources: Resources = Resources("1", "4Gi", None, "4Gi")
    zone_spread: str = "preferred"  # preferred | required
    # The node label each broker's `broker.rack` is read from ("": one rack per cluster, its
    # datacenter or alias; components/platform/kubernetes/rack.py).
    zone_label: str = "topology.kubernetes.io/zone"
    secrets_secret: str | None = None
    tls_secret: str | None = None
    external_host: str | None = None  # e.g. "us-east-kafka-{ordinal}.kafka.example.com"
    external_service_annotations: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # NodePort instead of LoadBalancer for the external listener: the bootstrap Service gets this
    # node port, broker i the next ones (port + 1 + i), and each advertises externalHost:its port.
    external_node_port: int | None = None
    context: str | None = None  # kubeconfig context of the Kubernetes cluster hosting it
    # Whether deleting the cluster (pulumi destroy, or removing it from the stack) deletes its
    # volume claims, and so its data; Kubernetes' (and Strimzi's) default keeps them.
    delete_claims: bool = False
    # Lets a change Kubernetes forbids in place (storageSize, storageClass) replace the brokers'
    # StatefulSet: an outage of the cluster (components/platform/kubernetes/fixed_fields.py).
    recreate_statefulset: bool = False
    # The brokers' exporter always runs (their readiness reads its broker state); `metrics` adds
    # the ServiceMonitor and the PrometheusRule of broker alerts, for the Prometheus Operator.
    metrics: bool = True
    prometheus_labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # Lets a broker roll start, or go on, while a broker is down or partitions would fall below
    # min.insync.replicas (components/platform/kubernetes/roll_plan.py): for emergencies only; an
    # `up` that leaves it on after its roll is refused at preview.
    roll_override: bool = False
    alerts: BrokerAlertSettings = BrokerAlertSettings()


@dataclass(frozen=True)
class AlertSettings:
    """A worker group's alerts (components/monitoring/rules.py): `for_duration` is how long the
    latency alerts wait, `failure_for` the failure ones (a connector or task FAILED, heartbeats
    stale, no records while the source produces)."""

    replication_latency_ms: int = Thresholds.replication_latency_ms
    checkpoint_latency_ms: int = Thresholds.checkpoint_latency_ms
    heartbeat_window_minutes: int = 5  # Thresholds.window, in whole minutes
    for_duration: str = Thresholds.latency_for
    failure_for: str = Thresholds.failure_for


@dataclass(frozen=True)
class ConnectPodSettings(Placement):
    """Per Connect worker group on Kubernetes. Secret names default to `<group>-connect-*`."""

    image: str = DEFAULT_KAFKA_IMAGE
    heap: str = "1g"
    resources: Resources = Resources("500m", "2Gi", None, "2Gi")
    secrets_secret: str | None = None
    rest_users_secret: str | None = None
    tls_secret: str | None = None
    service_type: str = "ClusterIP"
    node_port: int | None = None  # the REST API's node port when service_type is NodePort
    service_annotations: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    metrics: bool = True
    # Labels the Prometheus Operator selects ServiceMonitors and PrometheusRules by.
    prometheus_labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    alerts: AlertSettings = AlertSettings()
    context: str | None = None
    watcher_image: str = DEFAULT_WATCHER_IMAGE
    # Where REST clients outside the cluster's pods may call from (CIDRs): with it, a
    # NetworkPolicy admits the REST port only from the group's workers, its watcher and these.
    rest_from: tuple[str, ...] | None = None


@dataclass(frozen=True)
class KubernetesSettings:
    namespace: str = "mm2"
    clusters: Mapping[str, KafkaPodSettings] = field(default_factory=lambda: MappingProxyType({}))
    worker_groups: Mapping[str, ConnectPodSettings] = field(default_factory=lambda: MappingProxyType({}))
    # Render manifests to this directory instead of applying them (kubernetes provider option).
    render_dir: str | None = None
    # How long `up` waits for an object to be ready (a pod Running and Ready, a Service's address)
    # before it fails with what the pods report, instead of the provider's default 10 minutes.
    ready_timeout: str = "5m"
    # Defaults for clusters and groups without an entry of their own.
    kafka: KafkaPodSettings = KafkaPodSettings()
    connect: ConnectPodSettings = ConnectPodSettings()

    def cluster(self, alias: str) -> KafkaPodSettings:
        return self.clusters.get(alias, self.kafka)

    def group(self, name: str) -> ConnectPodSettings:
        return self.worker_groups.get(name, self.connect)

    def cluster_key(self, alias: str, field: str) -> str:
        """The full key of a cluster's setting: its own entry's, else the platform's default."""
        where = f"clusters.{alias}" if alias in self.clusters else "kafka"
        return f"{KUBERNETES_CONFIG}.{where}.{field}"

    def group_key(self, name: str, field: str) -> str:
        """The full key of a worker group's setting: its own entry's, else the platform's default."""
        where = f"workerGroups.{name}" if name in self.worker_groups else "connect"
        return f"{KUBERNETES_CONFIG}.{where}.{field}"


@dataclass(frozen=True)
class DockerSettings:
    image: str = DEFAULT_KAFKA_IMAGE
    broker_heap: str = "512m"
    connect_heap: str = "768m"


_Alerts = TypeVar("_Alerts", "AlertSettings", "BrokerAlertSettings")


class PlatformSettingsError(PlatformError, ValueError):
    """Every problem in the `mm2-platform` config, reported at once."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        super().__init__(
            f"{len(problems)} problem(s) in the mm2-platform stack config:\n" + "\n".join(f"  {p}" for p in problems)
        )


_KAFKA_FIELDS = {
    "image": "image",
    "storageSize": "storage_size",
    "storageClass": "storage_class",
    "heap": "heap",
    "resources": "resources",
    "zoneSpread": "zone_spread",
    "zoneLabel": "zone_label",
    "secretsSecret": "secrets_secret",
    "tlsSecret": "tls_secret",
    "externalHost": "external_host",
    "externalServiceAnnotations": "external_service_annotations",
    "externalNodePort": "external_node_port",
    "deleteClaims": "delete_claims",
    "recreateStatefulSet": "recreate_statefulset",
    "metrics": "metrics",
    "prometheusLabels": "prometheus_labels",
    "rollOverride": "roll_override",
    "alerts": "alerts",
    "context": "context",
    **PLACEMENT_FIELDS,
}
_CONNECT_FIELDS = {
    "image": "image",
    "heap": "heap",
    "resources": "resources",
    "secretsSecret": "secrets_secret",
    "restUsersSecret": "rest_users_secret",
    "tlsSecret": "tls_secret",
    "serviceType": "service_type",
    "nodePort": "node_port",
    "serviceAnnotations": "service_annotations",
    "metrics": "metrics",
    "prometheusLabels": "prometheus_labels",
    "alerts": "alerts",
    "context": "context",
    "watcherImage": "watcher_image",
    "restFrom": "rest_from",
    **PLACEMENT_FIELDS,
}
_ALERT_FIELDS = {
    "replicationLatencyMs": "replication_latency_ms",
    "checkpointLatencyMs": "checkpoint_latency_ms",
    "heartbeatWindowMinutes": "heartbeat_window_minutes",
    "for": "for_duration",
    "failureFor": "failure_for",
}
_BROKER_ALERT_FIELDS = {"underReplicatedFor": "under_replicated_for", "criticalFor": "critical_for"}
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _resources(raw: Any, where: str, default: Resources, problems: list[str]) -> Resources:
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: expected {{requests: {{cpu, memory}}, limits: {{cpu, memory}}}}, got {raw!r}")
        return default
    requests = raw.get("requests", {}) or {}
    limits = raw.get("limits", {}) or {}
    return Resources(
        cpu_request=str(requests.get("cpu", default.cpu_request)),
        memory_request=str(requests.get("memory", default.memory_request)),
        cpu_limit=str(limits["cpu"]) if limits.get("cpu") is not None else default.cpu_limit,
        memory_limit=str(limits.get("memory", default.memory_limit)),
    )


def _fields(raw: Mapping[str, Any], names: Mapping[str, str], where: str, problems: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in names:
            problems.append(_unknown(where, key, names))
            continue
        out[names[key]] = value
    return out


def _kafka_pod(raw: Mapping[str, Any], where: str, problems: list[str]) -> KafkaPodSettings:
    values = _fields(raw, _KAFKA_FIELDS, where, problems)
    parse_placement(values, where, problems)
    base = KafkaPodSettings()
    if "resources" in values:
        values["resources"] = _resources(values["resources"], f"{where}.resources", base.resources, problems)
    for key in ("external_service_annotations", "prometheus_labels"):
        if key in values:
            values[key] = MappingProxyType({str(k): str(v) for k, v in dict(values[key]).items()})
    for key in ("image", "storage_size", "storage_class", "heap", "secrets_secret", "tls_secret", "context"):
        if key in values and values[key] is not None:
            values[key] = str(values[key])
    if "zone_label" in values and not _LABEL_KEY.match(str(values["zone_label"] or "")):
        problems.append(
            f"{where}.zoneLabel: {values['zone_label']!r} is not a node label key; give one such as "
            'topology.kubernetes.io/zone, or "" for one rack per cluster.'
        )
        values.pop("zone_label")
    if values.get("zone_spread", "preferred") not in ("preferred", "required"):
        problems.append(f"{where}.zoneSpread: must be preferred or required, got {values['zone_spread']!r}.")
        values.pop("zone_spread")
    flags = ("delete_claims", "deleteClaims"), ("recreate_statefulset", "recreateStatefulSet")
    for key, name in (*flags, ("metrics", "metrics"), ("roll_override", "rollOverride")):
        if key in values:
            if not isinstance(values[key], bool):
                problems.append(f"{where}.{name}: {values[key]!r} is not true or false.")
            values[key] = values[key] is True
    if "alerts" in values:
        values["alerts"] = _alerts(
            values["alerts"], _BROKER_ALERT_FIELDS, BrokerAlertSettings(), f"{where}.alerts", problems
        )
    if "external_node_port" in values:
        values["external_node_port"] = _node_port(values["external_node_port"], f"{where}.externalNodePort", problems)
    host = values.get("external_host")
    if values.get("external_node_port") is not None and host is None:
        problems.append(
            f"{where}.externalNodePort: needs externalHost, the address clients reach the nodes at "
            '(e.g. "kafka-nodes.example.com", or "127.0.0.1" on bin/kube\'s node).'
        )
    # Brokers on node ports differ by port; behind load balancers, by host.
    if host is not None and values.get("external_node_port") is None and "{ordinal}" not in str(host):
        problems.append(
            f"{where}.externalHost: {host!r} must contain {{ordinal}} (each broker needs its own address), "
            'e.g. "us-east-kafka-{ordinal}.kafka.example.com"; or set externalNodePort.'
        )
        values.pop("external_host")
    return replace(base, **values)


def _alerts(raw: Any, names: Mapping[str, str], default: _Alerts, where: str, problems: list[str]) -> _Alerts:
    """`default` with the alert settings in `raw`: counts as whole numbers, `for` times as
    durations (`30s`, `5m`, `2h`: what Prometheus takes too)."""
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: expected a mapping of {', '.join(names)}, got {raw!r}")
        return default
    values = _fields(raw, names, where, problems)
    keys = {field: key for key, field in names.items()}
    for name, value in list(values.items()):
        if isinstance(getattr(default, name), int):
            number = _whole_number(value)
            if number is not None and number > 0:
                values[name] = number
                continue
            problems.append(f"{where}.{keys[name]}: {value!r} is not a positive whole number.")
        else:
            seconds = parse_duration(value)
            if seconds:
                values[name] = format_duration(seconds)
                continue
            problems.append(f"{where}.{keys[name]}: {value!r} is not a duration; give one such as 30s, 5m or 1h.")
        values.pop(name)
    return replace(default, **values)


def _whole_number(value: Any) -> int | None:
    """`value` as a whole number (also written as a string, as `pulumi config set` may store
    it); None for anything else, booleans included."""
    if isinstance(value, bool):
        return None
    try:
        return int(str(value))
    except ValueError:
        return None


def _node_port(raw: Any, where: str, problems: list[str]) -> int | None:
    """A whole number in Kubernetes' default NodePort range; None (after a problem) otherwise."""
    try:
        port = int(raw)
    except (TypeError, ValueError):
        port = -1
    if not 30000 <= port <= 32767 or isinstance(raw, bool):
        problems.append(f"{where}: {raw!r} is not a node port; give a whole number in 30000-32767.")
        return None
    return port


def _connect_pod(raw: Mapping[str, Any], where: str, problems: list[str]) -> ConnectPodSettings:
    values = _fields(raw, _CONNECT_FIELDS, where, problems)
    parse_placement(values, where, problems)
    base = ConnectPodSettings()
    if "resources" in values:
        values["resources"] = _resources(values["resources"], f"{where}.resources", base.resources, problems)
    for key in ("service_annotations", "prometheus_labels"):
        if key in values:
            values[key] = MappingProxyType({str(k): str(v) for k, v in dict(values[key]).items()})
    if "alerts" in values:
        values["alerts"] = _alerts(values["alerts"], _ALERT_FIELDS, AlertSettings(), f"{where}.alerts", problems)
    if "metrics" in values:
        values["metrics"] = str(values["metrics"]).lower() == "true"
    if values.get("service_type", "ClusterIP") not in ("ClusterIP", "LoadBalancer", "NodePort"):
        problems.append(f"{where}.serviceType: must be ClusterIP, LoadBalancer or NodePort.")
        values.pop("service_type")
    if "node_port" in values:
        values["node_port"] = _node_port(values["node_port"], f"{where}.nodePort", problems)
        if values.get("service_type") != "NodePort":
            problems.append(f"{where}.nodePort: needs serviceType: NodePort.")
    if "rest_from" in values:
        values["rest_from"] = _cidrs(values["rest_from"], f"{where}.restFrom", problems)
    return replace(base, **values)


def _cidrs(raw: Any, where: str, problems: list[str]) -> tuple[str, ...] | None:
    """A list of networks in CIDR form, each as written; a problem naming the first bad one."""
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, (list, tuple)) or not items:
        problems.append(f"{where}: give a list of networks in CIDR form, e.g. [10.0.0.0/8, 192.168.1.7/32].")
        return None
    for item in items:
        try:
            ipaddress.ip_network(str(item), strict=True)
        except ValueError as bad:
            problems.append(
                f"{where}: {item!r} is not a network in CIDR form ({bad}); e.g. 10.0.0.0/8 or 192.168.1.7/32."
            )
            return None
    return tuple(str(item) for item in items)


def kubernetes_settings(raw: Mapping[str, Any] | None) -> KubernetesSettings:
    """Parse `mm2-platform:kubernetes`: `namespace`, `renderDir`, `kafka` and `connect` defaults,
    and `clusters.<alias>` / `workerGroups.<name>` overrides of those defaults."""
    raw = dict(raw or {})
    problems: list[str] = []
    where = KUBERNETES_CONFIG
    for key in raw:
        if key not in _KUBERNETES_FIELDS:
            problems.append(f"{where}.{key}: unknown field. Known fields: {', '.join(_KUBERNETES_FIELDS)}.")
    namespace = str(raw.get("namespace", "mm2"))
    if not _DNS_LABEL.match(namespace):
        problems.append(f"{where}.namespace: {namespace!r} is not a Kubernetes namespace name (lowercase DNS label).")
    ready_timeout = str(raw.get("readyTimeout", KubernetesSettings.ready_timeout))
    if not _DURATION.match(ready_timeout):
        problems.append(
            f"{where}.readyTimeout: {ready_timeout!r} is not a duration; give minutes or seconds, e.g. 5m or 90s."
        )
    kafka_defaults = raw.get("kafka") or {}
    connect_defaults = raw.get("connect") or {}
    clusters = {
        str(alias): _kafka_pod(_merge(kafka_defaults, spec or {}), f"{where}.clusters.{alias}", problems)
        for alias, spec in (raw.get("clusters") or {}).items()
    }
    groups = {
        str(name): _connect_pod(_merge(connect_defaults, spec or {}), f"{where}.workerGroups.{name}", problems)
        for name, spec in (raw.get("workerGroups") or {}).items()
    }
    default_kafka = _kafka_pod(kafka_defaults, f"{where}.kafka", problems)
    default_connect = _connect_pod(connect_defaults, f"{where}.connect", problems)
    if problems:
        raise PlatformSettingsError(problems)
    return KubernetesSettings(
        namespace=namespace,
        clusters=MappingProxyType(clusters),
        worker_groups=MappingProxyType(groups),
        render_dir=str(raw["renderDir"]) if raw.get("renderDir") else None,
        ready_timeout=ready_timeout,
        kafka=default_kafka,
        connect=default_connect,
    )


_KUBERNETES_FIELDS = ("namespace", "renderDir", "readyTimeout", "kafka", "connect", "clusters", "workerGroups")
_DURATION = re.compile(r"^[1-9][0-9]*[smh]$")
# A label key (an optional DNS-subdomain prefix, then a name), or "" for none.
_LABEL_KEY = re.compile(r"^(([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def _unknown(where: str, key: str, known: Iterable[str]) -> str:
    if key in _REMOVED:
        return f"{where}.{key}: no longer a setting: {_REMOVED[key]}. Fix: delete the key."
    return f"{where}.{key}: unknown field. Known fields: {', '.join(known)}."


def docker_settings(raw: Mapping[str, Any] | None) -> DockerSettings:
    """Parse `mm2-platform:docker`: image, brokerHeap, connectHeap."""
    raw = dict(raw or {})
    known = ("image", "brokerHeap", "connectHeap")
    problems = [_unknown("mm2-platform:docker", key, known) for key in raw if key not in known]
    if problems:
        raise PlatformSettingsError(problems)
    base = DockerSettings()
    return DockerSettings(
        image=str(raw.get("image", base.image)),
        broker_heap=str(raw.get("brokerHeap", base.broker_heap)),
        connect_heap=str(raw.get("connectHeap", base.connect_heap)),
    )
