"""The lag exporter of one worker group on Kubernetes, as plain data: a ConfigMap, a
PersistentVolumeClaim, a Deployment, a Service and, with metrics on, a ServiceMonitor.

Pure: no pulumi import and no I/O; `deploy.py` reads the exporter's source files and registers
the objects. The pod runs `python -m components.ops.lag_exporter --plan` in the project's
watcher image (Python and Debian's python3-confluent-kafka), with the exporter's few modules
mounted from the ConfigMap, as the watcher's are: nothing is installed at start.

- It reads each cluster as the group's Connect workers do: the same bootstrap
  (`bootstrap_servers`: the cluster's `bootstrap`, else its in-cluster `<alias>-kafka-bootstrap`
  Service) and the principal of the flows' connectors (the cluster's configured SASL user,
  `security.username`; on a cluster with the stack's authorizer it may also read the group's
  offsets topic, `security.lag_reader_acls`). Its SASL password (and
  a client keystore's password) reach the pod as the environment variable
  MM2_LAG_EXPORTER_SECRETS (JSON, `{alias: {"sasl.password": ...}}`) from the Secret
  `<group>-lag-exporter-clients`, never through the ConfigMap.
- TLS: librdkafka reads a PEM CA, not the workers' PKCS12 truststore; a cluster with a
  `truststoreLocation` is verified against `<alias>.ca.crt` (PEM: cert-manager's `ca.crt`), a
  key of the group's client TLS Secret beside `<alias>.truststore.p12`; a client keystore is
  the workers' `<alias>.keystore.p12`. Without a truststore, the image's system CAs.
- The sentinel's memory (what it counted, each partition's topic ID and end) and every expiry it
  found live in `state.json` on a small PersistentVolumeClaim: a restarted or rescheduled pod
  neither counts an expiry twice nor forgets one, and still sees a topic re-created while it was
  down. One replica, `Recreate`: the claim is ReadWriteOnce, and two exporters would count twice.
- It serves /metrics, /expired and /healthz on the named port `metrics` (9404); readiness is
  /healthz (ready after the first reading). The Service `<group>-lag-exporter` exposes it: the
  stack exports `http://<group>-lag-exporter.<namespace>.svc:9404` as `connect.<group>.lagUrl`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from components.platform.kubernetes.connect_objects import client_tls_items
from components.platform.kubernetes.metadata import (
    Labelled,
    label_selector,
    object_labels,
    object_meta,
)
from components.platform.kubernetes.monitoring import METRICS_PORT
from components.platform.kubernetes.names import LagExporterNames, connect_secret_names
from components.platform.kubernetes.shipped_code import (
    code_volumes,
    module_container,
    one_pod_deployment,
    shipped_code,
)
from components.platform.lag_exporter import lag_flows, plan_clusters, plan_for
from components.platform.settings import KubernetesSettings
from components.topology import Cluster, Topology, WorkerGroup
from components.topology.security import librdkafka_client
from components.watch.lag_plan import POLL_S, SECRETS_ENV, plan_document, split_client

# The files the pod needs, relative to the project root (see shipped_code.py for the packages).
LAG_EXPORTER_SOURCES = (
    "components/mm2_records.py",
    "components/ops/lag_exporter.py",
    "components/watch/lag.py",
    "components/watch/lag_plan.py",
)
LAG_EXPORTER_PACKAGES = (
    "components/__init__.py",
    "components/ops/__init__.py",
    "components/watch/__init__.py",
)
CODE_DIR = "/opt/mm2-lag-exporter"
STATE_DIR = "/var/lib/mm2-lag-exporter"
TLS_DIR = "/etc/mm2/lag-exporter/tls"
CLIENTS_KEY = "clients.json"  # the Secret's one key: the clients' secret settings, JSON
LISTEN = f"0.0.0.0:{METRICS_PORT}"
STATE_SIZE = "1Gi"  # a few KiB are used; 1 GiB is the smallest volume most provisioners make
SCRAPE_INTERVAL = "15s"  # the shared alert rules assume a scrape every 15 s or less

# What the exporter's pod asks of a node (the preview's capacity check counts it too).
EXPORTER_REQUESTS: Mapping[str, str] = MappingProxyType({"cpu": "50m", "memory": "128Mi"})


def ca_key(alias: str) -> str:
    """The client TLS Secret's key of a cluster's PEM CA (the workers' truststore sits beside it)."""
    return f"{alias}.ca.crt"


def keystore_key(alias: str) -> str:
    """The client TLS Secret's key of a cluster's client keystore, the one the workers mount."""
    return f"{alias}.keystore.p12"


def tls_keys(cluster: Cluster) -> tuple[str, ...]:
    """The client TLS Secret's keys the exporter mounts for `cluster`."""
    security = cluster.security
    if not security.protocol.uses_tls:
        return ()
    keys = [ca_key(cluster.alias)] if security.truststore_location else []
    if security.keystore_location:
        keys.append(keystore_key(cluster.alias))
    return tuple(keys)


def group_tls_keys(topology: Topology, group: WorkerGroup) -> tuple[str, ...]:
    """Every key of the group's client TLS Secret (`<group>-connect-tls`) that its pods mount:
    the workers' stores and, where the group runs a lag exporter, the exporter's CA files."""
    keys = {key for key, _ in client_tls_items(topology, group)}
    if lag_flows(topology, group.name):
        keys.update(_tls_items(topology, group.name))
    return tuple(sorted(keys))


def cluster_client(cluster: Cluster, password: str = "", keystore_password: str = "") -> dict[str, str]:
    """librdkafka settings of the exporter's client of `cluster`: the configured user, the
    mounted CA and keystore; `password` and `keystore_password` are the secret parts."""
    security = cluster.security
    alias = cluster.alias
    ca = f"{TLS_DIR}/{ca_key(alias)}" if ca_key(alias) in tls_keys(cluster) else None
    settings = librdkafka_client(security, security.username or "", password, ca)
    if keystore_key(alias) in tls_keys(cluster):
        settings.update(
            {"ssl.keystore.location": f"{TLS_DIR}/{keystore_key(alias)}", "ssl.keystore.password": keystore_password}
        )
    return settings


def secret_keys(topology: Topology, group: str) -> dict[str, dict[str, str]]:
    """Per cluster the exporter reads: librdkafka secret setting -> the `mm2:secrets` key it
    comes from. Empty when no cluster needs a secret (then no Secret is mounted)."""
    out: dict[str, dict[str, str]] = {}
    for alias in plan_clusters(topology, group):
        security = topology.clusters[alias].security
        wanted = {}
        if security.protocol.uses_sasl and security.password is not None:
            wanted["sasl.password"] = security.password.key
        if keystore_key(alias) in tls_keys(topology.clusters[alias]) and security.keystore_password is not None:
            wanted["ssl.keystore.password"] = security.keystore_password.key
        if wanted:
            out[alias] = wanted
    return out


def secret_clients_document(topology: Topology, group: str, values: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """The Secret's JSON: each cluster's secret settings from the stack's secret values (secret)."""
    missing = sorted({k for keys in secret_keys(topology, group).values() for k in keys.values()} - set(values))
    if missing:
        fixes = "; ".join(f"pulumi config set --secret --path 'mm2:secrets[\"{k}\"]' <value>" for k in missing)
        raise KeyError(f"lag exporter of worker group {group}: missing secret(s) {', '.join(missing)}. Fix: {fixes}")
    return {
        alias: {setting: str(values[key]) for setting, key in keys.items()}
        for alias, keys in secret_keys(topology, group).items()
    }


def lag_plan_document(topology: Topology, group: str) -> dict[str, Any]:
    """The plan the pod reads: no secret, no secrets file (the environment has them), the state on the claim."""
    public = {
        alias: split_client(cluster_client(topology.clusters[alias]))[0] for alias in plan_clusters(topology, group)
    }
    plan = plan_for(topology, group, public, listen=LISTEN, poll_s=POLL_S)
    return {**plan_document(plan), "stateFile": f"{STATE_DIR}/state.json"}


def lag_url(group: str, namespace: str) -> str:
    """Where the exporter answers inside the Kubernetes cluster (its Service)."""
    return f"http://{LagExporterNames(group).service}.{namespace}.svc:{METRICS_PORT}"


@dataclass(frozen=True)
class LagExporterObjects:
    config_map: dict[str, Any]
    state_claim: dict[str, Any]
    deployment: dict[str, Any]
    service: dict[str, Any]
    service_monitor: dict[str, Any] | None
    secret_name: str | None  # the Secret of the clients' secret settings, when any cluster needs one
    url: str

    def all(self) -> tuple[dict[str, Any], ...]:
        optional = (self.service_monitor,) if self.service_monitor is not None else ()
        return (self.config_map, self.state_claim, self.deployment, self.service, *optional)


def lag_exporter_objects(
    group: WorkerGroup, topology: Topology, settings: KubernetesSettings, sources: Mapping[str, str]
) -> LagExporterObjects:
    """Every object of the group's lag exporter; `sources`: the text of every LAG_EXPORTER_SOURCES path."""
    names = LagExporterNames(group.name)
    pod = settings.group(group.name)
    image = pod.watcher_image
    code = shipped_code(
        f"lag exporter of worker group {group.name}",
        LAG_EXPORTER_SOURCES,
        LAG_EXPORTER_PACKAGES,
        sources,
        lag_plan_document(topology, group.name),
    )
    labelled = Labelled(
        settings.namespace,
        object_labels(names.deployment, group.name, "lag-exporter", image),
        label_selector(names.deployment, group.name),
    )
    secret_name = names.secret if secret_keys(topology, group.name) else None
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": labelled.meta(names.config), "data": code.data}
    volumes = [
        *code_volumes(names.config, code),
        {"name": "state", "persistentVolumeClaim": {"claimName": names.state}},
        *_tls_volume(topology, group, settings),
    ]
    container = _container(image, secret_name, _tls_mounts(topology, group.name))
    deployment = one_pod_deployment(labelled, names.deployment, code, container, volumes)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": labelled.meta(names.service),
        "spec": {
            "type": "ClusterIP",
            "selector": dict(labelled.selector),
            "ports": [{"name": "metrics", "port": METRICS_PORT, "targetPort": "metrics"}],
        },
    }
    service_monitor = None
    if pod.metrics:
        service_monitor = {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": object_meta(names.deployment, settings.namespace, {**labelled.labels, **pod.prometheus_labels}),
            "spec": {
                "selector": labelled.match(),
                "endpoints": [{"port": "metrics", "path": "/metrics", "interval": SCRAPE_INTERVAL}],
            },
        }
    return LagExporterObjects(
        config_map=config_map,
        state_claim=_state_claim(labelled, names, group, settings),
        deployment=deployment,
        service=service,
        service_monitor=service_monitor,
        secret_name=secret_name,
        url=lag_url(group.name, settings.namespace),
    )


def _state_claim(
    labelled: Labelled, names: LagExporterNames, group: WorkerGroup, settings: KubernetesSettings
) -> dict[str, Any]:
    """The sentinel's state volume: the storage cluster's StorageClass where it is in the same
    Kubernetes cluster (kubeconfig context), else the namespace's default."""
    storage = settings.cluster(group.cluster)
    same_cluster = storage.context == settings.group(group.name).context
    storage_class = storage.storage_class if same_cluster else None
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": labelled.meta(names.state),
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": STATE_SIZE}},
            **({"storageClassName": storage_class} if storage_class else {}),
        },
    }


def _tls_items(topology: Topology, group: str) -> list[str]:
    return sorted(key for alias in plan_clusters(topology, group) for key in tls_keys(topology.clusters[alias]))


def _tls_volume(topology: Topology, group: WorkerGroup, settings: KubernetesSettings) -> list[dict[str, Any]]:
    items = _tls_items(topology, group.name)
    if not items:
        return []
    _, _, tls_secret = connect_secret_names(group, settings.group(group.name))
    secret = {"secretName": tls_secret, "items": [{"key": key, "path": key} for key in items], "defaultMode": 0o400}
    return [{"name": "client-tls", "secret": secret}]


def _tls_mounts(topology: Topology, group: str) -> list[dict[str, Any]]:
    if not _tls_items(topology, group):
        return []
    return [{"name": "client-tls", "mountPath": TLS_DIR, "readOnly": True}]


def _container(image: str, secret_name: str | None, tls_mounts: list[dict[str, Any]]) -> dict[str, Any]:
    """The exporter container: the plan from the ConfigMap, the clients' secrets from the Secret;
    the image's python has Debian's confluent-kafka."""
    env = []
    if secret_name is not None:
        env.append({"name": SECRETS_ENV, "valueFrom": {"secretKeyRef": {"name": secret_name, "key": CLIENTS_KEY}}})
    mounts = [{"name": "state", "mountPath": STATE_DIR}, *tls_mounts]
    container = module_container("lag-exporter", image, "components.ops.lag_exporter", CODE_DIR, env, mounts)
    container.update(
        {
            "ports": [{"name": "metrics", "containerPort": METRICS_PORT}],
            # Ready once a first reading is served: before it, /metrics would say nothing is behind.
            "readinessProbe": {
                "httpGet": {"path": "/healthz", "port": "metrics"},
                "periodSeconds": 10,
                "failureThreshold": 3,
            },
            # librdkafka prefetches up to 64 MiB per consumer (queued.max.messages.kbytes) while the
            # exporter reads the offsets topic and one record per lagging partition.
            "resources": {"requests": dict(EXPORTER_REQUESTS), "limits": {"memory": "512Mi"}},
        }
    )
    return container
