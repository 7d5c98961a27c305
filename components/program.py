"""The Pulumi program: stack config -> one validation pass -> components -> exports.

`__main__.py` only calls `run()`. The steps are apart so tests drive the real program under
Pulumi's mocks with a `StackConfig` they build (no `pulumi.Config`, no environment):

- `validate` reads nothing and registers nothing: it parses the `mm2` topology, checks its
  security, parses the `mm2-platform` settings, checks that the local platform has its Kafka
  jars, that the docker platform's engine has its image and the host its ports (`StackConfig.docker_problems`) and
  that the kubernetes platform's contexts exist and answer (`StackConfig.kubernetes_problems`),
  and raises one `StackConfigError` listing every problem it found;
- `deploy` prepares the platforms (the local run directory's facts) and registers the
  components, in that order, only once the whole config is known to be good;
- `export` publishes the stack-outputs contract.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi

from components.connect_group import ConnectWorkerGroup, with_exactly_once_stages
from components.credentials import Credentials, given_only
from components.kafka_cluster import KafkaCluster
from components.outputs.contract import ClusterExport, ConnectGroupExport
from components.platform.contract import ContainerPlatforms
from components.platform.docker.engine import docker_problems
from components.platform.docker.specs import DockerClaim, docker_claims
from components.platform.kubernetes.access import Target, access_problems, capacity_notes, targets
from components.platform.kubernetes.in_cluster import public_bootstrap_notes, with_public_clusters
from components.platform.local.layout import NETWORK_PATH, LocalPlatform, run_root
from components.platform.local.network import LocalNetwork, Network, network_problems
from components.platform.local.tls import stack_tls, tls_layout
from components.platform.secret_files import container_secret_keys
from components.platform.settings import (
    DockerSettings,
    KubernetesSettings,
    PlatformSettingsError,
    docker_settings,
    kubernetes_settings,
)
from components.replication_flow import ReplicationFlow, flow_export
from components.switchover import Switchover, pair_export
from components.topology import (
    Platform,
    Topology,
    TopologyError,
    bootstrap_servers,
    parse_topology,
    with_secrets_file,
    worker_metrics_urls,
    worker_rest_urls,
)
from components.topology.connectors import flow_connectors
from components.topology.emulated_network import NetworkPlan
from components.topology.emulation import emulation_problems, emulation_warnings, with_network
from components.topology.jaas import quotable_password_keys
from components.topology.link_preview import broker_lines
from components.topology.links import with_link_broker_settings
from components.topology.model import Pair
from components.topology.objectives import drain_warnings
from components.topology.security import (
    cluster_acls,
    cluster_users,
    generated_secret_keys,
    required_secret_keys,
    rotation_problems,
    security_problems,
)
from components.topology.tls import with_local_tls

NAMESPACE = "mm2"
PLATFORM_NAMESPACE = "mm2-platform"
SECTIONS = ("defaults", "clusters", "workerGroups", "flows", "failover", "links")
PLATFORM_SECTIONS = ("kubernetes", "docker")
KAFKA_LIBS_ENV = "MM2_KAFKA_LIBS"


class StackConfigError(ValueError):
    """Every problem in a stack's `mm2` and `mm2-platform` config, and in what the platforms it
    uses need on this machine, reported at once."""

    def __init__(self, stack: str, problems: list[str]) -> None:
        self.stack = stack
        self.problems = tuple(problems)
        super().__init__(f"invalid stack config for stack {stack!r}:\n" + "\n".join(problems))


@dataclass(frozen=True)
class StackConfig:
    """What the program reads before it registers anything."""

    stack: str
    mm2: Mapping[str, Any]
    """The `mm2` namespace's sections (defaults, clusters, workerGroups, flows) as given."""
    platform: Mapping[str, Any] = field(default_factory=dict)
    """The `mm2-platform` namespace's sections (kubernetes, docker) as given."""
    project_dir: str = "."
    """Where the local platform keeps its run directory (`<project>/.mm2/run/<stack>`)."""
    kafka_libs: str = ""
    """The Kafka jars the local platform starts its JVMs from (bin/pulumi sets MM2_KAFKA_LIBS)."""
    given: Any = None
    """`mm2:secrets`: a secret Output of the passwords the user gives, or None."""
    rotate: Mapping[str, Any] = field(default_factory=dict)
    """`mm2:rotate`: secret key -> a token; changing the token generates that password anew."""
    docker_problems: Callable[[Sequence[str], Sequence[DockerClaim]], list[str]] = lambda images, claims: []
    """A problem per image the docker platform's engine lacks, per port its containers need that
    something else holds and per data volume another stack made (the program asks the engine)."""
    kubernetes_problems: Callable[[Sequence[Target]], list[str]] = lambda wanted: []
    """A problem per kubeconfig context the kubernetes platform cannot use: missing, or its API
    server not answering (the program reads the kubeconfig and dials each server)."""
    kubernetes_warnings: Callable[[Topology, KubernetesSettings], list[str]] = lambda topology, settings: []
    """What the preview warns about the Kubernetes clusters it can read: pods that would not fit the
    nodes (the program lists the nodes of each context; `capacity.py` compares)."""
    network_problems: Callable[[NetworkPlan], list[str]] = lambda plan: []
    """Why this machine cannot emulate the stack's links on the local platform (root, vde2)."""
    clock: Callable[[], float] = time.time
    """Now, in seconds since the epoch: a flow's `lossAcknowledged` may not be later."""


@dataclass(frozen=True)
class ValidStack:
    """A stack config that passed every check."""

    topology: Topology
    kubernetes: KubernetesSettings
    docker: DockerSettings


@dataclass(frozen=True)
class Deployed:
    """What the program registered, keyed as the config names it."""

    credentials: Credentials
    topology: Topology
    clusters: dict[str, KafkaCluster]
    groups: dict[str, ConnectWorkerGroup]
    flows: dict[str, ReplicationFlow]
    switchovers: dict[str, Switchover] = field(default_factory=dict)


def read_stack_config(project_dir: str | Path) -> StackConfig:
    config = pulumi.Config(NAMESPACE)
    platform = pulumi.Config(PLATFORM_NAMESPACE)
    return StackConfig(
        stack=pulumi.get_stack(),
        mm2={key: value for key in SECTIONS if (value := config.get_object(key)) is not None},
        platform={key: value for key in PLATFORM_SECTIONS if (value := platform.get_object(key)) is not None},
        project_dir=str(project_dir),
        kafka_libs=os.environ.get(KAFKA_LIBS_ENV, ""),
        given=config.get_secret_object("secrets"),
        rotate=config.get_object("rotate") or {},
        docker_problems=docker_problems,
        kubernetes_problems=access_problems,
        kubernetes_warnings=capacity_notes,
        network_problems=network_problems,
    )


def validate(config: StackConfig) -> ValidStack:
    """The whole config checked in one pass: raises one StackConfigError naming every problem."""
    problems: list[str] = []
    topology: Topology | None = None
    try:
        topology = parse_topology(dict(config.mm2), now_ms=int(config.clock() * 1000))
    except TopologyError as exc:
        problems.append(str(exc))
    if topology is not None:
        problems += security_problems(topology) + rotation_problems(topology, config.rotate)
        problems += emulation_problems(topology)
        topology = with_network(topology, config.stack, run_root(config.project_dir, config.stack))
        topology = with_link_broker_settings(topology)
        if topology.network is not None:
            problems += config.network_problems(topology.network)
        if _uses_local(topology) and not (config.kafka_libs and Path(config.kafka_libs).is_dir()):
            problems.append(
                f"the local platform needs the Kafka jars, but {KAFKA_LIBS_ENV} is not set or missing. "
                "Fix: run bin/bootstrap, then use bin/pulumi (it sets the environment) instead of plain `pulumi`."
            )
    kubernetes, docker = _platform_settings(config.platform, problems)
    if topology is not None and docker is not None and _uses_docker(topology):
        problems += config.docker_problems([docker.image], docker_claims(topology, config.stack))
    if topology is not None and kubernetes is not None and not problems:
        # Only a config good in itself is worth dialing clusters for.
        problems += config.kubernetes_problems(targets(topology, kubernetes))
    if problems or topology is None or kubernetes is None or docker is None:
        raise StackConfigError(config.stack, problems)
    return ValidStack(topology, kubernetes, docker)


def _platform_settings(
    raw: Mapping[str, Any], problems: list[str]
) -> tuple[KubernetesSettings | None, DockerSettings | None]:
    kubernetes = docker = None
    try:
        kubernetes = kubernetes_settings(raw.get("kubernetes"))
    except PlatformSettingsError as exc:
        problems.append(str(exc))
    try:
        docker = docker_settings(raw.get("docker"))
    except PlatformSettingsError as exc:
        problems.append(str(exc))
    return kubernetes, docker


def _uses_local(topology: Topology) -> bool:
    return any(c.platform is Platform.LOCAL for c in topology.clusters.values())


def _uses_docker(topology: Topology) -> bool:
    clusters = any(c.platform is Platform.DOCKER for c in topology.clusters.values())
    return clusters or any(g.platform is Platform.DOCKER for g in topology.worker_groups.values())


def local_secrets_files(topology: Topology, local: LocalPlatform) -> Topology:
    """Point each local worker group's placeholders at the file the stack writes for it."""
    for name, group in topology.worker_groups.items():
        if group.platform is Platform.LOCAL and not group.url:
            topology = with_secrets_file(topology, name, local.group_secrets_file(name))
    return topology


def container_platforms(valid: ValidStack, secrets: Any) -> ContainerPlatforms:
    """The `kubernetes` and `docker` platforms' settings and the secret values they mount."""
    return ContainerPlatforms(kubernetes=valid.kubernetes, docker=valid.docker, secret_values=secrets)


def deploy(config: StackConfig, valid: ValidStack) -> Deployed:
    """Prepare the platforms and register every component of a validated stack."""
    stack = config.stack
    local = LocalPlatform(stack=stack, run_root=run_root(config.project_dir, stack), kafka_libs=config.kafka_libs)
    topology = local_secrets_files(valid.topology, local)
    topology = with_local_tls(topology, tls_layout(local.run_root))
    topology = with_exactly_once_stages(topology, local)
    topology = with_public_clusters(topology, valid.kubernetes)
    generated = generated_secret_keys(topology)
    # The container platforms' Secrets hold more than the connectors resolve (the brokers' TLS
    # store passwords): the stack writes them, so they must be given too.
    required = sorted({*required_secret_keys(topology), *container_secret_keys(topology)})
    credentials = Credentials(
        "credentials",
        generated=list(generated),
        required=list(required),
        given=config.given,
        rotate=dict(config.rotate),
        quotable=sorted(quotable_password_keys(topology)),
    )
    secrets = credentials.values
    # What adopted clusters and Connect endpoints authenticate with, known at preview.
    adopted = given_only(config.given, set(required) - set(generated))
    platforms = container_platforms(valid, secrets)
    in_cluster = public_bootstrap_notes(topology, valid.kubernetes)
    for warning in [
        *config.kubernetes_warnings(topology, valid.kubernetes),
        *in_cluster,
        *emulation_warnings(topology),
    ]:
        pulumi.log.warn(warning)
    tls = stack_tls(stack, topology, local.run_root, secrets)
    network = _network(topology, local)
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
            network=network,
        )
        for alias, cluster in topology.clusters.items()
    }
    _say_broker_settings(topology, clusters)
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
            network=network,
        )
        for name, group in topology.worker_groups.items()
    }
    partial = Deployed(credentials, topology, clusters, groups, {})
    switchovers = {pair.name: _switchover(pair, partial) for pair in topology.pairs}
    after = {name: [switchovers[p.name]] for p in topology.pairs for name in (p.active_flow, p.standby_flow)}
    flows = {
        flow.name: ReplicationFlow(
            f"flow-{flow.slug}",
            flow,
            topology,
            groups[flow.worker_group],
            clusters,
            credentials=secrets,
            after=after.get(flow.name, []),
        )
        for flow in topology.enabled_flows()
    }
    return Deployed(credentials, topology, clusters, groups, flows, switchovers)


def _say_broker_settings(topology: Topology, clusters: Mapping[str, KafkaCluster]) -> None:
    """The preview's lines on the broker settings derived from WAN links, on each cluster."""
    for alias, resource in clusters.items():
        info, warnings = broker_lines(topology, alias)
        for line in info:
            pulumi.log.info(f"KafkaCluster {line}", resource=resource)
        for line in warnings:
            pulumi.log.warn(f"KafkaCluster {line}", resource=resource)


def _network(topology: Topology, local: LocalPlatform) -> LocalNetwork | None:
    """The emulated network the stack's local datacenters run in, when its links are emulated."""
    if topology.network is None:
        return None
    resource = Network("network", topology.network, local.run_dir(NETWORK_PATH), pulumi.ResourceOptions())
    return LocalNetwork(resource, topology.network)


def _switchover(pair: Pair, deployed: Deployed) -> Switchover:
    """A pair's Switchover, handed the outputs contract's view of its clusters, groups and flows."""
    topology = deployed.topology
    flows = [topology.flow(pair.active_flow), topology.flow(pair.standby_flow)]
    exports = {
        "clusters": {alias: cluster_export(alias, deployed).to_json() for alias in (pair.first, pair.second)},
        "connect": {f.worker_group: group_export(f.worker_group, deployed).to_json() for f in flows},
        "flows": {f.name: flow_export(f, topology, flow_connectors(topology, f), {}) for f in flows},
    }
    resources: list[pulumi.Resource] = [deployed.clusters[pair.first], deployed.clusters[pair.second]]
    resources += [deployed.groups[f.worker_group] for f in flows]
    switchover = Switchover(
        f"failover-{pair.first}-{pair.second}",
        pair,
        topology,
        exports=pulumi.Output.from_input(exports),
        opts=pulumi.ResourceOptions(depends_on=resources),
    )
    for warning in drain_warnings(pair, topology):
        pulumi.log.warn(warning, resource=switchover)
    return switchover


def cluster_export(alias: str, deployed: Deployed) -> ClusterExport:
    model = deployed.topology.clusters[alias]
    cluster = deployed.clusters[alias]
    users = cluster_users(deployed.topology, alias)
    # The Output fields resolve when exported, each keeping its own secrecy: bootstrap stays
    # readable in `pulumi stack output` while the client settings and passwords are secrets.
    values = deployed.credentials.values
    return ClusterExport(
        alias=alias,
        bootstrap=bootstrap_servers(model),
        security_protocol=model.security.protocol.value,
        sasl_mechanism=model.security.sasl_mechanism.value if model.security.sasl_mechanism else None,
        client=_resolved_on_export(cluster.client),  # secret: librdkafka settings for the admin
        users=_resolved_on_export(
            pulumi.Output.secret(values.apply(lambda v: {u.name: v[u.password.key] for u in users}))
        ),
        ca_location=_resolved_on_export(cluster.ca_location),  # local TLS: the stack CA as PEM (public)
        pods=cluster.pods,
    )


def group_export(name: str, deployed: Deployed) -> ConnectGroupExport:
    # url, auth (secret: {username, password}, or None without restAuth) and caPem are Outputs.
    declared = deployed.topology.worker_groups[name]
    group = deployed.groups[name]
    return ConnectGroupExport(
        name=name,
        url=_resolved_on_export(group.url),
        cluster=declared.cluster,
        auth=_resolved_on_export(group.auth),
        ca_pem=_resolved_on_export(group.ca_pem),
        offset_topic=declared.offset_topic,
        worker_urls=worker_rest_urls(declared) if declared.platform in _OWN_WORKER_URLS and not declared.url else (),
        lag_url=_resolved_on_export(group.lag_url) or "",
        metrics_urls=worker_metrics_urls(declared),
        pods=group.pods,
    )


# Platforms where every worker has its own REST URL on this machine (others: one URL for the group).
_OWN_WORKER_URLS = frozenset({Platform.LOCAL, Platform.DOCKER})


def _resolved_on_export(value: pulumi.Input[Any] | None) -> Any:
    """An Output in a field of the outputs contract: `to_json` only places it under its key and
    `pulumi.export` resolves it, so the contract's plain field types hold in what is exported."""
    return value


def export(deployed: Deployed) -> None:
    pulumi.export("clusters", {alias: cluster_export(alias, deployed).to_json() for alias in deployed.clusters})
    pulumi.export("connect", {name: group_export(name, deployed).to_json() for name in deployed.groups})
    pulumi.export("flows", {name: f.summary for name, f in deployed.flows.items()})
    if deployed.switchovers:
        pulumi.export("failover", {name: failover_export(s) for name, s in deployed.switchovers.items()})


def failover_export(switchover: Switchover) -> pulumi.Output[dict[str, Any]]:
    """A pair's active side, where each flow it stopped stopped, its latest switchover, and what
    its fence holds (principals, and the flows' patterns that select the fenced topics)."""
    parts = pulumi.Output.all(
        pair=switchover.pair, cuts=switchover.cuts, last=switchover.last, patterns=switchover.patterns
    )
    return parts.apply(lambda state: pair_export(state).to_json())


def program(config: StackConfig) -> Deployed:
    """Validate, then deploy and export: what `pulumi up` and `pulumi preview` run."""
    valid = validate(config)
    deployed = deploy(config, valid)
    export(deployed)
    return deployed


def run(project_dir: str | Path) -> None:
    """The program's entry point: a config problem is bad input, not a failed deployment."""
    try:
        program(read_stack_config(project_dir))
    except StackConfigError as exc:
        raise pulumi.RunError(str(exc)) from None
