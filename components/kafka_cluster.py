"""KafkaCluster: one Kafka cluster of the topology, deployed on its platform or adopted.

- `local`: one KRaft JVM per broker (combined broker+controller) bound to 127.0.0.1
  (`components/platform/local/`).
- `kubernetes`: a KRaft StatefulSet with its Services, PodDisruptionBudget and NetworkPolicy
  (`components/platform/kubernetes/`).
- `docker`: one container per broker on the stack's docker network
  (`components/platform/docker/`).
- `external`: an existing cluster adopted by bootstrap address; nothing is deployed or touched
  except the topics the stack is asked to own.

The component is wiring: it validates, hands the brokers to the platform's backend
(`components/platform/contract.py`), then registers the users, ACLs and topics that wait for
them and exports how to connect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi

from components.kafka.acl import Acls
from components.kafka.scram import ScramUsers
from components.kafka.topic import Topic
from components.platform.backends import platform_backend
from components.platform.contract import BrokerRequest, ContainerPlatforms
from components.platform.local.layout import LocalPlatform
from components.platform.local.network import LocalNetwork
from components.platform.local.tls import StackTls
from components.topology import Cluster, SaslMechanism, bootstrap_servers
from components.topology.model import ADMIN_USER
from components.topology.objectives import cluster_retention_ms
from components.topology.security import (
    Acl,
    User,
    admin_bootstrap_client,
    admin_password,
    librdkafka_client,
    stack_managed,
)
from components.topology.tls import local_tls_cluster


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
        network: LocalNetwork | None = None,
    ) -> None:
        # Registered as inputs and again as outputs: stack-level policies read outputs, and
        # register_outputs replaces a component's outputs wholesale.
        self._props = {
            "alias": cluster.alias,
            "platform": cluster.platform.value,
            "brokers": cluster.brokers,
            "datacenter": cluster.datacenter,
            "securityProtocol": cluster.security.protocol.value,
            # How long its topics keep records unless they set retention.ms (-1: unlimited): the
            # retention policy compares it with the outage budget of the flows reading them.
            "logRetentionMs": cluster_retention_ms(cluster.broker_config),
        }
        super().__init__("mm2:index:KafkaCluster", name, self._props, opts)
        self.alias = cluster.alias
        self.brokers = []
        self.pods: dict[str, str] = {}  # where the brokers run as pods (DeployedBrokers.pods)
        self.topics = {}
        bootstrap = bootstrap_servers(cluster)
        secrets: pulumi.Output[Mapping[str, str]] = credentials if credentials is not None else pulumi.Output.secret({})
        security = cluster.security
        if local_tls_cluster(cluster) and tls is None:
            raise ValueError(
                f"KafkaCluster {cluster.alias!r}: {security.protocol.value} needs the stack's TLS material"
            )
        # The PEM CA librdkafka verifies the brokers with (public, not a secret): the stack's own
        # for a local TLS cluster, else the one the cluster's security names (or the system's).
        self.ca_location: str | None = (
            tls.layout.ca_pem if tls is not None and local_tls_cluster(cluster) else security.ca_location
        )
        ca = self.ca_location
        # How the stack itself connects (PLAIN admin on managed clusters, see runtime_config) and
        # how tools connect (SCRAM admin there; the configured user elsewhere).
        admin = secrets.apply(lambda v: _admin_settings(cluster, v, bootstrap_only=True, ca_location=ca))
        self.client = pulumi.Output.secret(
            secrets.apply(lambda v: _admin_settings(cluster, v, bootstrap_only=False, ca_location=ca))
        )

        backend = platform_backend(cluster.platform, local, platforms or ContainerPlatforms(), tls, network)
        if backend is not None:
            request = BrokerRequest(cluster, secrets, admin, users)
            deployed = backend.deploy_brokers(self, name, request)
            self.brokers = list(deployed.resources)
            self.pods = dict(deployed.pods or {})

        after_brokers = pulumi.ResourceOptions(parent=self, depends_on=list(self.brokers))
        if stack_managed(cluster):
            _register_users_and_acls(name, cluster, admin, secrets, users, acls, after_brokers)
        # A topic inside brokers this stack runs goes with them: deleting the cluster does not
        # ask its (possibly dead) brokers to delete each topic first. Removed alone, it is deleted.
        inside = pulumi.ResourceOptions(deleted_with=self) if backend is not None else None
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
                opts=pulumi.ResourceOptions.merge(after_brokers, inside),
            )

        self.bootstrap = pulumi.Output.from_input(bootstrap)
        self.register_outputs({**self._props, "bootstrap": self.bootstrap})


def _register_users_and_acls(
    name: str,
    cluster: Cluster,
    admin: pulumi.Output[dict[str, str]],
    secrets: pulumi.Output[Mapping[str, str]],
    users: Sequence[User],
    acls: Sequence[Acl],
    opts: pulumi.ResourceOptions,
) -> None:
    """A stack-managed cluster's SCRAM credentials and ACLs, once its brokers run."""
    security = cluster.security
    bootstrap = bootstrap_servers(cluster)
    if security.sasl_mechanism is not SaslMechanism.PLAIN:
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
            opts=opts,
        )
    if acls:
        Acls(
            f"{name}-acls",
            cluster=cluster.alias,
            bootstrap=bootstrap,
            client=admin,
            acls=[a.as_dict() for a in acls],
            ephemeral=True,
            opts=opts,
        )


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
