"""Names of the Kubernetes objects and Secrets of a cluster or worker group. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from components.platform.settings import ConnectPodSettings, KafkaPodSettings
from components.topology.model import Cluster, WorkerGroup


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

    def priority_class(self, namespace: str) -> str:
        """The brokers' PriorityClass: cluster-scoped, so named after the namespace too."""
        return f"{namespace}-{self.alias}-kafka"

    def pod(self, ordinal: int | str) -> str:
        return f"{self.alias}-kafka-{ordinal}"

    def external(self, ordinal: int) -> str:
        return f"{self.alias}-kafka-{ordinal}-external"


def kafka_secret_names(cluster: Cluster, pod: KafkaPodSettings) -> tuple[str, str]:
    """(secrets-file Secret, TLS Secret) names of a Kubernetes cluster's brokers."""
    return (pod.secrets_secret or f"{cluster.alias}-kafka-secrets", pod.tls_secret or f"{cluster.alias}-kafka-tls")


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
    def metrics_service(self) -> str:
        return f"{self.group}-connect-metrics"

    @property
    def config(self) -> str:
        return f"{self.group}-connect-config"

    @property
    def rule(self) -> str:
        return f"{self.group}-connect-mm2-alerts"

    def priority_class(self, namespace: str) -> str:
        """The workers' PriorityClass: cluster-scoped, so named after the namespace too."""
        return f"{namespace}-{self.group}-connect"


def connect_secret_names(group: WorkerGroup, pod: ConnectPodSettings) -> tuple[str, str, str]:
    """(secrets-file Secret, REST users Secret, client TLS Secret) names of a worker group."""
    return (
        pod.secrets_secret or f"{group.name}-connect-secrets",
        pod.rest_users_secret or f"{group.name}-connect-rest-users",
        pod.tls_secret or f"{group.name}-connect-tls",
    )


@dataclass(frozen=True)
class LagExporterNames:
    """The objects of a worker group's lag exporter (lag_exporter_objects.py)."""

    group: str

    @property
    def deployment(self) -> str:
        return f"{self.group}-lag-exporter"

    @property
    def service(self) -> str:
        # The monitoring selectors name it (monitoring.lag_selector), and the stack exports its URL.
        return f"{self.group}-lag-exporter"

    @property
    def config(self) -> str:
        return f"{self.group}-lag-exporter-config"

    @property
    def secret(self) -> str:
        return f"{self.group}-lag-exporter-clients"

    @property
    def state(self) -> str:
        return f"{self.group}-lag-exporter-state"
