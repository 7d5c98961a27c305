"""The `docker` platform: seed 001's single-host layout as `DockerContainer` resources (the
project's dynamic provider over the Docker Engine API, components/platform/docker/provider.py).

Every container shares the host's network (see `specs`): brokers listen on 127.0.0.1 at the
cluster's ports, Connect workers at their REST ports. Secret files (FileConfigProvider secrets,
the REST users file) are uploaded into the containers, 0600 for the image user, with contents
rendered from the stack's `mm2:secrets` and kept secret in the state. The image must be on the
engine already (`bin/bootstrap --images` builds it; `engine.missing_images` says so at preview).
A worker group, and a cluster of more than one broker, restarts one container at a time, as the
local platform's processes do (components/topology/restarts.py).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

from components.platform.contract import BrokerRequest, DeployedBrokers, DeployedWorkers, WorkerRequest
from components.platform.docker.engine import engine_socket
from components.platform.docker.provider import DockerContainer
from components.platform.docker.specs import (
    ContainerSpec,
    DockerClaim,
    cluster_claims,
    docker_broker_specs,
    docker_connect_specs,
    group_claims,
)
from components.platform.local.rolling import rolling_input
from components.platform.readiness import connect_probe, kafka_probe
from components.platform.settings import DockerSettings
from components.topology import worker_rest_urls
from components.topology.restarts import cluster_restarts, worker_group_restarts

SecretValues = pulumi.Input[Mapping[str, str]]


def _secret_files(spec: ContainerSpec, secret_values: SecretValues | None) -> pulumi.Input[Mapping[str, str]]:
    """The spec's secret uploads rendered from the stack's secrets (a secret Output)."""
    if not spec.secret_uploads:
        return {}
    if secret_values is None:
        raise ValueError(
            f"container {spec.name} needs secrets ({', '.join(k for u in spec.secret_uploads for k in u.keys)}). "
            "Fix: set them with `pulumi config set --secret --path 'mm2:secrets[\"<key>\"]' <value>`."
        )
    uploads = spec.secret_uploads
    return pulumi.Output.secret(
        pulumi.Output.from_input(secret_values).apply(lambda v: {u.path: u.render(v) for u in uploads})
    )


@dataclass(frozen=True)
class DockerBackend:
    """The docker platform's `PlatformBackend`: its containers on the engine DOCKER_HOST names
    (`engine_socket`), rolling restarts turned by locks under `lock_root` (the stack's run root)."""

    settings: DockerSettings | None
    stack: str
    secret_values: SecretValues | None = None
    lock_root: str = ""

    def deploy_brokers(self, parent: pulumi.ComponentResource, name: str, request: BrokerRequest) -> DeployedBrokers:
        """One container per broker of a docker cluster, children of `parent`."""
        cluster = request.cluster
        specs = docker_broker_specs(cluster, self.stack, self.settings or DockerSettings())
        lock = f"{self.lock_root}/docker/{cluster.alias}"
        brokers = [
            self._container(
                f"{name}-broker-{node_id}",
                spec,
                claim,
                component=f"KafkaCluster {cluster.alias!r}, broker {node_id}",
                ready=request.admin.apply(functools.partial(kafka_probe, f"127.0.0.1:{claim.ports[0]}")),
                rolling=rolling_input(cluster_restarts(cluster), lock, cluster.brokers, node_id),
                opts=pulumi.ResourceOptions(parent=parent),
            )
            for node_id, (spec, claim) in enumerate(zip(specs, cluster_claims(cluster, self.stack), strict=True))
        ]
        return DeployedBrokers(resources=tuple(brokers))

    def deploy_workers(self, parent: pulumi.ComponentResource, name: str, request: WorkerRequest) -> DeployedWorkers:
        """One container per worker of a docker worker group, after its storage cluster."""
        group = request.group
        specs = docker_connect_specs(group, request.topology, self.stack, self.settings or DockerSettings())
        auth = pulumi.Output.from_input(request.auth)
        urls = worker_rest_urls(group)
        lock = f"{self.lock_root}/docker/connect-{group.name}"
        workers = [
            self._container(
                f"{name}-worker-{index}",
                spec,
                claim,
                component=f"ConnectWorkerGroup {group.name!r}, worker {index}",
                ready=auth.apply(functools.partial(connect_probe, urls[index])),
                rolling=rolling_input(worker_group_restarts(group), lock, group.workers),
                opts=pulumi.ResourceOptions(parent=parent, depends_on=[request.storage]),
            )
            for index, (spec, claim) in enumerate(zip(specs, group_claims(group, self.stack), strict=True))
        ]
        return DeployedWorkers(resources=tuple(workers), url=pulumi.Output.from_input(urls[0]))

    def _container(
        self,
        resource_name: str,
        spec: ContainerSpec,
        claim: DockerClaim,
        *,
        component: str,
        ready: pulumi.Output[dict[str, Any]],
        rolling: dict[str, Any] | None,
        opts: pulumi.ResourceOptions,
    ) -> DockerContainer:
        return DockerContainer(
            resource_name,
            engine=engine_socket(),
            spec=spec,
            component=component,
            ports=claim.ports,
            config_key=claim.config_key,
            ready=ready,
            secret_files=_secret_files(spec, self.secret_values),
            rolling=rolling,
            group_size=int(rolling["processes"]) if rolling else 1,
            opts=opts,
        )
