"""Every Kubernetes object of one KRaft cluster (combined broker+controller StatefulSet), as
plain data.

Pure: no pulumi import and no I/O, so every object is unit-testable as a dict;
`components.platform.kubernetes.deploy` only registers them. Secrets never appear here: the
brokers mount Secrets by name and read them through `${file:...}` placeholders.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from components.monitoring.broker_rules import broker_alert_groups
from components.monitoring.jmx_exporter import BROKER_RUNNING, BROKER_STATE, broker_exporter_config
from components.platform.container_broker import (
    CLIENT_PORT,
    CONTROLLER_PORT,
    EXTERNAL_PORT,
    REPLICATION_PORT,
    BrokerNetwork,
    advertised_listeners,
    broker_node_port,
    broker_start_script,
    container_broker_properties,
    container_broker_secret_keys,
    properties_text,
)
from components.platform.image_layout import (
    BROKER_DATA_DIR,
    BROKER_SECRETS_FILE,
    BROKER_TLS_DIR,
    CONFIG_DIR,
    JMX_AGENT_JAR,
    RUNTIME_DIR,
)
from components.platform.kubernetes.metadata import (
    BROKER_PRIORITY,
    READY_ONCE_APPLIED,
    Labelled,
    config_hash,
    container_security,
    label_selector,
    object_labels,
    object_meta,
    own_priority_class,
    placement_spec,
    pod_security,
    zone_spread,
)
from components.platform.kubernetes.monitoring import METRICS_PORT
from components.platform.kubernetes.names import KafkaNames, kafka_secret_names
from components.platform.kubernetes.rack import RACK_FILE, node_reader_objects, rack_init_container, token_volume
from components.platform.secret_files import SECRETS_KEY
from components.platform.settings import KafkaPodSettings, KubernetesSettings
from components.topology.model import Cluster, Platform, SecretRef

BROKER_TLS_KEYS = ("keystore.p12", "truststore.p12")  # the keys of the brokers' TLS Secret


def tls_secret_problem(key: str, where: str, wanted: tuple[str, ...], data: Mapping[str, str]) -> str | None:
    """What is wrong with the TLS Secret `where` (namespace/name) the pods mount, set by setting
    `key`: a key they mount that it lacks. None when it has them all."""
    missing = [k for k in wanted if k not in data]
    if not missing:
        return None
    has = ", ".join(sorted(data)) or "nothing"
    return (
        f"{key}: Secret {where} has no {' or '.join(missing)} (it has: {has}), which the pods mount. Fix: have "
        f"cert-manager (or whoever makes it) write the stores under {', '.join(wanted)}, or name the right "
        f"Secret in {key}."
    )


def kubernetes_broker_network(cluster: Cluster, namespace: str, pod: KafkaPodSettings) -> BrokerNetwork:
    names = KafkaNames(cluster.alias)
    host = f"{names.pod('{ordinal}')}.{names.headless}.{namespace}.svc"
    return BrokerNetwork(
        voter_host=host,
        advertised_host=host,
        external_host=pod.external_host,
        external_port_base=pod.external_node_port,
        own_listeners=True,
    )


@dataclass(frozen=True)
class KafkaObjects:
    config_map: dict[str, Any]
    headless_service: dict[str, Any]
    bootstrap_service: dict[str, Any]
    stateful_set: dict[str, Any]
    pod_disruption_budget: dict[str, Any]
    network_policy: dict[str, Any]
    external_services: tuple[dict[str, Any], ...] = ()
    # The brokers' ServiceAccount and its role to read their nodes' zones (rack.py); none without zoneLabel.
    node_reader: tuple[dict[str, Any], ...] = ()
    # The ServiceMonitor of the brokers' exporters and their PrometheusRule (`metrics`), else none.
    monitoring: tuple[dict[str, Any], ...] = ()
    # The brokers' own PriorityClass, none when `priorityClassName` names one.
    priority_class: dict[str, Any] | None = None

    def all(self) -> tuple[dict[str, Any], ...]:
        return (
            *((self.priority_class,) if self.priority_class is not None else ()),
            *self.node_reader,
            self.config_map,
            self.headless_service,
            self.bootstrap_service,
            self.stateful_set,
            self.pod_disruption_budget,
            self.network_policy,
            *self.external_services,
            *self.monitoring,
        )


@dataclass(frozen=True)
class _Broker(Labelled):
    """What every object of one cluster shares."""

    cluster: Cluster
    pod: KafkaPodSettings
    names: KafkaNames
    zone_label_key: str = ""  # the full key of the setting of the label broker.rack is read from
    # The stack's users of a PLAIN cluster (name -> password), which the brokers' JAAS table holds.
    users: Mapping[str, SecretRef] = field(default_factory=dict)


def kafka_objects(
    cluster: Cluster, settings: KubernetesSettings, cluster_id: str, users: Mapping[str, SecretRef] | None = None
) -> KafkaObjects:
    """Every Kubernetes object of one KRaft cluster (combined broker+controller StatefulSet).
    `users`: the stack's users of the cluster (name -> password), for a PLAIN cluster's JAAS table."""
    if cluster.platform is not Platform.KUBERNETES:
        raise ValueError(f"cluster {cluster.alias} is {cluster.platform.value}, not kubernetes")
    pod = settings.cluster(cluster.alias)
    labels = {**object_labels("kafka", cluster.alias, "broker", pod.image)}
    if cluster.datacenter:
        labels["mm2.io/datacenter"] = cluster.datacenter
    broker = _Broker(
        namespace=settings.namespace,
        labels=labels,
        selector=label_selector("kafka", cluster.alias),
        cluster=cluster,
        pod=pod,
        names=KafkaNames(cluster.alias),
        zone_label_key=settings.cluster_key(cluster.alias, "zoneLabel"),
        users=dict(users or {}),
    )
    data = _config_data(broker, cluster_id)
    return KafkaObjects(
        config_map={
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": broker.meta(broker.names.config),
            "data": data,
        },
        headless_service=_headless_service(broker),
        bootstrap_service=_bootstrap_service(broker),
        stateful_set=_stateful_set(broker, data),
        pod_disruption_budget=_pod_disruption_budget(broker),
        network_policy=_network_policy(broker),
        external_services=_external_services(broker),
        node_reader=_node_reader(broker),
        monitoring=_monitoring(broker),
        priority_class=own_priority_class(
            pod, broker.names.priority_class(broker.namespace), BROKER_PRIORITY, labels, "Kafka brokers"
        ),
    )


def _config_data(broker: _Broker, cluster_id: str) -> dict[str, str]:
    """The ConfigMap's files: the shared server.properties and the start script that adds the
    pod's node id, advertised listeners and rack."""
    cluster = broker.cluster
    network = kubernetes_broker_network(cluster, broker.namespace, broker.pod)
    # The node's zone, written by the rack init container (rack.py); without a zoneLabel, one
    # rack for the whole cluster.
    rack = f'"$(cat {RACK_FILE})"' if broker.pod.zone_label else f'"{cluster.datacenter or cluster.alias}"'
    preamble = f'ORDINAL="${{HOSTNAME##*-}}"\nRACK={rack}\n'

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
    return {
        "server.properties": properties_text(container_broker_properties(cluster, network, users=broker.users)),
        "start.sh": script,
        "jmx-exporter.yaml": json.dumps(broker_exporter_config(), indent=2, sort_keys=True) + "\n",
    }


def _headless_service(broker: _Broker) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": object_meta(
            broker.names.headless, broker.namespace, {**broker.labels, "mm2.io/service": "brokers"}
        ),
        "spec": {
            "clusterIP": "None",
            # KRaft voters must resolve each other before any of them is ready.
            "publishNotReadyAddresses": True,
            "selector": dict(broker.selector),
            "ports": [
                {"name": "client", "port": CLIENT_PORT, "targetPort": CLIENT_PORT},
                {"name": "replication", "port": REPLICATION_PORT, "targetPort": REPLICATION_PORT},
                {"name": "controller", "port": CONTROLLER_PORT, "targetPort": CONTROLLER_PORT},
                # Every broker's exporter, ready or not, for the ServiceMonitor (`metrics`).
                {"name": "metrics", "port": METRICS_PORT, "targetPort": METRICS_PORT},
            ],
        },
    }


def _bootstrap_service(broker: _Broker) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": broker.meta(broker.names.bootstrap),
        "spec": {
            "type": "ClusterIP",
            "selector": dict(broker.selector),
            "ports": [{"name": "client", "port": CLIENT_PORT, "targetPort": CLIENT_PORT}],
        },
    }


def _storage(broker: _Broker) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volume mounts, volumes) of a broker pod: config, data, runtime, pod info, and the
    secrets file and TLS stores when the cluster needs them."""
    mounts: list[dict[str, Any]] = [
        {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
        {"name": "data", "mountPath": BROKER_DATA_DIR},
        {"name": "runtime", "mountPath": RUNTIME_DIR},
    ]
    volumes: list[dict[str, Any]] = [
        {"name": "config", "configMap": {"name": broker.names.config, "defaultMode": 0o555}},
        {"name": "runtime", "emptyDir": {}},
    ]
    if broker.pod.zone_label:
        volumes.append(token_volume())
    secrets_secret, tls_secret = kafka_secret_names(broker.cluster, broker.pod)
    if container_broker_secret_keys(broker.cluster, broker.users):
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
    if broker.cluster.security.protocol.uses_tls:
        mounts.append({"name": "tls", "mountPath": BROKER_TLS_DIR, "readOnly": True})
        volumes.append(
            {
                "name": "tls",
                "secret": {
                    "secretName": tls_secret,
                    "items": [{"key": key, "path": key} for key in BROKER_TLS_KEYS],
                    "defaultMode": 0o400,
                },
            }
        )
    return mounts, volumes


def _container(broker: _Broker, mounts: list[dict[str, Any]]) -> dict[str, Any]:
    pod = broker.pod
    container_ports = [
        {"name": "client", "containerPort": CLIENT_PORT},
        {"name": "replication", "containerPort": REPLICATION_PORT},
        {"name": "controller", "containerPort": CONTROLLER_PORT},
        {"name": "metrics", "containerPort": METRICS_PORT},
    ]
    if pod.external_host:
        container_ports.append({"name": "external", "containerPort": EXTERNAL_PORT})
    return {
        "name": "kafka",
        "image": pod.image,
        "command": ["/bin/bash", f"{CONFIG_DIR}/start.sh"],
        "env": [
            {"name": "KAFKA_HEAP_OPTS", "value": f"-Xms{pod.heap} -Xmx{pod.heap}"},
            {"name": "LOG_DIR", "value": f"{RUNTIME_DIR}/logs"},
            # The exporter agent: the broker state its readiness reads, and the metrics of `metrics`.
            {
                "name": "KAFKA_OPTS",
                "value": f"-javaagent:{JMX_AGENT_JAR}={METRICS_PORT}:{CONFIG_DIR}/jmx-exporter.yaml",
            },
        ],
        "ports": container_ports,
        "resources": pod.resources.spec(),
        "volumeMounts": mounts,
        # Ready when the broker is RUNNING: caught up with the metadata log, unfenced, serving
        # (a TCP connect to the client port succeeds well before). The controller port answers
        # as soon as the quorum member is up.
        "readinessProbe": {
            "exec": {"command": running_probe()},
            "periodSeconds": 5,
            "timeoutSeconds": 5,
            "failureThreshold": 2,
        },
        "livenessProbe": {
            "tcpSocket": {"port": CONTROLLER_PORT},
            "periodSeconds": 20,
            "timeoutSeconds": 5,
            "failureThreshold": 6,
        },
        "startupProbe": {"tcpSocket": {"port": CONTROLLER_PORT}, "periodSeconds": 5, "failureThreshold": 60},
        "securityContext": container_security(),
    }


def _stateful_set(broker: _Broker, data: dict[str, str]) -> dict[str, Any]:
    pod = broker.pod
    mounts, volumes = _storage(broker)
    volume_claim = {
        "metadata": {"name": "data", "labels": dict(broker.selector)},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": pod.storage_size}},
            **({"storageClassName": pod.storage_class} if pod.storage_class else {}),
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        # The provider's own readiness wait would hold `up` for readyTimeout on a broker already
        # down, before the roll could say so: the roll (broker_roll.py) waits for the brokers
        # instead.
        "metadata": broker.meta(broker.names.statefulset, annotations=dict(READY_ONCE_APPLIED)),
        "spec": {
            "serviceName": broker.names.headless,
            "replicas": broker.cluster.brokers,
            # All voters must start together to elect a leader; ordered start would deadlock.
            "podManagementPolicy": "Parallel",
            # Never by the StatefulSet controller: the stack's roll (broker_roll.py) deletes one pod
            # at a time once the cluster can spare it (roll_plan.py), and the new one starts.
            "updateStrategy": {"type": "OnDelete"},
            "selector": broker.match(),
            "template": {
                "metadata": {"labels": dict(broker.labels), "annotations": {"mm2.io/config-hash": config_hash(data)}},
                "spec": {
                    "terminationGracePeriodSeconds": 120,
                    "securityContext": pod_security(),
                    "affinity": {
                        "podAntiAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [
                                {"topologyKey": "kubernetes.io/hostname", "labelSelector": broker.match()}
                            ]
                        }
                    },
                    "topologySpreadConstraints": zone_spread(broker.selector, pod.zone_spread == "required"),
                    **placement_spec(pod, broker.names.priority_class(broker.namespace)),
                    **_rack_reader(broker),
                    "containers": [_container(broker, mounts)],
                    "volumes": volumes,
                },
            },
            "volumeClaimTemplates": [volume_claim],
            # Kubernetes keeps a StatefulSet's claims when it goes, unless told: `deleteClaims`
            # makes `pulumi destroy` remove the brokers' data too (a scale-down keeps it either way).
            **(
                {"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"}}
                if pod.delete_claims
                else {}
            ),
        },
    }


def _node_reader(broker: _Broker) -> tuple[dict[str, Any], ...]:
    """The role that lets the rack init container read its node, bound to the brokers' own
    ServiceAccount (made here) or to the one `serviceAccount` names; none without zoneLabel."""
    if not broker.pod.zone_label:
        return ()
    return node_reader_objects(broker.names.statefulset, broker.namespace, broker.labels, broker.pod.service_account)


def _rack_reader(broker: _Broker) -> dict[str, Any]:
    """The pod spec's fields that read the node's zone before the broker starts (rack.py)."""
    if not broker.pod.zone_label:
        return {}
    setting = broker.zone_label_key
    return {
        "serviceAccountName": broker.pod.service_account or broker.names.statefulset,
        "automountServiceAccountToken": False,
        "initContainers": [rack_init_container(broker.pod.image, broker.pod.zone_label, setting)],
    }


def _pod_disruption_budget(broker: _Broker) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": broker.meta(broker.names.statefulset),
        # One broker at a time: with replication factor 3 and min.insync.replicas 2, a second
        # voluntary disruption would stop writes to partitions whose replicas it holds.
        "spec": {"minAvailable": max(broker.cluster.brokers - 1, 0), "selector": broker.match()},
    }


def _network_policy(broker: _Broker) -> dict[str, Any]:
    client_rule_ports = [{"port": CLIENT_PORT, "protocol": "TCP"}]
    if broker.pod.external_host:
        client_rule_ports.append({"port": EXTERNAL_PORT, "protocol": "TCP"})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": broker.meta(broker.names.statefulset),
        "spec": {
            "podSelector": broker.match(),
            "policyTypes": ["Ingress"],
            "ingress": [
                {"ports": client_rule_ports},
                # The brokers' own listeners, replication and the quorum, for the brokers only.
                {
                    "from": [{"podSelector": broker.match()}],
                    "ports": [
                        {"port": REPLICATION_PORT, "protocol": "TCP"},
                        {"port": CONTROLLER_PORT, "protocol": "TCP"},
                    ],
                },
                # The exporter stays open to scrapers, as the workers' does.
                {"ports": [{"port": METRICS_PORT, "protocol": "TCP"}]},
            ],
        },
    }


def _external_services(broker: _Broker) -> tuple[dict[str, Any], ...]:
    """A Service for bootstrap and one per broker, when the cluster has an external host:
    LoadBalancers, or NodePorts at externalNodePort (bootstrap) and the ports after it (brokers)."""
    pod, names = broker.pod, broker.names
    if not pod.external_host:
        return ()

    def service(name: str, ordinal: str, selector: dict[str, str], node_port: int | None) -> dict[str, Any]:
        # `{ordinal}` in an annotation value (e.g. an external-dns hostname) names each broker's address.
        annotations = {k: v.replace("{ordinal}", ordinal) for k, v in pod.external_service_annotations.items()}
        port: dict[str, Any] = {"name": "external", "port": EXTERNAL_PORT, "targetPort": EXTERNAL_PORT}
        if node_port is not None:
            port["nodePort"] = node_port
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": broker.meta(name, annotations=annotations),
            "spec": {
                "type": "LoadBalancer" if node_port is None else "NodePort",
                "selector": selector,
                "ports": [port],
            },
        }

    base = pod.external_node_port
    externals = [service(names.external_bootstrap, "bootstrap", dict(broker.selector), base)]
    for i in range(broker.cluster.brokers):
        pod_selector = {**broker.selector, "statefulset.kubernetes.io/pod-name": names.pod(i)}
        port = None if base is None else broker_node_port(base, i)
        externals.append(service(names.external(i), str(i), pod_selector, port))
    return tuple(externals)


def running_probe() -> list[str]:
    """The readiness command: the broker's own exporter says its state is RUNNING (bash's
    /dev/tcp, so the image needs no HTTP client)."""
    request = "GET /metrics HTTP/1.0\\r\\n\\r\\n"
    return [
        "/bin/bash",
        "-c",
        f"exec 3<>/dev/tcp/127.0.0.1/{METRICS_PORT} && printf '{request}' >&3 && "
        f"grep -Eq '^{BROKER_STATE} {BROKER_RUNNING}(\\.0)?$' <&3",
    ]


def _monitoring(broker: _Broker) -> tuple[dict[str, Any], ...]:
    """With `metrics`: a ServiceMonitor of every broker's exporter (behind the headless Service),
    labelling its series `mm2_cluster`, and the PrometheusRule of the broker alerts."""
    pod, alias = broker.pod, broker.cluster.alias
    if not pod.metrics:
        return ()
    labels = {**broker.labels, **pod.prometheus_labels}
    monitor = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": object_meta(broker.names.statefulset, broker.namespace, labels),
        "spec": {
            "selector": {"matchLabels": {**broker.selector, "mm2.io/service": "brokers"}},
            "endpoints": [
                {
                    "port": "metrics",
                    "interval": "30s",
                    "relabelings": [{"action": "replace", "targetLabel": "mm2_cluster", "replacement": alias}],
                }
            ],
        },
    }
    sel = f'namespace="{broker.namespace}",mm2_cluster="{alias}"'
    rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": object_meta(f"{broker.names.statefulset}-alerts", broker.namespace, labels),
        "spec": {
            "groups": broker_alert_groups(
                alias, sel, under_replicated_for=pod.alerts.under_replicated_for, critical_for=pod.alerts.critical_for
            )
        },
    }
    return monitor, rule
