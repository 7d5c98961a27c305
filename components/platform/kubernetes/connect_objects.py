"""Every Kubernetes object of one Connect worker group running MM2, as plain data.

Pure: no pulumi import and no I/O; `components.platform.kubernetes.deploy` only registers
them. Secrets never appear here: the workers mount Secrets by name (the group's secrets file,
the REST users file, client TLS stores) and read them through `${file:...}` placeholders.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from typing import Any

from components.platform.container_broker import properties_text
from components.platform.image_layout import (
    CONFIG_DIR,
    JMX_AGENT_JAR,
    KAFKA_HOME,
    REST_USERS_DIR,
    REST_USERS_FILE,
    RUNTIME_DIR,
)
from components.platform.kubernetes.metadata import (
    READY_ONCE_APPLIED,
    WORKER_PRIORITY,
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
from components.platform.kubernetes.monitoring import METRICS_PORT, alert_rules, jmx_exporter_config
from components.platform.kubernetes.names import ConnectNames, connect_secret_names
from components.platform.kubernetes.watcher_objects import watcher_names
from components.platform.lag_exporter import lag_flows
from components.platform.secret_files import REST_USERS_KEY, SECRETS_KEY, container_group_secret_keys, rest_jaas_text
from components.platform.settings import ConnectPodSettings, KubernetesSettings
from components.platform.topology_facts import group_clusters
from components.topology.model import Platform, Topology, WorkerGroup
from components.topology.runtime_config import KUBERNETES_REST_PORT, worker_properties


def connect_url(group: WorkerGroup, namespace: str) -> str:
    """Where `pulumi up` sends connectors: the group's `url` (ingress or load balancer) when
    given, else the in-cluster Service, reachable only from inside the Kubernetes cluster."""
    if group.url:
        return group.url.rstrip("/")
    return f"http://{ConnectNames(group.name).service}.{namespace}.svc:{KUBERNETES_REST_PORT}"


@dataclass(frozen=True)
class ConnectObjects:
    config_map: dict[str, Any]
    deployment: dict[str, Any]
    service: dict[str, Any]
    pod_disruption_budget: dict[str, Any]
    service_monitor: dict[str, Any] | None
    prometheus_rule: dict[str, Any] | None
    url: str
    metrics_service: dict[str, Any] | None = None
    network_policy: dict[str, Any] | None = None
    # The workers' own PriorityClass (below the brokers'), none when `priorityClassName` names one.
    priority_class: dict[str, Any] | None = None

    def all(self) -> tuple[dict[str, Any], ...]:
        maybe = (self.metrics_service, self.service_monitor, self.prometheus_rule, self.network_policy)
        optional = tuple(o for o in maybe if o is not None)
        first = (self.priority_class,) if self.priority_class is not None else ()
        return (*first, self.config_map, self.deployment, self.service, self.pod_disruption_budget, *optional)


def client_tls_items(topology: Topology, group: WorkerGroup) -> list[tuple[str, str]]:
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


@dataclass(frozen=True)
class _Workers(Labelled):
    """What every object of one worker group shares."""

    group: WorkerGroup
    topology: Topology
    pod: ConnectPodSettings
    names: ConnectNames


def worker_selector(group: str) -> dict[str, str]:
    """The labels that select a group's worker pods."""
    return label_selector("kafka-connect", group)


def connect_objects(group: WorkerGroup, topology: Topology, settings: KubernetesSettings) -> ConnectObjects:
    """Every Kubernetes object of one Connect worker group running MM2."""
    if group.platform is not Platform.KUBERNETES:
        raise ValueError(f"worker group {group.name} is {group.platform.value}, not kubernetes")
    pod = settings.group(group.name)
    workers = _Workers(
        namespace=settings.namespace,
        labels=object_labels("kafka-connect", group.name, "mm2-worker", pod.image),
        selector=worker_selector(group.name),
        group=group,
        topology=topology,
        pod=pod,
        names=ConnectNames(group.name),
    )
    data, java_opts = _config_data(workers)
    service_monitor, prometheus_rule = _monitoring(workers)
    return ConnectObjects(
        config_map={
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": workers.meta(workers.names.config),
            "data": data,
        },
        deployment=_deployment(workers, data, java_opts),
        service=_service(workers),
        pod_disruption_budget={
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": workers.meta(workers.names.deployment),
            "spec": {"maxUnavailable": 1, "selector": workers.match()},
        },
        service_monitor=service_monitor,
        prometheus_rule=prometheus_rule,
        url=connect_url(group, settings.namespace),
        metrics_service=_metrics_service(workers),
        network_policy=_network_policy(workers),
        priority_class=own_priority_class(
            pod, workers.names.priority_class(workers.namespace), WORKER_PRIORITY, workers.labels, "MM2 Connect workers"
        ),
    )


def _network_policy(workers: _Workers) -> dict[str, Any] | None:
    """With `restFrom`: the REST port only from the group's own workers (a worker forwards
    requests to the leader), its watcher and the listed networks; metrics stay open to scrapers.
    A client reaching a NodePort or load balancer arrives from a node's or the balancer's
    address, which `restFrom` must then name."""
    rest_from = workers.pod.rest_from
    if rest_from is None:
        return None
    watcher = label_selector(watcher_names(workers.group.name)[0], workers.group.name)
    peers: list[dict[str, Any]] = [{"podSelector": workers.match()}, {"podSelector": {"matchLabels": watcher}}]
    peers += [{"ipBlock": {"cidr": cidr}} for cidr in rest_from]
    ingress: list[dict[str, Any]] = [{"from": peers, "ports": [{"port": KUBERNETES_REST_PORT, "protocol": "TCP"}]}]
    if workers.pod.metrics:
        ingress.append({"ports": [{"port": METRICS_PORT, "protocol": "TCP"}]})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": workers.meta(workers.names.deployment),
        "spec": {"podSelector": workers.match(), "policyTypes": ["Ingress"], "ingress": ingress},
    }


def _config_data(workers: _Workers) -> tuple[dict[str, str], list[str]]:
    """The ConfigMap's files (worker properties, REST JAAS, exporter rules, start script) and the
    JVM options that load them."""
    group, pod = workers.group, workers.pod
    worker = worker_properties(workers.topology, group, 0)
    data: dict[str, str] = {"connect-distributed.properties": properties_text(worker)}
    java_opts: list[str] = []
    if group.rest_auth:
        data["rest-jaas.conf"] = rest_jaas_text(REST_USERS_FILE)
        java_opts.append(f"-Djava.security.auth.login.config={CONFIG_DIR}/rest-jaas.conf")
    if pod.metrics:
        data["jmx-exporter.yaml"] = json.dumps(jmx_exporter_config(), indent=2, sort_keys=True) + "\n"
        java_opts.insert(0, f"-javaagent:{JMX_AGENT_JAR}={METRICS_PORT}:{CONFIG_DIR}/jmx-exporter.yaml")
    data["start.sh"] = (
        "#!/bin/bash\nset -euo pipefail\n"
        f"mkdir -p {RUNTIME_DIR}/logs\n"
        f"CONFIG={RUNTIME_DIR}/connect-distributed.properties\n"
        # A writable copy (0600) of the read-only file, also over the one a restarted container left.
        f'install -m 0600 {CONFIG_DIR}/connect-distributed.properties "$CONFIG"\n'
        # Workers forward requests to the leader at the address it advertises: the pod IP.
        f'{{ echo "rest.advertised.host.name=${{POD_IP}}"; '
        f'echo "rest.advertised.port={KUBERNETES_REST_PORT}"; }} >> "$CONFIG"\n'
        f'exec {KAFKA_HOME}/bin/connect-distributed.sh "$CONFIG"\n'
    )
    return data, java_opts


def _secret_volume(name: str, secret_name: str, key: str, path: str) -> dict[str, Any]:
    return {
        "name": name,
        "secret": {"secretName": secret_name, "items": [{"key": key, "path": path}], "defaultMode": 0o400},
    }


def _storage(workers: _Workers) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volume mounts, volumes) of a worker pod: config, runtime, and the secrets file, REST
    users, client TLS stores and exporter agent when the group uses them."""
    group, topology = workers.group, workers.topology
    secrets_secret, users_secret, tls_secret = connect_secret_names(group, workers.pod)
    mounts: list[dict[str, Any]] = [
        {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
        {"name": "runtime", "mountPath": RUNTIME_DIR},
    ]
    volumes: list[dict[str, Any]] = [
        {"name": "config", "configMap": {"name": workers.names.config, "defaultMode": 0o555}},
        {"name": "runtime", "emptyDir": {}},
    ]
    if container_group_secret_keys(topology, group):
        mounts.append({"name": "secrets", "mountPath": posixpath.dirname(group.secrets_file), "readOnly": True})
        volumes.append(_secret_volume("secrets", secrets_secret, SECRETS_KEY, posixpath.basename(group.secrets_file)))
    if group.rest_auth:
        mounts.append({"name": "rest-users", "mountPath": REST_USERS_DIR, "readOnly": True})
        volumes.append(_secret_volume("rest-users", users_secret, REST_USERS_KEY, posixpath.basename(REST_USERS_FILE)))
    # One volume per directory of the stores, each key projected to its file name: a directory
    # mount, not subPath, so a renewed certificate (cert-manager updating the Secret) reaches the
    # running pods, and the kubelet makes no per-file bind mounts.
    folders: dict[str, list[dict[str, str]]] = {}
    for key, path in client_tls_items(topology, group):
        folders.setdefault(posixpath.dirname(path), []).append({"key": key, "path": posixpath.basename(path)})
    for i, (folder, items) in enumerate(sorted(folders.items())):
        name = f"client-tls-{i}"
        mounts.append({"name": name, "mountPath": folder, "readOnly": True})
        volumes.append({"name": name, "secret": {"secretName": tls_secret, "items": items, "defaultMode": 0o400}})
    return mounts, volumes


def _container(workers: _Workers, mounts: list[dict[str, Any]], java_opts: list[str]) -> dict[str, Any]:
    pod = workers.pod
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
    return {
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
        "securityContext": container_security(),
    }


def _deployment(workers: _Workers, data: dict[str, str], java_opts: list[str]) -> dict[str, Any]:
    mounts, volumes = _storage(workers)
    pod_spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 60,
        "securityContext": pod_security(),
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": workers.match()},
                    }
                ]
            }
        },
        "topologySpreadConstraints": zone_spread(workers.selector, required=False),
        **placement_spec(workers.pod, workers.names.priority_class(workers.namespace)),
        "containers": [_container(workers, mounts, java_opts)],
        "volumes": volumes,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        # Its rollout is the start watch's to wait for (pod_watch.py), which says at once why a
        # pod cannot start; pulumi-kubernetes' own wait would hold `up` until readyTimeout.
        "metadata": workers.meta(workers.names.deployment, annotations=dict(READY_ONCE_APPLIED)),
        "spec": {
            "replicas": workers.group.workers,
            "selector": workers.match(),
            # One worker at a time: each departure triggers a rebalance of every MM2 task.
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "template": {
                "metadata": {"labels": dict(workers.labels), "annotations": {"mm2.io/config-hash": config_hash(data)}},
                "spec": pod_spec,
            },
        },
    }


def _service(workers: _Workers) -> dict[str, Any]:
    """The REST API, of `serviceType`."""
    pod = workers.pod
    rest: dict[str, Any] = {"name": "rest", "port": KUBERNETES_REST_PORT, "targetPort": KUBERNETES_REST_PORT}
    if pod.node_port is not None:
        rest["nodePort"] = pod.node_port
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": workers.meta(workers.names.service, annotations=dict(pod.service_annotations)),
        "spec": {"type": pod.service_type, "selector": dict(workers.selector), "ports": [rest]},
    }


def _metrics_service(workers: _Workers) -> dict[str, Any] | None:
    """The metrics port, inside the cluster only, in a Service of its own: on the REST Service a
    NodePort or LoadBalancer would publish it too, on a node port Kubernetes picks at random (one
    another group's fixed `nodePort` may then find taken)."""
    if not workers.pod.metrics:
        return None
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": workers.meta(workers.names.metrics_service),
        "spec": {
            "type": "ClusterIP",
            "selector": dict(workers.selector),
            "ports": [{"name": "metrics", "port": METRICS_PORT, "targetPort": METRICS_PORT}],
        },
    }


def _monitoring(workers: _Workers) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(ServiceMonitor, PrometheusRule) when metrics are on, labelled for the Prometheus Operator."""
    pod = workers.pod
    if not pod.metrics:
        return None, None
    monitor_labels = {**workers.labels, **pod.prometheus_labels}
    service_monitor = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": object_meta(workers.names.deployment, workers.namespace, monitor_labels),
        "spec": {"selector": workers.match(), "endpoints": [{"port": "metrics", "interval": "30s"}]},
    }
    prometheus_rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": object_meta(workers.names.rule, workers.namespace, monitor_labels),
        "spec": {
            "groups": alert_rules(
                workers.group,
                workers.topology,
                workers.namespace,
                pod.alerts,
                lag_exporter=bool(lag_flows(workers.topology, workers.group.name)),  # rendered with the group
            )
        },
    }
    return service_monitor, prometheus_rule
