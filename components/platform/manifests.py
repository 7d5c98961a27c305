"""Kubernetes objects and docker container specs for the container platforms, as plain data.

Pure: no pulumi import and no I/O, so every manifest is unit-testable as a dict. The Pulumi
side (`kubernetes.py`, `docker.py`) only turns these into resources.

Secrets never appear here. Kubernetes objects reference Secrets by name (mounted as files, read
by Kafka's FileConfigProvider through `${file:...}` placeholders); docker specs carry
`SecretUpload`s whose text is rendered from Pulumi secrets by `docker.py`.

Platform settings come from the `mm2-platform` stack config namespace (`kubernetes`, `docker`),
kept apart from `mm2:` so the replication model stays platform-neutral.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from components.topology.connectors import remote_topic
from components.topology.k8s_config import (
    BROKER_DATA_DIR,
    BROKER_SECRETS_FILE,
    BROKER_TLS_DIR,
    CLIENT_PORT,
    CONTROLLER_PORT,
    EXTERNAL_PORT,
    BrokerNetwork,
    advertised_listeners,
    broker_secret_key,
    broker_secret_keys,
    container_broker_properties,
    properties_text,
    scram_credentials,
)
from components.topology.model import Cluster, Platform, Topology, WorkerGroup
from components.topology.runtime_config import KUBERNETES_REST_PORT, worker_properties

DEFAULT_KAFKA_IMAGE = "apache/kafka:4.3.1"
DEFAULT_KAFKA_UI_IMAGE = "provectuslabs/kafka-ui:v0.7.2"
# Prometheus JMX exporter java agent, fetched by an init container (override with a mirror).
DEFAULT_JMX_AGENT_VERSION = "1.0.1"
DEFAULT_JMX_AGENT_URL = (
    "https://repo1.maven.org/maven2/io/prometheus/jmx/jmx_prometheus_javaagent/"
    f"{DEFAULT_JMX_AGENT_VERSION}/jmx_prometheus_javaagent-{DEFAULT_JMX_AGENT_VERSION}.jar"
)
DEFAULT_DOWNLOADER_IMAGE = "curlimages/curl:8.10.1"
METRICS_PORT = 9404
ZONE_LABEL = "topology.kubernetes.io/zone"
PART_OF = "mm2-replication"

# Paths inside the containers.
KAFKA_HOME = "/opt/kafka"
CONFIG_DIR = "/etc/mm2/config"  # ConfigMap: properties, start script, JAAS, exporter rules
RUNTIME_DIR = "/opt/mm2/runtime"  # emptyDir: the effective properties file and logs
PODINFO_DIR = "/etc/podinfo"  # downward API: the pod's labels (zone, when the cluster copies it)
AGENT_DIR = "/opt/mm2/agent"
AGENT_JAR = f"{AGENT_DIR}/jmx_prometheus_javaagent.jar"
REST_USERS_DIR = "/etc/mm2/rest"
REST_USERS_FILE = f"{REST_USERS_DIR}/users.properties"
BASIC_AUTH_LOGIN_MODULE = "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"

SECRETS_KEY = "secrets.properties"  # the one key of every secrets-file Secret
REST_USERS_KEY = "users.properties"


# ============================================================================================
# Settings (stack config namespace `mm2-platform`)
# ============================================================================================


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


@dataclass(frozen=True)
class KafkaPodSettings:
    """Per Kafka cluster on Kubernetes. Secret names default to `<alias>-kafka-secrets|tls`."""

    image: str = DEFAULT_KAFKA_IMAGE
    storage_size: str = "100Gi"
    storage_class: str | None = None
    heap: str = "2g"
    resources: Resources = Resources("1", "4Gi", None, "4Gi")
    zone_spread: str = "preferred"  # preferred | required
    secrets_secret: str | None = None
    tls_secret: str | None = None
    external_host: str | None = None  # e.g. "us-east-kafka-{ordinal}.kafka.example.com"
    external_service_annotations: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    context: str | None = None  # kubeconfig context of the Kubernetes cluster hosting it


@dataclass(frozen=True)
class AlertSettings:
    replication_latency_ms: int = 30_000
    checkpoint_latency_ms: int = 180_000
    heartbeat_window_minutes: int = 5
    for_duration: str = "5m"


@dataclass(frozen=True)
class ConnectPodSettings:
    """Per Connect worker group on Kubernetes. Secret names default to `<group>-connect-*`."""

    image: str = DEFAULT_KAFKA_IMAGE
    heap: str = "1g"
    resources: Resources = Resources("500m", "2Gi", None, "2Gi")
    secrets_secret: str | None = None
    rest_users_secret: str | None = None
    tls_secret: str | None = None
    service_type: str = "ClusterIP"
    service_annotations: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    metrics: bool = True
    agent_url: str = DEFAULT_JMX_AGENT_URL
    downloader_image: str = DEFAULT_DOWNLOADER_IMAGE
    # Labels the Prometheus Operator selects ServiceMonitors and PrometheusRules by.
    prometheus_labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    alerts: AlertSettings = AlertSettings()
    context: str | None = None


@dataclass(frozen=True)
class KubernetesSettings:
    namespace: str = "mm2"
    clusters: Mapping[str, KafkaPodSettings] = field(default_factory=lambda: MappingProxyType({}))
    worker_groups: Mapping[str, ConnectPodSettings] = field(default_factory=lambda: MappingProxyType({}))
    # Render manifests to this directory instead of applying them (kubernetes provider option).
    render_dir: str | None = None
    # Defaults for clusters and groups without an entry of their own.
    kafka: KafkaPodSettings = KafkaPodSettings()
    connect: ConnectPodSettings = ConnectPodSettings()

    def cluster(self, alias: str) -> KafkaPodSettings:
        return self.clusters.get(alias, self.kafka)

    def group(self, name: str) -> ConnectPodSettings:
        return self.worker_groups.get(name, self.connect)


@dataclass(frozen=True)
class DockerSettings:
    image: str = DEFAULT_KAFKA_IMAGE
    kafka_ui: bool = False
    kafka_ui_image: str = DEFAULT_KAFKA_UI_IMAGE
    kafka_ui_port: int = 8080
    broker_heap: str = "512m"
    connect_heap: str = "768m"


class PlatformSettingsError(ValueError):
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
    "secretsSecret": "secrets_secret",
    "tlsSecret": "tls_secret",
    "externalHost": "external_host",
    "externalServiceAnnotations": "external_service_annotations",
    "context": "context",
}
_CONNECT_FIELDS = {
    "image": "image",
    "heap": "heap",
    "resources": "resources",
    "secretsSecret": "secrets_secret",
    "restUsersSecret": "rest_users_secret",
    "tlsSecret": "tls_secret",
    "serviceType": "service_type",
    "serviceAnnotations": "service_annotations",
    "metrics": "metrics",
    "agentUrl": "agent_url",
    "downloaderImage": "downloader_image",
    "prometheusLabels": "prometheus_labels",
    "alerts": "alerts",
    "context": "context",
}
_ALERT_FIELDS = {
    "replicationLatencyMs": "replication_latency_ms",
    "checkpointLatencyMs": "checkpoint_latency_ms",
    "heartbeatWindowMinutes": "heartbeat_window_minutes",
    "for": "for_duration",
}
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
            problems.append(f"{where}.{key}: unknown field. Known fields: {', '.join(names)}.")
            continue
        out[names[key]] = value
    return out


def _kafka_pod(raw: Mapping[str, Any], where: str, problems: list[str]) -> KafkaPodSettings:
    values = _fields(raw, _KAFKA_FIELDS, where, problems)
    base = KafkaPodSettings()
    if "resources" in values:
        values["resources"] = _resources(values["resources"], f"{where}.resources", base.resources, problems)
    if "external_service_annotations" in values:
        values["external_service_annotations"] = MappingProxyType(
            {str(k): str(v) for k, v in dict(values["external_service_annotations"]).items()}
        )
    for key in ("image", "storage_size", "storage_class", "heap", "secrets_secret", "tls_secret", "context"):
        if key in values and values[key] is not None:
            values[key] = str(values[key])
    if values.get("zone_spread", "preferred") not in ("preferred", "required"):
        problems.append(f"{where}.zoneSpread: must be preferred or required, got {values['zone_spread']!r}.")
        values.pop("zone_spread")
    host = values.get("external_host")
    if host is not None and "{ordinal}" not in str(host):
        problems.append(
            f"{where}.externalHost: {host!r} must contain {{ordinal}} (each broker needs its own address), "
            'e.g. "us-east-kafka-{ordinal}.kafka.example.com".'
        )
        values.pop("external_host")
    return replace(base, **values)


def _connect_pod(raw: Mapping[str, Any], where: str, problems: list[str]) -> ConnectPodSettings:
    values = _fields(raw, _CONNECT_FIELDS, where, problems)
    base = ConnectPodSettings()
    if "resources" in values:
        values["resources"] = _resources(values["resources"], f"{where}.resources", base.resources, problems)
    for key in ("service_annotations", "prometheus_labels"):
        if key in values:
            values[key] = MappingProxyType({str(k): str(v) for k, v in dict(values[key]).items()})
    if "alerts" in values:
        alert_raw = values["alerts"] if isinstance(values["alerts"], Mapping) else {}
        alert_values = _fields(alert_raw, _ALERT_FIELDS, f"{where}.alerts", problems)
        for key in ("replication_latency_ms", "checkpoint_latency_ms", "heartbeat_window_minutes"):
            if key in alert_values:
                try:
                    alert_values[key] = int(alert_values[key])
                except (TypeError, ValueError):
                    problems.append(f"{where}.alerts: {key} must be a whole number, got {alert_values[key]!r}.")
                    alert_values.pop(key)
        values["alerts"] = replace(AlertSettings(), **alert_values)
    if "metrics" in values:
        values["metrics"] = str(values["metrics"]).lower() == "true"
    if values.get("service_type", "ClusterIP") not in ("ClusterIP", "LoadBalancer", "NodePort"):
        problems.append(f"{where}.serviceType: must be ClusterIP, LoadBalancer or NodePort.")
        values.pop("service_type")
    return replace(base, **values)


def kubernetes_settings(raw: Mapping[str, Any] | None) -> KubernetesSettings:
    """Parse `mm2-platform:kubernetes`: `namespace`, `renderDir`, `kafka` and `connect` defaults,
    and `clusters.<alias>` / `workerGroups.<name>` overrides of those defaults."""
    raw = dict(raw or {})
    problems: list[str] = []
    where = "mm2-platform:kubernetes"
    for key in raw:
        if key not in ("namespace", "renderDir", "kafka", "connect", "clusters", "workerGroups"):
            problems.append(
                f"{where}.{key}: unknown field. Known fields: namespace, renderDir, kafka, connect, "
                "clusters, workerGroups."
            )
    namespace = str(raw.get("namespace", "mm2"))
    if not _DNS_LABEL.match(namespace):
        problems.append(f"{where}.namespace: {namespace!r} is not a Kubernetes namespace name (lowercase DNS label).")
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
        kafka=default_kafka,
        connect=default_connect,
    )


def docker_settings(raw: Mapping[str, Any] | None) -> DockerSettings:
    """Parse `mm2-platform:docker`: image, kafkaUi {enabled, image, port}, brokerHeap, connectHeap."""
    raw = dict(raw or {})
    problems: list[str] = []
    known = ("image", "kafkaUi", "brokerHeap", "connectHeap")
    for key in raw:
        if key not in known:
            problems.append(f"mm2-platform:docker.{key}: unknown field. Known fields: {', '.join(known)}.")
    ui = raw.get("kafkaUi") or {}
    if not isinstance(ui, Mapping):
        problems.append("mm2-platform:docker.kafkaUi: expected {enabled, image, port}.")
        ui = {}
    if problems:
        raise PlatformSettingsError(problems)
    base = DockerSettings()
    return DockerSettings(
        image=str(raw.get("image", base.image)),
        kafka_ui=str(ui.get("enabled", False)).lower() == "true",
        kafka_ui_image=str(ui.get("image", base.kafka_ui_image)),
        kafka_ui_port=int(ui.get("port", base.kafka_ui_port)),
        broker_heap=str(raw.get("brokerHeap", base.broker_heap)),
        connect_heap=str(raw.get("connectHeap", base.connect_heap)),
    )


# ============================================================================================
# Shared helpers
# ============================================================================================


def kraft_cluster_id(stack: str, alias: str) -> str:
    """A stable KRaft cluster id (base64url of 16 bytes) per stack and cluster, for every platform,
    so an update never re-formats storage under another id.

    Never starts with '-' (like Kafka's own Uuid.randomUuid): tools read such an id as an option.
    Ids that did not start with '-' are unchanged by that rule."""
    seed = f"mm2/{stack}/{alias}"
    for attempt in range(256):
        digest = hashlib.sha256((seed if attempt == 0 else f"{seed}#{attempt}").encode()).digest()[:16]
        text = base64.urlsafe_b64encode(digest).decode().rstrip("=")
        if not text.startswith("-"):
            return text
    raise AssertionError("unreachable: 1 in 64 digests starts with '-'")


def config_hash(data: Mapping[str, str]) -> str:
    """Pod-template annotation value: a changed ConfigMap rolls the pods that read it."""
    return hashlib.sha256(json.dumps(dict(data), sort_keys=True).encode()).hexdigest()[:16]


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _secret_reader(secrets_file: str) -> str:
    # Plain `key=value` lines; the first match wins. Used only for values the JVM cannot read
    # through a config provider (the SCRAM user added when storage is formatted).
    return f'read_secret() {{\n  sed -n "s/^$1=//p" {_shell_quote(secrets_file)} | head -n 1\n}}\n'


def broker_start_script(
    cluster: Cluster,
    cluster_id: str,
    base_config: str,
    pod_lines: list[str],
    preamble: str = "",
    secrets_file: str = BROKER_SECRETS_FILE,
    data_dir: str = BROKER_DATA_DIR,
    runtime_dir: str = RUNTIME_DIR,
) -> str:
    """bash: write the effective server.properties, format storage once, exec the broker.

    `pod_lines` are appended to the shared properties and may use shell variables set in
    `preamble` (ORDINAL, RACK). SCRAM clusters add the inter-broker user at format time.
    """
    scram = scram_credentials(cluster)
    lines = [
        "#!/bin/bash",
        "set -euo pipefail",
        preamble.rstrip("\n"),
        f"mkdir -p {runtime_dir}/logs",
        f"CONFIG={runtime_dir}/server.properties",
        f'cp {_shell_quote(base_config)} "$CONFIG"',
        "{",
        *(f'  echo "{line}"' for line in pod_lines),
        '} >> "$CONFIG"',
        "FORMAT_ARGS=()",
    ]
    if scram is not None:
        mechanism, user, key = scram
        lines += [
            _secret_reader(secrets_file).rstrip("\n"),
            f'PASSWORD="$(read_secret {_shell_quote(key.replace(".", chr(92) + "."))})"',
            f'[ -n "$PASSWORD" ] || {{ echo "secret key {key} missing in {secrets_file}" >&2; exit 1; }}',
            f'FORMAT_ARGS+=(--add-scram "{mechanism.value}=[name={user},password=$PASSWORD]")',
        ]
    lines += [
        f"if [ ! -f {data_dir}/log/meta.properties ]; then",
        f"  {KAFKA_HOME}/bin/kafka-storage.sh format --ignore-formatted --cluster-id {cluster_id} "
        '--config "$CONFIG" "${FORMAT_ARGS[@]}"',
        "fi",
        f'exec {KAFKA_HOME}/bin/kafka-server-start.sh "$CONFIG"',
    ]
    return "\n".join(line for line in lines if line) + "\n"


def group_clusters(topology: Topology, group: WorkerGroup) -> tuple[Cluster, ...]:
    """The clusters a worker group talks to: its storage cluster and every flow end it runs."""
    aliases = {group.cluster}
    for flow in topology.enabled_flows():
        if flow.worker_group == group.name:
            aliases.update((flow.source, flow.target))
    return tuple(topology.clusters[a] for a in sorted(aliases))


def group_secret_keys(topology: Topology, group: WorkerGroup) -> tuple[str, ...]:
    """Every key the group's secrets file must hold (placeholders in worker and connector configs)."""
    keys = {ref.key for cluster in group_clusters(topology, group) for ref in cluster.security.secret_refs()}
    return tuple(sorted(keys))


def rest_password_key(group: WorkerGroup) -> str | None:
    return group.rest_password.key if group.rest_auth and group.rest_password else None


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


def _labels(name: str, instance: str, component: str, image: str) -> dict[str, str]:
    version = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else "latest"
    return {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/instance": instance,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": PART_OF,
        "app.kubernetes.io/version": version,
    }


def _selector(name: str, instance: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/instance": instance}


def _meta(name: str, namespace: str, labels: Mapping[str, str], **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": dict(labels), **extra}


def _spread(selector: Mapping[str, str], required: bool) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": 1,
            "topologyKey": ZONE_LABEL,
            "whenUnsatisfiable": "DoNotSchedule" if required else "ScheduleAnyway",
            "labelSelector": {"matchLabels": dict(selector)},
        }
    ]


# ============================================================================================
# Kafka on Kubernetes
# ============================================================================================


@dataclass(frozen=True)
class KafkaNames:
    alias: str

    @property
    def statefulset(self) -> str:
        return f"{self.alias}-kafka"

    @property
    def headless(self) -> str:
        return f"{self.alias}-kafka-brokers"

    @property
    def bootstrap(self) -> str:
        return f"{self.alias}-kafka-bootstrap"

    @property
    def config(self) -> str:
        return f"{self.alias}-kafka-config"

    @property
    def external_bootstrap(self) -> str:
        return f"{self.alias}-kafka-external-bootstrap"

    def pod(self, ordinal: int | str) -> str:
        return f"{self.alias}-kafka-{ordinal}"

    def external(self, ordinal: int) -> str:
        return f"{self.alias}-kafka-{ordinal}-external"


def kafka_secret_names(cluster: Cluster, pod: KafkaPodSettings) -> tuple[str, str]:
    """(secrets-file Secret, TLS Secret) names of a Kubernetes cluster's brokers."""
    return (pod.secrets_secret or f"{cluster.alias}-kafka-secrets", pod.tls_secret or f"{cluster.alias}-kafka-tls")


def kubernetes_broker_network(cluster: Cluster, namespace: str, pod: KafkaPodSettings) -> BrokerNetwork:
    names = KafkaNames(cluster.alias)
    host = f"{names.pod('{ordinal}')}.{names.headless}.{namespace}.svc"
    return BrokerNetwork(voter_host=host, advertised_host=host, external_host=pod.external_host)


@dataclass(frozen=True)
class KafkaObjects:
    config_map: dict[str, Any]
    headless_service: dict[str, Any]
    bootstrap_service: dict[str, Any]
    stateful_set: dict[str, Any]
    pod_disruption_budget: dict[str, Any]
    network_policy: dict[str, Any]
    external_services: tuple[dict[str, Any], ...] = ()

    def all(self) -> tuple[dict[str, Any], ...]:
        return (
            self.config_map,
            self.headless_service,
            self.bootstrap_service,
            self.stateful_set,
            self.pod_disruption_budget,
            self.network_policy,
            *self.external_services,
        )


def kafka_objects(cluster: Cluster, settings: KubernetesSettings, cluster_id: str) -> KafkaObjects:
    """Every Kubernetes object of one KRaft cluster (combined broker+controller StatefulSet)."""
    if cluster.platform is not Platform.KUBERNETES:
        raise ValueError(f"cluster {cluster.alias} is {cluster.platform.value}, not kubernetes")
    ns = settings.namespace
    pod = settings.cluster(cluster.alias)
    names = KafkaNames(cluster.alias)
    network = kubernetes_broker_network(cluster, ns, pod)
    labels = {**_labels("kafka", cluster.alias, "broker", pod.image)}
    if cluster.datacenter:
        labels["mm2.io/datacenter"] = cluster.datacenter
    selector = _selector("kafka", cluster.alias)
    secrets_secret, tls_secret = kafka_secret_names(cluster, pod)
    needs_secrets = bool(broker_secret_keys(cluster))
    uses_tls = cluster.security.protocol.uses_tls

    base = container_broker_properties(cluster, network)
    preamble = (
        'ORDINAL="${HOSTNAME##*-}"\n'
        'RACK=""\n'
        f"if [ -f {PODINFO_DIR}/labels ]; then\n"
        f'  RACK="$(sed -n \'s|^{ZONE_LABEL}="\\(.*\\)"$|\\1|p\' {PODINFO_DIR}/labels)"\n'
        "fi\n"
        # Without the zone label on the pod, every broker shares one rack: no worse than no rack.
        f'RACK="${{RACK:-{cluster.datacenter or cluster.alias}}}"\n'
    )
    script = broker_start_script(
        cluster,
        cluster_id,
        f"{CONFIG_DIR}/server.properties",
        [
            "node.id=${ORDINAL}",
            f"advertised.listeners={advertised_listeners(network, '${ORDINAL}')}",
            "broker.rack=${RACK}",
        ],
        preamble,
    )
    data = {"server.properties": properties_text(base), "start.sh": script}
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(names.config, ns, labels),
        "data": data,
    }

    client_ports = [
        {"name": "client", "port": CLIENT_PORT, "targetPort": CLIENT_PORT},
        {"name": "controller", "port": CONTROLLER_PORT, "targetPort": CONTROLLER_PORT},
    ]
    headless = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(names.headless, ns, labels),
        "spec": {
            "clusterIP": "None",
            # KRaft voters must resolve each other before any of them is ready.
            "publishNotReadyAddresses": True,
            "selector": dict(selector),
            "ports": client_ports,
        },
    }
    bootstrap = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(names.bootstrap, ns, labels),
        "spec": {
            "type": "ClusterIP",
            "selector": dict(selector),
            "ports": [{"name": "client", "port": CLIENT_PORT, "targetPort": CLIENT_PORT}],
        },
    }

    mounts = [
        {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
        {"name": "data", "mountPath": BROKER_DATA_DIR},
        {"name": "runtime", "mountPath": RUNTIME_DIR},
        {"name": "podinfo", "mountPath": PODINFO_DIR, "readOnly": True},
    ]
    volumes: list[dict[str, Any]] = [
        {"name": "config", "configMap": {"name": names.config, "defaultMode": 0o555}},
        {"name": "runtime", "emptyDir": {}},
        {
            "name": "podinfo",
            "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]},
        },
    ]
    if needs_secrets:
        mounts.append({"name": "secrets", "mountPath": posixpath.dirname(BROKER_SECRETS_FILE), "readOnly": True})
        volumes.append(
            {
                "name": "secrets",
                "secret": {
                    "secretName": secrets_secret,
                    "items": [{"key": SECRETS_KEY, "path": posixpath.basename(BROKER_SECRETS_FILE)}],
                    "defaultMode": 0o400,
                },
            }
        )
    if uses_tls:
        mounts.append({"name": "tls", "mountPath": BROKER_TLS_DIR, "readOnly": True})
        volumes.append(
            {
                "name": "tls",
                "secret": {
                    "secretName": tls_secret,
                    "items": [
                        {"key": "keystore.p12", "path": "keystore.p12"},
                        {"key": "truststore.p12", "path": "truststore.p12"},
                    ],
                    "defaultMode": 0o400,
                },
            }
        )
    container_ports = [
        {"name": "client", "containerPort": CLIENT_PORT},
        {"name": "controller", "containerPort": CONTROLLER_PORT},
    ]
    if pod.external_host:
        container_ports.append({"name": "external", "containerPort": EXTERNAL_PORT})
    container = {
        "name": "kafka",
        "image": pod.image,
        "command": ["/bin/bash", f"{CONFIG_DIR}/start.sh"],
        "env": [
            {"name": "KAFKA_HEAP_OPTS", "value": f"-Xms{pod.heap} -Xmx{pod.heap}"},
            {"name": "LOG_DIR", "value": f"{RUNTIME_DIR}/logs"},
        ],
        "ports": container_ports,
        "resources": pod.resources.spec(),
        "volumeMounts": mounts,
        # The client listener accepts connections once the broker has caught up with the
        # metadata log; the controller port answers as soon as the quorum member is up.
        "readinessProbe": {
            "tcpSocket": {"port": CLIENT_PORT},
            "initialDelaySeconds": 10,
            "periodSeconds": 10,
            "failureThreshold": 3,
        },
        "livenessProbe": {
            "tcpSocket": {"port": CONTROLLER_PORT},
            "periodSeconds": 20,
            "timeoutSeconds": 5,
            "failureThreshold": 6,
        },
        "startupProbe": {"tcpSocket": {"port": CONTROLLER_PORT}, "periodSeconds": 5, "failureThreshold": 60},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }
    volume_claim = {
        "metadata": {"name": "data", "labels": dict(selector)},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": pod.storage_size}},
            **({"storageClassName": pod.storage_class} if pod.storage_class else {}),
        },
    }
    stateful_set = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(names.statefulset, ns, labels),
        "spec": {
            "serviceName": names.headless,
            "replicas": cluster.brokers,
            # All voters must start together to elect a leader; ordered start would deadlock.
            "podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "RollingUpdate"},
            "selector": {"matchLabels": dict(selector)},
            "template": {
                "metadata": {"labels": dict(labels), "annotations": {"mm2.io/config-hash": config_hash(data)}},
                "spec": {
                    "terminationGracePeriodSeconds": 120,
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000},
                    "affinity": {
                        "podAntiAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "topologyKey": "kubernetes.io/hostname",
                                    "labelSelector": {"matchLabels": dict(selector)},
                                }
                            ]
                        }
                    },
                    "topologySpreadConstraints": _spread(selector, pod.zone_spread == "required"),
                    "containers": [container],
                    "volumes": volumes,
                },
            },
            "volumeClaimTemplates": [volume_claim],
        },
    }
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _meta(names.statefulset, ns, labels),
        # One broker at a time: with replication factor 3 and min.insync.replicas 2, a second
        # voluntary disruption would stop writes to partitions whose replicas it holds.
        "spec": {"minAvailable": max(cluster.brokers - 1, 0), "selector": {"matchLabels": dict(selector)}},
    }
    client_rule_ports = [{"port": CLIENT_PORT, "protocol": "TCP"}]
    if pod.external_host:
        client_rule_ports.append({"port": EXTERNAL_PORT, "protocol": "TCP"})
    network_policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(names.statefulset, ns, labels),
        "spec": {
            "podSelector": {"matchLabels": dict(selector)},
            "policyTypes": ["Ingress"],
            "ingress": [
                {"ports": client_rule_ports},
                # The PLAINTEXT controller listener is for the quorum only.
                {
                    "from": [{"podSelector": {"matchLabels": dict(selector)}}],
                    "ports": [{"port": CONTROLLER_PORT, "protocol": "TCP"}],
                },
            ],
        },
    }
    externals: list[dict[str, Any]] = []
    if pod.external_host:

        def annotations(ordinal: str) -> dict[str, str]:
            # `{ordinal}` in a value (e.g. an external-dns hostname) names each broker's address.
            return {k: v.replace("{ordinal}", ordinal) for k, v in pod.external_service_annotations.items()}

        externals.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": _meta(names.external_bootstrap, ns, labels, annotations=annotations("bootstrap")),
                "spec": {
                    "type": "LoadBalancer",
                    "selector": dict(selector),
                    "ports": [{"name": "external", "port": EXTERNAL_PORT, "targetPort": EXTERNAL_PORT}],
                },
            }
        )
        for i in range(cluster.brokers):
            externals.append(
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": _meta(names.external(i), ns, labels, annotations=annotations(str(i))),
                    "spec": {
                        "type": "LoadBalancer",
                        "selector": {**selector, "statefulset.kubernetes.io/pod-name": names.pod(i)},
                        "ports": [{"name": "external", "port": EXTERNAL_PORT, "targetPort": EXTERNAL_PORT}],
                    },
                }
            )
    return KafkaObjects(
        config_map=config_map,
        headless_service=headless,
        bootstrap_service=bootstrap,
        stateful_set=stateful_set,
        pod_disruption_budget=pdb,
        network_policy=network_policy,
        external_services=tuple(externals),
    )


# ============================================================================================
# Connect on Kubernetes
# ============================================================================================


@dataclass(frozen=True)
class ConnectNames:
    group: str

    @property
    def deployment(self) -> str:
        return f"{self.group}-connect"

    @property
    def service(self) -> str:
        # Strimzi's name, and what worker_rest_urls() points at.
        return f"{self.group}-connect-api"

    @property
    def config(self) -> str:
        return f"{self.group}-connect-config"

    @property
    def rule(self) -> str:
        return f"{self.group}-connect-mm2-alerts"


def connect_secret_names(group: WorkerGroup, pod: ConnectPodSettings) -> tuple[str, str, str]:
    """(secrets-file Secret, REST users Secret, client TLS Secret) names of a worker group."""
    return (
        pod.secrets_secret or f"{group.name}-connect-secrets",
        pod.rest_users_secret or f"{group.name}-connect-rest-users",
        pod.tls_secret or f"{group.name}-connect-tls",
    )


def connect_url(group: WorkerGroup, namespace: str) -> str:
    """Where `pulumi up` sends connectors: the group's `url` (ingress or load balancer) when
    given, else the in-cluster Service, reachable only from inside the Kubernetes cluster."""
    if group.url:
        return group.url.rstrip("/")
    return f"http://{ConnectNames(group.name).service}.{namespace}.svc:{KUBERNETES_REST_PORT}"


def jmx_exporter_config() -> dict[str, Any]:
    """Prometheus JMX exporter rules for MM2 and Connect (MBean names: mm2-internals §4).

    Only matching beans are exported. The MirrorSourceConnector pattern accepts beans with and
    without the `source` tag (Kafka versions differ); label `source` is empty when it is absent.
    """
    return {
        "lowercaseOutputName": True,
        "lowercaseOutputLabelNames": True,
        "rules": [
            {
                "pattern": r"kafka.connect.mirror<type=MirrorSourceConnector, (?:source=([^,]+), )?target=([^,]+), "
                r"topic=([^,]+), partition=([0-9]+)><>([a-z-]+)",
                "name": "kafka_connect_mirror_source_connector_$5",
                "labels": {"source": "$1", "target": "$2", "topic": "$3", "partition": "$4"},
                "type": "GAUGE",
            },
            {
                "pattern": r"kafka.connect.mirror<type=MirrorCheckpointConnector, source=([^,]+), target=([^,]+), "
                r"group=([^,]+), topic=([^,]+), partition=([0-9]+)><>([a-z-]+)",
                "name": "kafka_connect_mirror_checkpoint_connector_$6",
                "labels": {"source": "$1", "target": "$2", "group": "$3", "topic": "$4", "partition": "$5"},
                "type": "GAUGE",
            },
            {
                "pattern": r"kafka.connect<type=connect-worker-metrics, connector=\"?([^\"]+)\"?><>([a-z-]+)",
                "name": "kafka_connect_worker_$2",
                "labels": {"connector": "$1"},
                "type": "GAUGE",
            },
            {
                "pattern": r"kafka.connect<type=connect-worker-metrics><>([a-z-]+)",
                "name": "kafka_connect_worker_$1",
                "type": "GAUGE",
            },
            {
                "pattern": r"kafka.connect<type=connect-worker-rebalance-metrics><>([a-z-]+)",
                "name": "kafka_connect_worker_rebalance_$1",
                "type": "GAUGE",
            },
        ],
    }


def alert_rules(group: WorkerGroup, topology: Topology, namespace: str, alerts: AlertSettings) -> list[dict[str, Any]]:
    """PrometheusRule groups: replication latency, checkpoint latency, heartbeat staleness, failed tasks."""
    sel = f'namespace="{namespace}",service="{ConnectNames(group.name).service}"'
    heartbeat = r"(.+\\.)?heartbeats"
    base_labels = {"mm2_worker_group": group.name}
    rules: list[dict[str, Any]] = [
        {
            "alert": "MM2ReplicationLatencyHigh",
            "expr": f"max by (source, target, topic) (kafka_connect_mirror_source_connector_replication_latency_ms_max"
            f'{{{sel},topic!~"{heartbeat}"}}) > {alerts.replication_latency_ms}',
            "for": alerts.for_duration,
            "labels": {**base_labels, "severity": "warning"},
            "annotations": {
                "summary": "MM2 replication latency above {alerts} ms".replace(
                    "{alerts}", str(alerts.replication_latency_ms)
                ),
                "description": "Records of {{ $labels.topic }} reach {{ $labels.target }} {{ $value }} ms after they "
                "were produced (measured from the record timestamp; a backlog or producer clock skew also raises it).",
            },
        },
        {
            "alert": "MM2CheckpointLatencyHigh",
            "expr": "max by (source, target, group) "
            "(kafka_connect_mirror_checkpoint_connector_checkpoint_latency_ms_max"
            f"{{{sel}}}) > {alerts.checkpoint_latency_ms}",
            "for": alerts.for_duration,
            "labels": {**base_labels, "severity": "warning"},
            "annotations": {
                "summary": "MM2 consumer-group checkpoints are late",
                "description": "Offsets of group {{ $labels.group }} are translated to {{ $labels.target }} "
                "{{ $value }} ms after they were read; failover would rewind further than expected.",
            },
        },
        {
            "alert": "MM2ConnectorTasksFailed",
            "expr": "sum by (connector) (kafka_connect_worker_connector_failed_task_count"
            f'{{{sel},connector=~"mm2-.*"}}) > 0',
            "for": "2m",
            "labels": {**base_labels, "severity": "critical"},
            "annotations": {
                "summary": "MM2 connector {{ $labels.connector }} has failed tasks",
                "description": "{{ $value }} task(s) FAILED; see GET /connectors/{{ $labels.connector }}/status "
                "and restart with POST /connectors/{{ $labels.connector }}/restart?includeTasks=true&onlyFailed=true.",
            },
        },
    ]
    window = f"{alerts.heartbeat_window_minutes}m"
    for target, topic in heartbeat_topics(topology, group):
        rules.append(
            {
                "alert": "MM2HeartbeatStale",
                # `or vector(0)`: a heartbeat topic that never arrived is as stale as one that stopped.
                "expr": f"(sum(increase(kafka_connect_mirror_source_connector_record_count"
                f'{{{sel},target="{target}",topic="{topic}"}}[{window}])) or vector(0)) < 1',
                "for": "2m",
                "labels": {**base_labels, "severity": "critical", "target": target, "topic": topic},
                "annotations": {
                    "summary": f"No MM2 heartbeats in {topic} on {target} for {window}",
                    "description": "The replication path into the target is stalled or broken (heartbeats are "
                    "emitted every second and always replicated).",
                },
            }
        )
    return [{"name": f"mm2-{group.name}", "rules": rules}]


@dataclass(frozen=True)
class ConnectObjects:
    config_map: dict[str, Any]
    deployment: dict[str, Any]
    service: dict[str, Any]
    pod_disruption_budget: dict[str, Any]
    service_monitor: dict[str, Any] | None
    prometheus_rule: dict[str, Any] | None
    url: str

    def all(self) -> tuple[dict[str, Any], ...]:
        optional = tuple(o for o in (self.service_monitor, self.prometheus_rule) if o is not None)
        return (self.config_map, self.deployment, self.service, self.pod_disruption_budget, *optional)


def _client_tls_items(topology: Topology, group: WorkerGroup) -> list[tuple[str, str]]:
    """(Secret key, mount path) of every client truststore/keystore the group's configs name."""
    items: dict[str, str] = {}
    for cluster in group_clusters(topology, group):
        sec = cluster.security
        if not sec.protocol.uses_tls:
            continue
        for kind, location in (("truststore", sec.truststore_location), ("keystore", sec.keystore_location)):
            if not location:
                continue
            key = f"{cluster.alias}.{kind}.p12"
            if location in items.values() and items.get(key) != location:
                other = next(k for k, v in items.items() if v == location)
                raise ValueError(
                    f"worker group {group.name}: {key} and {other} are both mounted at {location}. "
                    f"Fix: give mm2:clusters.{cluster.alias}.security.{kind}Location its own path, "
                    f"e.g. /etc/mm2/tls/{cluster.alias}/{kind}.p12."
                )
            items[key] = location
    return sorted(items.items())


def connect_objects(group: WorkerGroup, topology: Topology, settings: KubernetesSettings) -> ConnectObjects:
    """Every Kubernetes object of one Connect worker group running MM2."""
    if group.platform is not Platform.KUBERNETES:
        raise ValueError(f"worker group {group.name} is {group.platform.value}, not kubernetes")
    ns = settings.namespace
    pod = settings.group(group.name)
    names = ConnectNames(group.name)
    labels = _labels("kafka-connect", group.name, "mm2-worker", pod.image)
    selector = _selector("kafka-connect", group.name)
    secrets_secret, users_secret, tls_secret = connect_secret_names(group, pod)

    worker = worker_properties(topology, group, 0)
    jaas_path = f"{CONFIG_DIR}/rest-jaas.conf"
    data: dict[str, str] = {"connect-distributed.properties": properties_text(worker)}
    java_opts: list[str] = []
    if group.rest_auth:
        data["rest-jaas.conf"] = (
            f'KafkaConnect {{\n  {BASIC_AUTH_LOGIN_MODULE} required\n  file="{REST_USERS_FILE}";\n}};\n'
        )
        java_opts.append(f"-Djava.security.auth.login.config={jaas_path}")
    if pod.metrics:
        data["jmx-exporter.yaml"] = json.dumps(jmx_exporter_config(), indent=2, sort_keys=True) + "\n"
        java_opts.insert(0, f"-javaagent:{AGENT_JAR}={METRICS_PORT}:{CONFIG_DIR}/jmx-exporter.yaml")
    data["start.sh"] = (
        "#!/bin/bash\nset -euo pipefail\n"
        f"mkdir -p {RUNTIME_DIR}/logs\n"
        f"CONFIG={RUNTIME_DIR}/connect-distributed.properties\n"
        f'cp {CONFIG_DIR}/connect-distributed.properties "$CONFIG"\n'
        # Workers forward requests to the leader at the address it advertises: the pod IP.
        f'{{ echo "rest.advertised.host.name=${{POD_IP}}"; '
        f'echo "rest.advertised.port={KUBERNETES_REST_PORT}"; }} >> "$CONFIG"\n'
        f'exec {KAFKA_HOME}/bin/connect-distributed.sh "$CONFIG"\n'
    )
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(names.config, ns, labels), "data": data}

    mounts: list[dict[str, Any]] = [
        {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
        {"name": "runtime", "mountPath": RUNTIME_DIR},
    ]
    volumes: list[dict[str, Any]] = [
        {"name": "config", "configMap": {"name": names.config, "defaultMode": 0o555}},
        {"name": "runtime", "emptyDir": {}},
    ]
    if group_secret_keys(topology, group):
        mounts.append({"name": "secrets", "mountPath": posixpath.dirname(group.secrets_file), "readOnly": True})
        volumes.append(
            {
                "name": "secrets",
                "secret": {
                    "secretName": secrets_secret,
                    "items": [{"key": SECRETS_KEY, "path": posixpath.basename(group.secrets_file)}],
                    "defaultMode": 0o400,
                },
            }
        )
    if group.rest_auth:
        mounts.append({"name": "rest-users", "mountPath": REST_USERS_DIR, "readOnly": True})
        volumes.append(
            {
                "name": "rest-users",
                "secret": {
                    "secretName": users_secret,
                    "items": [{"key": REST_USERS_KEY, "path": posixpath.basename(REST_USERS_FILE)}],
                    "defaultMode": 0o400,
                },
            }
        )
    tls_items = _client_tls_items(topology, group)
    if tls_items:
        volumes.append({"name": "client-tls", "secret": {"secretName": tls_secret, "defaultMode": 0o400}})
        mounts.extend(
            {"name": "client-tls", "mountPath": path, "subPath": key, "readOnly": True} for key, path in tls_items
        )
    init_containers: list[dict[str, Any]] = []
    if pod.metrics:
        volumes.append({"name": "agent", "emptyDir": {}})
        mounts.append({"name": "agent", "mountPath": AGENT_DIR, "readOnly": True})
        init_containers.append(
            {
                "name": "jmx-agent",
                "image": pod.downloader_image,
                "command": ["curl", "-fsSL", "--retry", "5", "-o", AGENT_JAR, pod.agent_url],
                "volumeMounts": [{"name": "agent", "mountPath": AGENT_DIR}],
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            }
        )
    ports = [{"name": "rest", "containerPort": KUBERNETES_REST_PORT}]
    if pod.metrics:
        ports.append({"name": "metrics", "containerPort": METRICS_PORT})
    env = [
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "KAFKA_HEAP_OPTS", "value": f"-Xms{pod.heap} -Xmx{pod.heap}"},
        {"name": "LOG_DIR", "value": f"{RUNTIME_DIR}/logs"},
    ]
    if java_opts:
        env.append({"name": "KAFKA_OPTS", "value": " ".join(java_opts)})
    container = {
        "name": "connect",
        "image": pod.image,
        "command": ["/bin/bash", f"{CONFIG_DIR}/start.sh"],
        "env": env,
        "ports": ports,
        "resources": pod.resources.spec(),
        "volumeMounts": mounts,
        # TCP, not HTTP: with basic auth every REST path answers 401 to an anonymous probe,
        # and credentials in a probe header would sit in the pod spec in plain text.
        "readinessProbe": {"tcpSocket": {"port": KUBERNETES_REST_PORT}, "periodSeconds": 10, "failureThreshold": 3},
        "livenessProbe": {
            "tcpSocket": {"port": KUBERNETES_REST_PORT},
            "periodSeconds": 20,
            "timeoutSeconds": 5,
            "failureThreshold": 6,
        },
        "startupProbe": {"tcpSocket": {"port": KUBERNETES_REST_PORT}, "periodSeconds": 5, "failureThreshold": 60},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }
    pod_spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 60,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000},
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": dict(selector)},
                        },
                    }
                ]
            }
        },
        "topologySpreadConstraints": _spread(selector, required=False),
        "containers": [container],
        "volumes": volumes,
    }
    if init_containers:
        pod_spec["initContainers"] = init_containers
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(names.deployment, ns, labels),
        "spec": {
            "replicas": group.workers,
            "selector": {"matchLabels": dict(selector)},
            # One worker at a time: each departure triggers a rebalance of every MM2 task.
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "template": {
                "metadata": {"labels": dict(labels), "annotations": {"mm2.io/config-hash": config_hash(data)}},
                "spec": pod_spec,
            },
        },
    }
    service_ports = [{"name": "rest", "port": KUBERNETES_REST_PORT, "targetPort": KUBERNETES_REST_PORT}]
    if pod.metrics:
        service_ports.append({"name": "metrics", "port": METRICS_PORT, "targetPort": METRICS_PORT})
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(names.service, ns, labels, annotations=dict(pod.service_annotations)),
        "spec": {"type": pod.service_type, "selector": dict(selector), "ports": service_ports},
    }
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _meta(names.deployment, ns, labels),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": dict(selector)}},
    }
    monitor_labels = {**labels, **pod.prometheus_labels}
    service_monitor = None
    prometheus_rule = None
    if pod.metrics:
        service_monitor = {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": _meta(names.deployment, ns, monitor_labels),
            "spec": {
                "selector": {"matchLabels": dict(selector)},
                "endpoints": [{"port": "metrics", "interval": "30s"}],
            },
        }
        prometheus_rule = {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PrometheusRule",
            "metadata": _meta(names.rule, ns, monitor_labels),
            "spec": {"groups": alert_rules(group, topology, ns, pod.alerts)},
        }
    return ConnectObjects(
        config_map=config_map,
        deployment=deployment,
        service=service,
        pod_disruption_budget=pdb,
        service_monitor=service_monitor,
        prometheus_rule=prometheus_rule,
        url=connect_url(group, ns),
    )


# ============================================================================================
# Secret files (rendered from Pulumi secrets by the Pulumi side; the text is secret)
# ============================================================================================


def secrets_file_text(keys: tuple[str, ...], values: Mapping[str, str]) -> str:
    """`key=value` lines for a FileConfigProvider secrets file; KeyError names a missing key."""
    missing = [k for k in keys if k not in values]
    if missing:
        raise KeyError(
            "missing secret(s) "
            + ", ".join(missing)
            + ". Fix: "
            + "; ".join(f"pulumi config set --secret --path 'mm2:secrets[\"{k}\"]' <value>" for k in missing)
        )
    return "".join(f"{k}={values[k]}\n" for k in keys)


def _secrets_file_for(keys: tuple[str, ...], values: Mapping[str, str]) -> str:
    return secrets_file_text(keys, values)


def rest_users_text(group: WorkerGroup, values: Mapping[str, str]) -> str:
    """PropertyFileLoginModule's users file: `<user>: <password>`."""
    key = rest_password_key(group)
    if key is None:
        return ""
    if key not in values:
        raise KeyError(f"missing secret {key}. Fix: pulumi config set --secret --path 'mm2:secrets[\"{key}\"]' <value>")
    return f"{group.rest_username or 'mm2-admin'}: {values[key]}\n"


# ============================================================================================
# Docker (single host): container specs
# ============================================================================================


@dataclass(frozen=True)
class SecretUpload:
    """A file whose text is rendered from the stack's secrets (docker.py marks it secret)."""

    path: str
    render: Callable[[Mapping[str, str]], str]
    keys: tuple[str, ...]


@dataclass(frozen=True)
class ContainerSpec:
    name: str  # container name on the host
    image: str
    command: tuple[str, ...]
    env: Mapping[str, str]
    uploads: Mapping[str, str]  # path -> plain text (no secrets)
    secret_uploads: tuple[SecretUpload, ...] = ()
    ports: tuple[tuple[int, int], ...] = ()  # (container port, host port on 127.0.0.1)
    network_aliases: tuple[str, ...] = ()
    host_network: bool = False
    volume: str | None = None  # named volume for data
    volume_path: str | None = None
    healthcheck: tuple[str, ...] = ()


def docker_prefix(stack: str) -> str:
    return f"mm2-{stack}"


def docker_broker_specs(cluster: Cluster, stack: str, settings: DockerSettings) -> tuple[ContainerSpec, ...]:
    """One container per broker: CLIENT published on 127.0.0.1:port+2i, INTERNAL and
    CONTROLLER on the private network only."""
    if cluster.platform is not Platform.DOCKER or cluster.port is None:
        raise ValueError(f"cluster {cluster.alias} is not a docker cluster with a port")
    if cluster.security.protocol.uses_tls:
        raise ValueError(
            f"mm2:clusters.{cluster.alias}.security.protocol: the docker platform does not provision TLS "
            f"certificates, so {cluster.security.protocol.value} cannot run there. Fix: use SASL_PLAINTEXT "
            "(as seed 001 does) or PLAINTEXT on docker, or platform kubernetes for TLS."
        )
    prefix = docker_prefix(stack)
    host = f"{prefix}-{cluster.alias}-{{ordinal}}"
    cluster_id = kraft_cluster_id(stack, cluster.alias)
    keys = broker_secret_keys(cluster)
    specs = []
    for i in range(cluster.brokers):
        network = BrokerNetwork(
            voter_host=host, advertised_host="127.0.0.1", advertised_port=cluster.port + 2 * i, internal_host=host
        )
        props = container_broker_properties(cluster, network)
        pod_lines = [f"node.id={i}", f"advertised.listeners={advertised_listeners(network, str(i))}"]
        if cluster.datacenter:
            pod_lines.append(f"broker.rack={cluster.datacenter}")
        script = broker_start_script(cluster, cluster_id, f"{CONFIG_DIR}/server.properties", pod_lines)
        secret_uploads: tuple[SecretUpload, ...] = ()
        if keys:
            secret_uploads = (SecretUpload(BROKER_SECRETS_FILE, functools.partial(_secrets_file_for, keys), keys),)
        name = host.format(ordinal=i)
        specs.append(
            ContainerSpec(
                name=name,
                image=settings.image,
                command=("/bin/bash", f"{CONFIG_DIR}/start.sh"),
                env={"KAFKA_HEAP_OPTS": f"-Xms{settings.broker_heap} -Xmx{settings.broker_heap}"},
                uploads={f"{CONFIG_DIR}/server.properties": properties_text(props), f"{CONFIG_DIR}/start.sh": script},
                secret_uploads=secret_uploads,
                ports=((CLIENT_PORT, cluster.port + 2 * i),),
                network_aliases=(name,),
                volume=f"{name}-data",
                volume_path=BROKER_DATA_DIR,
                healthcheck=("CMD-SHELL", f"bash -c 'printf \"\" > /dev/tcp/127.0.0.1/{CLIENT_PORT}'"),
            )
        )
    return tuple(specs)


def docker_connect_specs(
    group: WorkerGroup, topology: Topology, stack: str, settings: DockerSettings
) -> tuple[ContainerSpec, ...]:
    """One container per worker on the host network: the model addresses every broker as
    127.0.0.1:<published port> and every worker as 127.0.0.1:restPort+i, and connector configs
    carry those addresses, so workers must share the host's loopback."""
    if group.platform is not Platform.DOCKER:
        raise ValueError(f"worker group {group.name} is {group.platform.value}, not docker")
    prefix = docker_prefix(stack)
    keys = group_secret_keys(topology, group)
    specs = []
    for i in range(group.workers):
        worker = worker_properties(topology, group, i)
        uploads = {f"{CONFIG_DIR}/connect-distributed.properties": properties_text(worker)}
        secret_uploads: list[SecretUpload] = []
        if keys:
            secret_uploads.append(SecretUpload(group.secrets_file, functools.partial(_secrets_file_for, keys), keys))
        env = {"KAFKA_HEAP_OPTS": f"-Xms{settings.connect_heap} -Xmx{settings.connect_heap}"}
        if group.rest_auth:
            uploads[f"{CONFIG_DIR}/rest-jaas.conf"] = (
                f'KafkaConnect {{\n  {BASIC_AUTH_LOGIN_MODULE} required\n  file="{REST_USERS_FILE}";\n}};\n'
            )
            key = rest_password_key(group)
            secret_uploads.append(
                SecretUpload(REST_USERS_FILE, functools.partial(rest_users_text, group), (key,) if key else ())
            )
            env["KAFKA_OPTS"] = f"-Djava.security.auth.login.config={CONFIG_DIR}/rest-jaas.conf"
        port = (group.rest_port or 0) + i
        specs.append(
            ContainerSpec(
                name=f"{prefix}-connect-{group.name}-{i}",
                image=settings.image,
                command=(f"{KAFKA_HOME}/bin/connect-distributed.sh", f"{CONFIG_DIR}/connect-distributed.properties"),
                env=env,
                uploads=uploads,
                secret_uploads=tuple(secret_uploads),
                host_network=True,
                healthcheck=("CMD-SHELL", f"bash -c 'printf \"\" > /dev/tcp/127.0.0.1/{port}'"),
            )
        )
    return tuple(specs)


def docker_kafka_ui_spec(topology: Topology, stack: str, settings: DockerSettings) -> ContainerSpec:
    """Kafka UI (seed 001) wired to every docker cluster and Connect group, on the host network
    for the same reason as the workers. Credentials come from a secret config file, not env."""
    clusters = [c for c in topology.clusters.values() if c.platform is Platform.DOCKER]
    groups = [g for g in topology.worker_groups.values() if g.platform is Platform.DOCKER]
    keys = sorted(
        {ref.key for c in clusters for ref in c.security.secret_refs()}
        | {k for g in groups if (k := rest_password_key(g))}
    )
    path = "/etc/kafkaui/mm2.yaml"

    def render(values: Mapping[str, str]) -> str:
        from components.topology.connectors import bootstrap_servers, security_properties

        missing = [k for k in keys if k not in values]
        if missing:
            raise KeyError("missing secret(s) for Kafka UI: " + ", ".join(missing))
        entries = []
        for cluster in clusters:
            props = security_properties(cluster.security, "/nonexistent")
            # Kafka UI has no config provider: resolve placeholders to the values themselves.
            resolved = {k: _resolve(v, values) for k, v in props.items()}
            entry: dict[str, Any] = {
                "name": cluster.alias,
                "bootstrapServers": bootstrap_servers(cluster),
                "properties": resolved,
            }
            connects: list[dict[str, Any]] = []
            for g in groups:
                if g.cluster != cluster.alias:
                    continue
                connect: dict[str, Any] = {"name": g.name, "address": f"http://127.0.0.1:{g.rest_port}"}
                key = rest_password_key(g)
                if key is not None:
                    connect.update({"username": g.rest_username or "mm2-admin", "password": values[key]})
                connects.append(connect)
            if connects:
                entry["kafkaConnect"] = connects
            entries.append(entry)
        return json.dumps({"kafka": {"clusters": entries}}, indent=2) + "\n"

    return ContainerSpec(
        name=f"{docker_prefix(stack)}-kafka-ui",
        image=settings.kafka_ui_image,
        command=(),
        env={
            "spring.config.additional-location": path,
            "SERVER_ADDRESS": "127.0.0.1",
            "SERVER_PORT": str(settings.kafka_ui_port),
            "LOGGING_LEVEL_ROOT": "warn",
        },
        uploads={},
        secret_uploads=(SecretUpload(path, render, tuple(keys)),),
        host_network=True,
    )


_PLACEHOLDER = re.compile(r"\$\{file:[^:}]+:([A-Za-z0-9_.-]+)\}")


def _resolve(text: str, values: Mapping[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


def required_secret_keys(topology: Topology) -> tuple[str, ...]:
    """Every `mm2:secrets` key a deployment of this topology reads (brokers, workers, REST)."""
    keys: set[str] = set()
    for cluster in topology.clusters.values():
        if cluster.platform in (Platform.KUBERNETES, Platform.DOCKER):
            keys.update(broker_secret_keys(cluster))
    for group in topology.worker_groups.values():
        if group.platform in (Platform.KUBERNETES, Platform.DOCKER):
            keys.update(group_secret_keys(topology, group))
            if (key := rest_password_key(group)) is not None:
                keys.add(key)
    return tuple(sorted(keys))


__all__ = [
    "DEFAULT_KAFKA_IMAGE",
    "AlertSettings",
    "ConnectNames",
    "ConnectObjects",
    "ConnectPodSettings",
    "ContainerSpec",
    "DockerSettings",
    "KafkaNames",
    "KafkaObjects",
    "KafkaPodSettings",
    "KubernetesSettings",
    "PlatformSettingsError",
    "Resources",
    "SecretUpload",
    "alert_rules",
    "broker_secret_key",
    "connect_objects",
    "connect_secret_names",
    "connect_url",
    "docker_broker_specs",
    "docker_connect_specs",
    "docker_kafka_ui_spec",
    "docker_settings",
    "group_secret_keys",
    "heartbeat_topics",
    "jmx_exporter_config",
    "kafka_objects",
    "kafka_secret_names",
    "kraft_cluster_id",
    "kubernetes_settings",
    "required_secret_keys",
    "rest_users_text",
    "secrets_file_text",
]
