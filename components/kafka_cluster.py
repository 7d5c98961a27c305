"""KafkaCluster: one Kafka cluster of the topology, deployed on its platform or adopted.

- `local`: one KRaft JVM per broker (combined broker+controller) bound to 127.0.0.1.
- `external`: an existing cluster adopted by bootstrap address; nothing is deployed or touched
  except the topics the stack is asked to own.
- `kubernetes` / `docker`: not implemented yet (fails at preview with a clear message).
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

import pulumi

from components.kafka.topic import Topic
from components.local.provider import LocalProcess
from components.topology import Cluster, Platform, bootstrap_servers, broker_ports, broker_properties

KAFKA_MAIN = "kafka.Kafka"


@dataclass(frozen=True)
class LocalPlatform:
    """Where the local platform keeps its processes and which jars it runs."""

    stack: str
    run_root: str  # <project>/.mm2/run/<stack>
    kafka_libs: str  # classpath directory written by bin/bootstrap


def kraft_cluster_id(stack: str, alias: str) -> str:
    """A stable KRaft cluster id (base64url of 16 bytes) per stack and cluster.

    Stable so that an update or a restart never re-formats storage with a different id.
    """
    digest = hashlib.sha256(f"mm2/{stack}/{alias}".encode()).digest()[:16]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


class KafkaCluster(pulumi.ComponentResource):
    """A Kafka cluster and the topics the stack owns on it."""

    bootstrap: pulumi.Output[str]
    alias: str
    brokers: list[LocalProcess]
    topics: dict[str, Topic]

    def __init__(
        self,
        name: str,
        cluster: Cluster,
        local: LocalPlatform,
        opts: pulumi.ResourceOptions | None = None,
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

        if cluster.platform is Platform.LOCAL:
            self.brokers = self._local_brokers(name, cluster, local)
        elif cluster.platform is not Platform.EXTERNAL:
            raise ValueError(
                f"mm2:clusters.{cluster.alias}.platform: platform {cluster.platform.value!r} is not implemented yet. "
                "Fix: use `local` for this machine or `external` to adopt a running cluster by its bootstrap address."
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
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(self.brokers)),
            )

        self.bootstrap = pulumi.Output.from_input(bootstrap)
        self.register_outputs({**self._props, "bootstrap": self.bootstrap})

    def _local_brokers(self, name: str, cluster: Cluster, local: LocalPlatform) -> list[LocalProcess]:
        cluster_id = kraft_cluster_id(local.stack, cluster.alias)
        brokers = []
        for node_id, (client_port, controller_port) in enumerate(broker_ports(cluster)):
            run_dir = f"{local.run_root}/{cluster.alias}/broker-{node_id}"
            brokers.append(
                LocalProcess(
                    f"{name}-broker-{node_id}",
                    component=f"KafkaCluster {cluster.alias!r}, broker {node_id}",
                    marker=f"{local.stack}/{cluster.alias}/broker-{node_id}",
                    main_class=KAFKA_MAIN,
                    classpath_dir=local.kafka_libs,
                    run_dir=run_dir,
                    properties=broker_properties(cluster, node_id, f"{run_dir}/data"),
                    ports=[client_port, controller_port],
                    config_key=f"mm2:clusters.{cluster.alias}.port",
                    cluster_id=cluster_id,
                    ready={"kind": "kafka", "bootstrap": f"127.0.0.1:{client_port}"},
                    heap="512m",
                    opts=pulumi.ResourceOptions(parent=self),
                )
            )
        return brokers
