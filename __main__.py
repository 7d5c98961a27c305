"""Pulumi program: read the `mm2` stack config, build the components, export what they made.

Everything is validated before any resource is registered, so bad input fails the preview with
every problem listed and nothing deployed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pulumi

from components.connect_group import ConnectWorkerGroup, with_exactly_once_stages
from components.credentials import Credentials, given_only
from components.kafka_cluster import KafkaCluster
from components.outputs.contract import ClusterExport, ConnectGroupExport
from components.platform.contract import ContainerPlatforms
from components.platform.docker.deploy import docker_network
from components.platform.local.layout import LocalPlatform, run_root
from components.platform.local.tls import stack_tls, tls_layout
from components.platform.settings import PlatformSettingsError, docker_settings, kubernetes_settings
from components.replication_flow import ReplicationFlow
from components.topology import (
    Platform,
    Topology,
    TopologyError,
    bootstrap_servers,
    parse_topology,
    with_secrets_file,
)
from components.topology.jaas import quotable_password_keys
from components.topology.security import (
    cluster_acls,
    cluster_users,
    generated_secret_keys,
    required_secret_keys,
    security_problems,
)
from components.topology.tls import with_local_tls

PROJECT_DIR = Path(__file__).resolve().parent
NAMESPACE = "mm2"
SECTIONS = ("defaults", "clusters", "workerGroups", "flows")


def read_stack_config() -> dict[str, object]:
    config = pulumi.Config(NAMESPACE)
    return {key: value for key in SECTIONS if (value := config.get_object(key)) is not None}


def local_platform(stack: str, needed: bool) -> LocalPlatform:
    libs = os.environ.get("MM2_KAFKA_LIBS", "")
    if needed and not (libs and Path(libs).is_dir()):
        raise pulumi.RunError(
            "the local platform needs the Kafka jars, but MM2_KAFKA_LIBS is not set or missing. "
            "Fix: run bin/bootstrap, then use bin/pulumi (it sets the environment) instead of plain `pulumi`."
        )
    return LocalPlatform(stack=stack, run_root=run_root(PROJECT_DIR, stack), kafka_libs=libs)


def local_secrets_files(topology: Topology, local: LocalPlatform) -> Topology:
    """Point each local worker group's placeholders at the file the stack writes for it."""
    for name, group in topology.worker_groups.items():
        if group.platform is Platform.LOCAL and not group.url:
            topology = with_secrets_file(topology, name, local.group_secrets_file(name))
    return topology


def cluster_export(alias: str, topology: Topology, cluster: KafkaCluster, credentials: Credentials) -> ClusterExport:
    model = topology.clusters[alias]
    users = cluster_users(topology, alias)
    # The Output fields resolve when exported, each keeping its own secrecy: bootstrap stays
    # readable in `pulumi stack output` while the client settings and passwords are secrets.
    return ClusterExport(
        alias=alias,
        bootstrap=bootstrap_servers(model),
        security_protocol=model.security.protocol.value,
        sasl_mechanism=model.security.sasl_mechanism.value if model.security.sasl_mechanism else None,
        client=cluster.client,  # secret: librdkafka settings for the admin
        users=pulumi.Output.secret(credentials.values.apply(lambda v: {u.name: v[u.password.key] for u in users})),
        ca_location=cluster.ca_location,  # local TLS: the stack CA as PEM (public)
    )


def group_export(name: str, topology: Topology, group: ConnectWorkerGroup) -> ConnectGroupExport:
    # url, auth (secret: {username, password}, or None without restAuth) and caPem are Outputs.
    declared = topology.worker_groups[name]
    return ConnectGroupExport(
        name=name,
        url=group.url,
        cluster=declared.cluster,
        auth=group.auth,
        ca_pem=group.ca_pem,
        offset_topic=declared.offset_topic,
    )


def container_platforms(stack: str, topology: Topology, secrets: Any) -> ContainerPlatforms:
    """Settings of the `kubernetes` and `docker` platforms (namespace `mm2-platform`), checked
    before any resource is registered."""
    platform_config = pulumi.Config("mm2-platform")
    try:
        k8s = kubernetes_settings(platform_config.get_object("kubernetes"))
        dock = docker_settings(platform_config.get_object("docker"))
    except PlatformSettingsError as exc:
        raise pulumi.RunError(f"invalid stack config for stack {stack!r}:\n{exc}") from None
    uses_docker = any(c.platform is Platform.DOCKER for c in topology.clusters.values())
    network = docker_network(None, "docker-network", stack).name if uses_docker else None
    return ContainerPlatforms(kubernetes=k8s, docker=dock, docker_network=network, secret_values=secrets)


def main() -> None:
    stack = pulumi.get_stack()
    try:
        topology = parse_topology(read_stack_config())
    except TopologyError as exc:
        raise pulumi.RunError(f"invalid stack config for stack {stack!r}:\n{exc}") from None
    problems = security_problems(topology)
    if problems:
        raise pulumi.RunError(f"invalid stack config for stack {stack!r}:\n" + "\n".join(problems))

    local = local_platform(stack, any(c.platform is Platform.LOCAL for c in topology.clusters.values()))
    topology = local_secrets_files(topology, local)
    topology = with_local_tls(topology, tls_layout(local.run_root))
    topology = with_exactly_once_stages(topology, local)
    config = pulumi.Config(NAMESPACE)
    generated, required = generated_secret_keys(topology), required_secret_keys(topology)
    given = config.get_secret_object("secrets")
    credentials = Credentials(
        "credentials",
        generated=list(generated),
        required=list(required),
        given=given,
        rotate=config.get_object("rotate") or {},
        quotable=sorted(quotable_password_keys(topology)),
    )
    secrets = credentials.values
    # What adopted clusters and Connect endpoints authenticate with, known at preview.
    adopted = given_only(given, set(required) - set(generated))
    platforms = container_platforms(stack, topology, secrets)
    tls = stack_tls(stack, topology, local.run_root, secrets)
    clusters = {
        alias: KafkaCluster(
            f"kafka-{alias}",
            cluster,
            local,
            credentials=adopted if cluster.platform is Platform.EXTERNAL else secrets,
            users=cluster_users(topology, alias),
            acls=cluster_acls(topology, alias),
            platforms=platforms,
            tls=tls,
        )
        for alias, cluster in topology.clusters.items()
    }
    groups = {
        name: ConnectWorkerGroup(
            f"connect-{name}",
            group,
            topology,
            clusters,
            local,
            credentials=adopted if group.platform is Platform.EXTERNAL else secrets,
            platforms=platforms,
            tls=tls,
        )
        for name, group in topology.worker_groups.items()
    }
    flows = {
        flow.name: ReplicationFlow(
            f"flow-{flow.slug}", flow, topology, groups[flow.worker_group], clusters, credentials=secrets
        )
        for flow in topology.enabled_flows()
    }

    pulumi.export(
        "clusters", {alias: cluster_export(alias, topology, c, credentials).to_json() for alias, c in clusters.items()}
    )
    pulumi.export("connect", {name: group_export(name, topology, g).to_json() for name, g in groups.items()})
    pulumi.export("flows", {name: f.summary for name, f in flows.items()})


main()
