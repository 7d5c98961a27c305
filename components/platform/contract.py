"""What `KafkaCluster` and `ConnectWorkerGroup` ask of a platform, and what they get back.

Every platform backend (`local`, `kubernetes`, `docker`) implements `PlatformBackend`; the
`external` platform has none, since it deploys nothing. The components stay wiring: validate,
pick the backend (`components.platform.backends.platform_backend`), hand it a request, depend
on the resources it returns and export its URL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import pulumi

from components.platform.settings import DockerSettings, KubernetesSettings
from components.topology.model import Cluster, Topology, WorkerGroup
from components.topology.security import User


@dataclass(frozen=True)
class ContainerPlatforms:
    """Settings for clusters and worker groups on `kubernetes` or `docker` (stack config
    namespace `mm2-platform`), and the secret values their pods or containers mount."""

    kubernetes: KubernetesSettings | None = None
    docker: DockerSettings | None = None
    secret_values: pulumi.Input[Mapping[str, str]] | None = None


@dataclass(frozen=True)
class BrokerRequest:
    """One cluster's brokers to deploy."""

    cluster: Cluster
    credentials: pulumi.Output[Mapping[str, str]]  # the stack's passwords by secret key
    admin: pulumi.Output[dict[str, str]]  # how the stack connects as admin (readiness probes)
    users: Sequence[User] = ()


@dataclass(frozen=True)
class DeployedBrokers:
    """What the cluster's users, ACLs and topics wait for, and where the brokers run as pods when
    they do (Kubernetes: `context`, `namespace`, `statefulset`), so `bin/status` can name a down
    broker's pod and node."""

    resources: tuple[pulumi.Resource, ...] = ()
    pods: Mapping[str, str] | None = None


@dataclass(frozen=True)
class WorkerRequest:
    """One worker group's workers to deploy, after its storage cluster and the other clusters its flows touch."""

    group: WorkerGroup
    topology: Topology
    credentials: pulumi.Output[Mapping[str, str]]
    storage: pulumi.Resource  # the storage cluster's component
    auth: pulumi.Output[dict[str, str]] | None = None  # REST basic-auth credentials (restAuth)
    ca_pem: pulumi.Output[str] | None = None  # CA the REST listener is verified against (restTls)
    # The other clusters its flows touch: their users (a rotated password) come before the workers.
    others: tuple[pulumi.Resource, ...] = ()


@dataclass(frozen=True)
class DeployedWorkers:
    """What the connectors wait for, and the REST URL they are sent to when the platform decides
    it (None keeps the model's: the group's `url`, else its first worker's)."""

    resources: tuple[pulumi.Resource, ...] = ()
    url: pulumi.Input[str] | None = None
    # where the group's lag exporter answers, when the platform runs one as part of the workers
    # (Kubernetes: its in-cluster Service URL); the local platform's is a process of the group's own
    lag_url: pulumi.Input[str] | None = None
    # where the workers run as pods (Kubernetes: `context`, `namespace`, `selector`, and `port` of
    # their metrics), so `bin/status` can read each worker's metrics through the API server
    pods: Mapping[str, str] | None = None


class PlatformBackend(Protocol):
    """Deploys brokers and workers as children of the component that asks."""

    def deploy_brokers(self, parent: pulumi.ComponentResource, name: str, request: BrokerRequest) -> DeployedBrokers:
        """`name` is the component's; children derive their names from it."""
        ...

    def deploy_workers(self, parent: pulumi.ComponentResource, name: str, request: WorkerRequest) -> DeployedWorkers:
        """`name` is the component's; children derive their names from it."""
        ...
