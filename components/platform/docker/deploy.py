"""The `docker` platform: seed 001's single-host layout as pulumi_docker resources.

Brokers of every docker cluster sit on one private network (`mm2-<stack>`) where they reach
each other by container name (INTERNAL and CONTROLLER listeners); each broker's CLIENT
listener is published on 127.0.0.1:port+2i only. Connect workers and Kafka UI use the host
network: the model gives every client the address 127.0.0.1:<published port> and connector
configs carry it, so anything that runs connectors must share the host's loopback.

Secret files (FileConfigProvider secrets, the REST users file, Kafka UI's config) are uploaded
into the containers with contents rendered from the stack's `mm2:secrets` and marked secret.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_docker as docker

from components.platform.contract import BrokerRequest, DeployedBrokers, DeployedWorkers, WorkerRequest
from components.platform.docker.specs import (
    ContainerSpec,
    docker_broker_specs,
    docker_connect_specs,
    docker_kafka_ui_spec,
    docker_prefix,
)
from components.platform.settings import DockerSettings
from components.topology import Cluster, Platform, Topology, WorkerGroup, bootstrap_servers, worker_rest_urls

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


@dataclass
class DockerDeployment:
    network: docker.Network
    clusters: dict[str, DockerKafka]
    groups: dict[str, DockerConnect]
    kafka_ui: docker.Container | None


def docker_network(parent: pulumi.Resource | None, name: str, stack: str) -> docker.Network:
    """The private network every docker broker joins (one per stack)."""
    return docker.Network(
        name,
        name=docker_prefix(stack),
        labels=[docker.NetworkLabelArgs(label="mm2.io/stack", value=stack)],
        opts=pulumi.ResourceOptions(parent=parent),
    )


def _container(
    spec: ContainerSpec,
    resource_name: str,
    image: docker.RemoteImage,
    network: pulumi.Input[str] | None,
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
    networks = None
    if not spec.host_network and network is not None:
        networks = [docker.ContainerNetworksAdvancedArgs(name=network, aliases=list(spec.network_aliases))]
    container = docker.Container(
        resource_name,
        name=spec.name,
        image=image.image_id,
        command=list(spec.command) or None,
        envs=[f"{k}={v}" for k, v in sorted(spec.env.items())],
        uploads=uploads,
        ports=[docker.ContainerPortArgs(internal=i, external=e, ip="127.0.0.1") for i, e in spec.ports] or None,
        network_mode="host" if spec.host_network else None,
        networks_advanced=networks,
        volumes=volumes or None,
        healthcheck=(
            docker.ContainerHealthcheckArgs(tests=list(spec.healthcheck), interval="5s", timeout="3s", retries=30)
            if spec.healthcheck
            else None
        ),
        restart="unless-stopped",
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
    network: pulumi.Input[str],
    opts: pulumi.ResourceOptions | None = None,
    *,
    stack: str,
    settings: DockerSettings | None = None,
    secret_values: SecretValues | None = None,
) -> DockerKafka:
    """One container per broker of a docker cluster, children of `parent`, on `network`."""
    settings = settings or DockerSettings()
    specs = docker_broker_specs(cluster, stack, settings)
    image = _image(parent, f"{name}-image", settings.image)
    child = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=parent))
    out = DockerKafka(resources=[image], bootstrap=pulumi.Output.from_input(bootstrap_servers(cluster)))
    for i, spec in enumerate(specs):
        container, extra = _container(spec, f"{name}-broker-{i}", image, network, secret_values, child)
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
        container, extra = _container(spec, f"{name}-worker-{i}", image, None, secret_values, child)
        out.containers.append(container)
        out.resources += [*extra, container]
    return out


def deploy_kafka_ui_docker(
    parent: pulumi.Resource,
    name: str,
    topology: Topology,
    opts: pulumi.ResourceOptions | None = None,
    *,
    stack: str,
    settings: DockerSettings | None = None,
    secret_values: SecretValues | None = None,
) -> docker.Container:
    """Kafka UI wired to every docker cluster and to each cluster's Connect groups."""
    settings = settings or DockerSettings()
    spec = docker_kafka_ui_spec(topology, stack, settings)
    image = _image(parent, f"{name}-image", settings.kafka_ui_image)
    child = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=parent))
    container, _ = _container(spec, name, image, None, secret_values, child)
    return container


def deploy_docker(
    parent: pulumi.ComponentResource,
    name: str,
    topology: Topology,
    opts: pulumi.ResourceOptions | None = None,
    *,
    stack: str,
    settings: DockerSettings | None = None,
    secret_values: SecretValues | None = None,
) -> DockerDeployment:
    """Seed 001 on one host: the network, every docker cluster's brokers, every docker worker
    group (after its storage cluster) and, when enabled, Kafka UI (after everything it shows)."""
    settings = settings or DockerSettings()
    network = docker_network(parent, f"{name}-network", stack)
    clusters: dict[str, DockerKafka] = {}
    for alias, cluster in topology.clusters.items():
        if cluster.platform is Platform.DOCKER:
            clusters[alias] = deploy_kafka_docker(
                parent,
                f"{name}-{alias}",
                cluster,
                network.name,
                opts,
                stack=stack,
                settings=settings,
                secret_values=secret_values,
            )
    groups: dict[str, DockerConnect] = {}
    for group_name, group in topology.worker_groups.items():
        if group.platform is not Platform.DOCKER:
            continue
        touched = {group.cluster} | {
            end for f in topology.enabled_flows() if f.worker_group == group_name for end in (f.source, f.target)
        }
        waits = [c for a in sorted(touched) if a in clusters for c in clusters[a].containers]
        group_opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=waits))
        groups[group_name] = deploy_connect_docker(
            parent,
            f"{name}-connect-{group_name}",
            group,
            topology,
            group_opts,
            stack=stack,
            settings=settings,
            secret_values=secret_values,
        )
    ui = None
    if settings.kafka_ui:
        everything = [c for d in (*clusters.values(), *groups.values()) for c in d.containers]
        ui = deploy_kafka_ui_docker(
            parent,
            f"{name}-kafka-ui",
            topology,
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=everything)),
            stack=stack,
            settings=settings,
            secret_values=secret_values,
        )
    return DockerDeployment(network=network, clusters=clusters, groups=groups, kafka_ui=ui)


@dataclass(frozen=True)
class DockerBackend:
    """The docker platform's `PlatformBackend`: `network` is the stack's docker network."""

    settings: DockerSettings | None
    stack: str
    network: pulumi.Input[str] | None
    secret_values: SecretValues | None = None

    def deploy_brokers(self, parent: pulumi.ComponentResource, name: str, request: BrokerRequest) -> DeployedBrokers:
        if self.network is None:
            raise ValueError(f"KafkaCluster {request.cluster.alias!r}: docker clusters need the stack's docker network")
        dock = deploy_kafka_docker(
            parent,
            name,
            request.cluster,
            self.network,
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
