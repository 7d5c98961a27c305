"""Which backend deploys a cluster's brokers or a worker group's workers, by platform."""

from __future__ import annotations

from components.platform.contract import ContainerPlatforms, PlatformBackend
from components.platform.docker.deploy import DockerBackend
from components.platform.kubernetes.backend import KubernetesBackend
from components.platform.local.deploy import LocalBackend
from components.platform.local.layout import LocalPlatform
from components.platform.local.network import LocalNetwork
from components.platform.local.tls import StackTls
from components.topology.model import Platform


def platform_backend(
    platform: Platform,
    local: LocalPlatform,
    containers: ContainerPlatforms,
    tls: StackTls | None,
    network: LocalNetwork | None = None,
) -> PlatformBackend | None:
    """The backend of `platform`; None for `external`, which deploys nothing."""
    if platform is Platform.LOCAL:
        return LocalBackend(local, tls, network)
    if platform is Platform.KUBERNETES:
        return KubernetesBackend(containers.kubernetes, local.stack, containers.secret_values)
    if platform is Platform.DOCKER:
        return DockerBackend(containers.docker, local.stack, containers.secret_values, local.run_root)
    return None
