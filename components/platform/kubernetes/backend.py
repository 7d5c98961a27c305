"""The kubernetes platform's `PlatformBackend`: what `KafkaCluster` and `ConnectWorkerGroup`
call to deploy brokers (deploy.py) and a worker group with its helpers (deploy.py, helper_deploy.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.platform.contract import BrokerRequest, DeployedBrokers, DeployedWorkers, WorkerRequest
from components.platform.kubernetes.deploy import (
    SecretValues,
    broker_pods,
    deploy_connect_kubernetes,
    deploy_kafka_kubernetes,
    worker_pods,
)
from components.platform.kubernetes.helper_deploy import deploy_lag_exporter_kubernetes, deploy_watcher_kubernetes
from components.platform.settings import KubernetesSettings


@dataclass(frozen=True)
class KubernetesBackend:
    """The kubernetes platform's `PlatformBackend`."""

    settings: KubernetesSettings | None
    stack: str
    secret_values: SecretValues | None = None

    def deploy_brokers(self, parent: pulumi.ComponentResource, name: str, request: BrokerRequest) -> DeployedBrokers:
        k8s = deploy_kafka_kubernetes(
            parent,
            name,
            request.cluster,
            settings=self.settings,
            stack=self.stack,
            secret_values=self.secret_values,
            admin=request.admin,
            users=request.users,
        )
        pods = broker_pods(self.settings or KubernetesSettings(), request.cluster.alias)
        return DeployedBrokers(resources=tuple(k8s.resources), pods=pods)

    def deploy_workers(self, parent: pulumi.ComponentResource, name: str, request: WorkerRequest) -> DeployedWorkers:
        k8s = deploy_connect_kubernetes(
            parent,
            name,
            request.group,
            request.topology,
            pulumi.ResourceOptions(depends_on=[request.storage, *request.others]),
            settings=self.settings,
            secret_values=self.secret_values,
        )
        settings = self.settings or KubernetesSettings()
        watcher = deploy_watcher_kubernetes(parent, name, request, settings, self.secret_values, k8s.resources)
        lag = deploy_lag_exporter_kubernetes(parent, name, request, settings, self.secret_values, k8s)
        return DeployedWorkers(
            resources=(*k8s.resources, *watcher, *lag.resources),
            url=k8s.url,
            lag_url=lag.url,
            pods=worker_pods(settings, request.group),
        )
