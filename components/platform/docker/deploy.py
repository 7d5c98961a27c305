"""The `docker` platform: seed 001's single-host layout as pulumi_docker resources.

Every container shares the host's network (see `specs`): brokers listen on 127.0.0.1 at the
cluster's ports, Connect workers at their REST ports. Secret files (FileConfigProvider secrets,
the REST users file) are uploaded into the containers with contents rendered from the stack's
`mm2:secrets` and marked secret. The image must be on the engine already (`bin/bootstrap
--images` builds it; `engine.missing_images` says so at preview).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_docker as docker

from components.platform.contract import BrokerRequest, DeployedBrokers, DeployedWorkers, WorkerRequest
from components.platform.docker.specs import ContainerSpec, docker_broker_specs, docker_connect_specs
from components.platform.settings import DockerSettings
from components.topology import Cluster, Topology, WorkerGroup, bootstrap_servers, worker_rest_urls

SecretValues = pulumi.Input[Mapping[str, str]]


@dataclass
class DockerContainers:
    """What one docker deployment registered."""

    containers: list[docker.Container] = field(default_factory=list)
    resources: list[pulumi.Resource] = field(default_factory=list)


@dataclass
class DockerKafka(DockerContainers):
    bootstrap: pulumi.Output[str] | None = None


@dataclass
class DockerConnect(DockerContainers):
    url: pulumi.Output[str] | None = None


def _container(
    spec: ContainerSpec,
    resource_name: str,
    image: docker.RemoteImage,
    secret_values: SecretValues | None,
    opts: pulumi.ResourceOptions,
) -> tuple[docker.Container, list[pulumi.Resource]]:
    extra: list[pulumi.Resource] = []
    uploads = [docker.ContainerUploadArgs(file=path, content=text) for path, text in sorted(spec.uploads.items())]
    if spec.secret_uploads:
        if secret_values is None:
            raise ValueError(
                f"container {spec.name} needs secrets ({', '.join(k for u in spec.secret_uploads for k in u.keys)}). "
                "Fix: set them with `pulumi config set --secret --path 'mm2:secrets[\"<key>\"]' <value>`."
            )
        values = pulumi.Output.from_input(secret_values)
        for upload in spec.secret_uploads:
            text = values.apply(upload.render)
            uploads.append(docker.ContainerUploadArgs(file=upload.path, content=pulumi.Output.secret(text)))
    volumes = []
    if spec.volume and spec.volume_path:
        volume = docker.Volume(f"{resource_name}-data", name=spec.volume, opts=opts)
        extra.append(volume)
        volumes.append(docker.ContainerVolumeArgs(volume_name=volume.name, container_path=spec.volume_path))
    container = docker.Container(
        resource_name,
        name=spec.name,
        image=image.image_id,
        command=list(spec.command) or None,
        envs=[f"{k}={v}" for k, v in sorted(spec.env.items())],
        uploads=uploads,
        network_mode="host",
        volumes=volumes or None,
        labels=[docker.ContainerLabelArgs(label="mm2.io/stack", value=spec.stack)],
        healthcheck=(
            docker.ContainerHealthcheckArgs(tests=list(spec.healthcheck), interval="5s", timeout="3s", retries=30)
            if spec.healthcheck
            else None
        ),
        restart=spec.restart,
        # Uploaded files carry secrets; never keep a stopped container around holding them.
        must_run=True,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=extra)),
    )
    return container, extra


def _image(parent: pulumi.Resource, name: str, image: str) -> docker.RemoteImage:
    return docker.RemoteImage(name, name=image, keep_locally=True, opts=pulumi.ResourceOptions(parent=parent))


def deploy_kafka_docker(
    parent: pulumi.ComponentResource,
    name: str,
    cluster: Cluster,
    opts: pulumi.ResourceOptions | None = None,
    *,
    stack: str,
    settings: DockerSettings | None = None,
    secret_values: SecretValues | None = None,
) -> DockerKafka:
    """One container per broker of a docker cluster, children of `parent`."""
    settings = settings or DockerSettings()
    specs = docker_broker_specs(cluster, stack, settings)
    image = _image(parent, f"{name}-image", settings.image)
    child = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=parent))
    out = DockerKafka(resources=[image], bootstrap=pulumi.Output.from_input(bootstrap_servers(cluster)))
    for i, spec in enumerate(specs):
        container, extra = _container(spec, f"{name}-broker-{i}", image, secret_values, child)
        out.containers.append(container)
        out.resources += [*extra, container]
    return out


def deploy_connect_docker(
    parent: pulumi.ComponentResource,
    name: str,
    group: WorkerGroup,
    topology: Topology,
    opts: pulumi.ResourceOptions | None = None,
    *,
    stack: str,
    settings: DockerSettings | None = None,
    secret_values: SecretValues | None = None,
) -> DockerConnect:
    """One container per worker of a docker worker group (host network), children of `parent`."""
    settings = settings or DockerSettings()
    specs = docker_connect_specs(group, topology, stack, settings)
    image = _image(parent, f"{name}-image", settings.image)
    child = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=parent))
    out = DockerConnect(resources=[image], url=pulumi.Output.from_input(worker_rest_urls(group)[0]))
    for i, spec in enumerate(specs):
        container, extra = _container(spec, f"{name}-worker-{i}", image, secret_values, child)
        out.containers.append(container)
        out.resources += [*extra, container]
    return out


@dataclass(frozen=True)
class DockerBackend:
    """The docker platform's `PlatformBackend`."""

    settings: DockerSettings | None
    stack: str
    secret_values: SecretValues | None = None

    def deploy_brokers(self, parent: pulumi.ComponentResource, name: str, request: BrokerRequest) -> DeployedBrokers:
        dock = deploy_kafka_docker(
            parent,
            name,
            request.cluster,
            stack=self.stack,
            settings=self.settings,
            secret_values=self.secret_values,
        )
        return DeployedBrokers(resources=tuple(dock.resources))

    def deploy_workers(self, parent: pulumi.ComponentResource, name: str, request: WorkerRequest) -> DeployedWorkers:
        dock = deploy_connect_docker(
            parent,
            name,
            request.group,
            request.topology,
            pulumi.ResourceOptions(depends_on=[request.storage]),
            stack=self.stack,
            settings=self.settings,
            secret_values=self.secret_values,
        )
        return DeployedWorkers(resources=tuple(dock.resources), url=dock.url)
