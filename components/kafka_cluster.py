"""KafkaCluster: one Kafka cluster of the topology, deployed on its platform or adopted.

- `local`: one KRaft JVM per broker (combined broker+controller) bound to 127.0.0.1.
- `external`: an existing cluster adopted by bootstrap address; nothing is deployed or touched
  except the topics the stack is asked to own.
- `kubernetes` / `docker`: not implemented yet (fails at preview with a clear message).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.kafka.acl import Acls
from components.kafka.scram import ScramUsers
from components.kafka.topic import Topic
from components.local.provider import LocalProcess
from components.local.tls import StackTls
from components.platform.docker import deploy_kafka_docker
from components.platform.kubernetes import deploy_kafka_kubernetes
from components.platform.manifests import DockerSettings, KubernetesSettings, kraft_cluster_id
from components.topology import (
    Cluster,
    Platform,
    SaslMechanism,
    bootstrap_servers,
    broker_ports,
    broker_properties,
)
from components.topology.model import ADMIN_USER
from components.topology.runtime_config import broker_secret_keys
from components.topology.security import (
    Acl,
    User,
    admin_bootstrap_client,
    admin_password,
    librdkafka_client,
    render_secrets,
    stack_managed,
)
from components.topology.tls import cluster_leaf_name, local_tls_cluster

KAFKA_MAIN = "kafka.Kafka"
BROKER_SECRETS = "config/secrets.properties"


@dataclass(frozen=True)
class ContainerPlatforms:
    """Settings for clusters and worker groups on `kubernetes` or `docker` (stack config
    namespace `mm2-platform`), and the secret values their pods or containers mount."""

    kubernetes: KubernetesSettings | None = None
    docker: DockerSettings | None = None
    docker_network: pulumi.Input[str] | None = None
    secret_values: pulumi.Input[Mapping[str, str]] | None = None


@dataclass(frozen=True)
class LocalPlatform:
    """Where the local platform keeps its processes and which jars it runs."""

    stack: str
    run_root: str  # <project>/.mm2/run/<stack>
    kafka_libs: str  # classpath directory written by bin/bootstrap


class KafkaCluster(pulumi.ComponentResource):
    """A Kafka cluster, its users and ACLs (when the stack runs it with SASL), and its topics.

    `credentials` is the stack's secret map of passwords by secret key (see
    components/credentials.py); `users` and `acls` come from components/topology/security.py.
    `client` (secret) is how any tool connects as the cluster's admin: librdkafka settings
    without `bootstrap.servers`.
    """

    bootstrap: pulumi.Output[str]
    client: pulumi.Output[dict[str, str]]
    alias: str
    brokers: list[pulumi.Resource]
    topics: dict[str, Topic]

    def __init__(
        self,
        name: str,
        cluster: Cluster,
        local: LocalPlatform,
        credentials: pulumi.Output[Mapping[str, str]] | None = None,
        users: Sequence[User] = (),
        acls: Sequence[Acl] = (),
        opts: pulumi.ResourceOptions | None = None,
        platforms: ContainerPlatforms | None = None,
        tls: StackTls | None = None,
    ) -> None:
        # Registered as inputs and again as outputs: stack-level policies read outputs, and
        # register_outputs replaces a component's outputs wholesale.
        self._props = {
            "alias": cluster.alias,
            "platform": cluster.platform.value,
            "brokers": cluster.brokers,
            "datacenter": cluster.datacenter,
            "securityProtocol": cluster.security.protocol.value,
        }
        super().__init__("mm2:index:KafkaCluster", name, self._props, opts)
        self.alias = cluster.alias
        self.brokers = []
        self.topics = {}
        bootstrap = bootstrap_servers(cluster)
        secrets: pulumi.Output[Mapping[str, str]] = credentials if credentials is not None else pulumi.Output.secret({})
        managed = stack_managed(cluster)
        security = cluster.security
        if local_tls_cluster(cluster) and tls is None:
            raise ValueError(
                f"KafkaCluster {cluster.alias!r}: {security.protocol.value} needs the stack's TLS material"
            )
        # The PEM CA librdkafka verifies a local TLS cluster's brokers with (public, not a secret).
        self.ca_location: str | None = tls.layout.ca_pem if tls is not None and local_tls_cluster(cluster) else None
        ca = self.ca_location
        # How the stack itself connects (PLAIN admin on managed clusters, see runtime_config) and
        # how tools connect (SCRAM admin there; the configured user elsewhere).
        admin = secrets.apply(lambda v: _admin_settings(cluster, v, bootstrap_only=True, ca_location=ca))
        self.client = pulumi.Output.secret(
            secrets.apply(lambda v: _admin_settings(cluster, v, bootstrap_only=False, ca_location=ca))
        )

        platforms = platforms or ContainerPlatforms()
        if cluster.platform is Platform.LOCAL:
            self.brokers = self._local_brokers(name, cluster, local, secrets, users, admin, tls)
        elif cluster.platform is Platform.KUBERNETES:
            k8s = deploy_kafka_kubernetes(
                self,
                name,
                cluster,
                settings=platforms.kubernetes,
                stack=local.stack,
                secret_values=platforms.secret_values,
            )
            self.brokers = list(k8s.resources)
        elif cluster.platform is Platform.DOCKER:
            if platforms.docker_network is None:
                raise ValueError(f"KafkaCluster {cluster.alias!r}: docker clusters need the stack's docker network")
            dock = deploy_kafka_docker(
                self,
                name,
                cluster,
                platforms.docker_network,
                stack=local.stack,
                settings=platforms.docker,
                secret_values=platforms.secret_values,
            )
            self.brokers = list(dock.resources)

        after_brokers = pulumi.ResourceOptions(parent=self, depends_on=list(self.brokers))
        if managed and security.sasl_mechanism is not SaslMechanism.PLAIN:
            # Every user, admin included, gets its SCRAM credential (PLAIN users live in the
            # brokers' JAAS table instead).
            ScramUsers(
                f"{name}-scram-users",
                cluster=cluster.alias,
                bootstrap=bootstrap,
                client=admin,
                mechanism=str(security.sasl_mechanism.value if security.sasl_mechanism else ""),
                users=secrets.apply(lambda v: {u.name: v[u.password.key] for u in users}),
                ephemeral=True,
                opts=after_brokers,
            )
        if managed and acls:
            Acls(
                f"{name}-acls",
                cluster=cluster.alias,
                bootstrap=bootstrap,
                client=admin,
                acls=[a.as_dict() for a in acls],
                ephemeral=True,
                opts=after_brokers,
            )

        for topic in cluster.topics:
            self.topics[topic.name] = Topic(
                f"{name}-topic-{topic.name}",
                cluster=cluster.alias,
                bootstrap=bootstrap,
                name=topic.name,
                partitions=topic.partitions,
                replication_factor=topic.replication_factor,
                config=dict(topic.config),
                client=admin,
                opts=after_brokers,
            )

        self.bootstrap = pulumi.Output.from_input(bootstrap)
        self.register_outputs({**self._props, "bootstrap": self.bootstrap})

    def _local_brokers(
        self,
        name: str,
        cluster: Cluster,
        local: LocalPlatform,
        secrets: pulumi.Output[Mapping[str, str]],
        users: Sequence[User],
        admin: pulumi.Output[dict[str, str]],
        tls: StackTls | None,
    ) -> list[LocalProcess]:
        cluster_id = kraft_cluster_id(local.stack, cluster.alias)
        # The brokers resolve their own password (and, on a PLAIN cluster, every user's) and
        # their keystore and truststore passwords from a 0600 file in their run directory:
        # server.properties only holds placeholders.
        broker_users = {u.name: u.password for u in users if u.name != ADMIN_USER}
        broker_keys = list(broker_secret_keys(cluster))
        if cluster.security.protocol.uses_sasl and cluster.security.sasl_mechanism is SaslMechanism.PLAIN:
            broker_keys += [ref.key for ref in broker_users.values()]
        tls_on = tls is not None and local_tls_cluster(cluster)
        restart_on = tls.restart_on(cluster_leaf_name(cluster.alias)) if tls is not None and tls_on else None
        brokers = []
        for node_id, (client_port, controller_port) in enumerate(broker_ports(cluster)):
            run_dir = f"{local.run_root}/{cluster.alias}/broker-{node_id}"
            secrets_file = f"{run_dir}/{BROKER_SECRETS}"
            files: pulumi.Input[Mapping[str, str]] = {}
            if broker_keys:
                files = secrets.apply(lambda v: {BROKER_SECRETS: render_secrets({k: v[k] for k in broker_keys})})
            brokers.append(
                LocalProcess(
                    f"{name}-broker-{node_id}",
                    component=f"KafkaCluster {cluster.alias!r}, broker {node_id}",
                    marker=f"{local.stack}/{cluster.alias}/broker-{node_id}",
                    main_class=KAFKA_MAIN,
                    classpath_dir=local.kafka_libs,
                    run_dir=run_dir,
                    properties=broker_properties(
                        cluster,
                        node_id,
                        f"{run_dir}/data",
                        secrets_file=secrets_file,
                        users=broker_users,
                        tls=tls.layout if tls is not None and tls_on else None,
                    ),
                    ports=[client_port, controller_port],
                    config_key=f"mm2:clusters.{cluster.alias}.port",
                    cluster_id=cluster_id,
                    ready=admin.apply(functools.partial(_kafka_probe, f"127.0.0.1:{client_port}")),
                    secret_files=files,
                    restart_on=restart_on,
                    heap="512m",
                    opts=pulumi.ResourceOptions(parent=self),
                )
            )
        return brokers


def _kafka_probe(bootstrap: str, client: Mapping[str, str]) -> dict[str, Any]:
    """The broker's readiness probe: a metadata request as the stack's admin."""
    return {"kind": "kafka", "bootstrap": bootstrap, "client": dict(client)}


def _admin_settings(
    cluster: Cluster, values: Mapping[str, Any], *, bootstrap_only: bool, ca_location: str | None = None
) -> dict[str, str]:
    """librdkafka settings for the cluster's admin (managed clusters) or its configured user.

    `bootstrap_only`: the PLAIN admin the stack itself uses, valid from the moment the brokers
    start; otherwise SCRAM (the cluster's mechanism) once ScramUsers created the credential.
    """
    security = cluster.security
    if stack_managed(cluster):
        password = str(values[admin_password(cluster.alias).key])
        if bootstrap_only:
            return admin_bootstrap_client(security, password, ca_location)
        return librdkafka_client(security, ADMIN_USER, password, ca_location)
    if security.protocol.uses_sasl and security.password is not None:
        return librdkafka_client(
            security, security.username or "", str(values.get(security.password.key, "")), ca_location
        )
    settings = {"security.protocol": security.protocol.value}
    if ca_location and security.protocol.uses_tls:
        settings["ssl.ca.location"] = ca_location
    return settings
