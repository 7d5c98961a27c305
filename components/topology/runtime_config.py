"""A cluster becomes broker properties; a worker group becomes distributed-worker properties.

Brokers are KRaft combined broker+controller nodes. Two listeners per node: CLIENT (the
cluster's security protocol; also carries inter-broker traffic, so every broker port is the
one clients use) and CONTROLLER (PLAINTEXT on 127.0.0.1, never exposed to clients).
"""

from __future__ import annotations

from collections.abc import Mapping

from components.topology.mm2config import (
    BYTE_ARRAY_CONVERTER,
    bootstrap_servers,
    flow_connectors,
    security_properties,
)
from components.topology.model import (
    DEFAULT_SECRETS_FILE,
    Cluster,
    Platform,
    SaslMechanism,
    SecurityProtocol,
    Topology,
    WorkerGroup,
)
from components.topology.settings import (
    BROKER_OWNED,
    BROKER_OWNED_PREFIXES,
    WORKER_OWNED,
    WORKER_OWNED_PREFIXES,
    owned_reason,
)

FILE_CONFIG_PROVIDER = "org.apache.kafka.common.config.provider.FileConfigProvider"
BASIC_AUTH_EXTENSION = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
CLIENT_LISTENER = "CLIENT"
CONTROLLER_LISTENER = "CONTROLLER"
KUBERNETES_REST_PORT = 8083


def broker_ports(cluster: Cluster) -> tuple[tuple[int, int], ...]:
    """(client port, controller port) per broker: port+2i and port+2i+1."""
    if cluster.port is None:
        raise ValueError(f"cluster {cluster.alias} has no port; only local and docker clusters have broker ports")
    return tuple((cluster.port + 2 * i, cluster.port + 2 * i + 1) for i in range(cluster.brokers))


def _reject_owned(values: Mapping[str, str], owned: dict[str, str], prefixes: dict[str, str], where: str) -> None:
    # parse_topology already reports these; this guards Topologies built by hand.
    for key in values:
        reason = owned_reason(key, owned, prefixes)
        if reason is not None:
            raise ValueError(f'{where}: "{key}" is owned by a typed field; set {reason}')


def broker_properties(
    cluster: Cluster, node_id: int, data_dir: str, secrets_file: str = DEFAULT_SECRETS_FILE
) -> dict[str, str]:
    """server.properties for broker `node_id` of a local cluster.

    Internal topics are replicated min(3, brokers) times with min.insync.replicas min(2, brokers):
    one broker may fail on a three-broker cluster, and a one-broker dev cluster still starts.
    SASL users' passwords are `${file:...}` placeholders (`secrets_file`), so brokers get the
    file config provider too. SCRAM credentials must also be added when storage is formatted.
    """
    if cluster.platform is not Platform.LOCAL:
        raise ValueError(
            f"broker properties are generated for local clusters only; {cluster.alias} is {cluster.platform.value}"
        )
    ports = broker_ports(cluster)
    if not 0 <= node_id < cluster.brokers:
        raise ValueError(f"node_id {node_id} is outside 0..{cluster.brokers - 1} for cluster {cluster.alias}")
    client_port, controller_port = ports[node_id]
    security = cluster.security
    rf = str(min(3, cluster.brokers))
    min_isr = str(min(2, cluster.brokers))
    props: dict[str, str] = {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "controller.quorum.voters": ",".join(f"{i}@127.0.0.1:{c}" for i, (_, c) in enumerate(ports)),
        "listeners": f"{CLIENT_LISTENER}://127.0.0.1:{client_port},{CONTROLLER_LISTENER}://127.0.0.1:{controller_port}",
        "advertised.listeners": f"{CLIENT_LISTENER}://127.0.0.1:{client_port}",
        "controller.listener.names": CONTROLLER_LISTENER,
        "inter.broker.listener.name": CLIENT_LISTENER,
        "listener.security.protocol.map": (
            f"{CLIENT_LISTENER}:{security.protocol.value},{CONTROLLER_LISTENER}:PLAINTEXT"
        ),
        "log.dirs": data_dir,
        "offsets.topic.replication.factor": rf,
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": min_isr,
        "share.coordinator.state.topic.replication.factor": rf,
        "share.coordinator.state.topic.min.isr": min_isr,
        "default.replication.factor": rf,
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "false",
    }
    if security.protocol is SecurityProtocol.SASL_PLAINTEXT and security.sasl_mechanism is not None:
        mechanism = security.sasl_mechanism
        user = security.username or ""
        password = security.password.placeholder(secrets_file) if security.password else ""
        jaas = f'{mechanism.login_module} required username="{user}" password="{password}"'
        if mechanism is SaslMechanism.PLAIN:
            # PlainLoginModule on a broker also holds the user table: user_<name>="<password>".
            jaas += f' user_{user}="{password}"'
        props.update(
            {
                "sasl.enabled.mechanisms": mechanism.value,
                "sasl.mechanism.inter.broker.protocol": mechanism.value,
                f"listener.name.{CLIENT_LISTENER.lower()}.{mechanism.value.lower()}.sasl.jaas.config": jaas + ";",
                "config.providers": "file",
                "config.providers.file.class": FILE_CONFIG_PROVIDER,
            }
        )
    _reject_owned(cluster.broker_config, BROKER_OWNED, BROKER_OWNED_PREFIXES, f"cluster {cluster.alias} brokerConfig")
    props.update(cluster.broker_config)
    return props


def _group_flows_need_override(topology: Topology, group: WorkerGroup) -> bool:
    for flow in topology.enabled_flows():
        if flow.worker_group != group.name:
            continue
        for spec in flow_connectors(topology, flow).all():
            if any(key.startswith("producer.override.") for key in spec.config):
                return True
    return False


def worker_properties(topology: Topology, group: WorkerGroup, index: int) -> dict[str, str]:
    """connect-distributed.properties for worker `index` of `group`.

    The worker's own producer, consumer and admin clients do not inherit top-level security
    settings in Connect, so security is repeated under producer./consumer./admin.
    `connector.client.config.override.policy=All` is set only when a connector on this group
    carries `producer.override.*` (a flow whose target is not the group's cluster, or target
    producer overrides); Kafka 3.0+ defaults to All anyway, stating it keeps intent visible.
    """
    if not 0 <= index < group.workers:
        raise ValueError(f"worker index {index} is outside 0..{group.workers - 1} for group {group.name}")
    cluster = topology.clusters[group.cluster]
    secrets = group.secrets_file
    rf = str(min(3, cluster.brokers))
    security = security_properties(cluster.security, secrets)
    props: dict[str, str] = {
        "bootstrap.servers": bootstrap_servers(cluster),
        **security,
        **{f"{client}.{k}": v for client in ("producer", "consumer", "admin") for k, v in security.items()},
        "group.id": group.group_id,
        "config.storage.topic": group.config_topic,
        "offset.storage.topic": group.offset_topic,
        "status.storage.topic": group.status_topic,
        "config.storage.replication.factor": rf,
        "offset.storage.replication.factor": rf,
        "status.storage.replication.factor": rf,
        "key.converter": BYTE_ARRAY_CONVERTER,
        "value.converter": BYTE_ARRAY_CONVERTER,
        "header.converter": BYTE_ARRAY_CONVERTER,
        "plugin.discovery": "service_load",
        # Rebalances after a worker leaves wait this long for it to return; short keeps a
        # restarted worker's tasks from idling, long enough to ride out a quick restart.
        "scheduled.rebalance.max.delay.ms": "10000",
        "offset.flush.interval.ms": "5000",
        "config.providers": "file",
        "config.providers.file.class": FILE_CONFIG_PROVIDER,
    }
    if group.platform in (Platform.LOCAL, Platform.DOCKER):
        if group.rest_port is None:
            raise ValueError(f"worker group {group.name} has no restPort")
        port = group.rest_port + index
        props.update(
            {
                "listeners": f"http://127.0.0.1:{port}",
                "rest.advertised.host.name": "127.0.0.1",
                "rest.advertised.port": str(port),
            }
        )
    else:
        props["listeners"] = f"http://0.0.0.0:{KUBERNETES_REST_PORT}"
    if group.rest_auth:
        # Credentials come from the JAAS file the platform passes with
        # -Djava.security.auth.login.config (KafkaConnect login module section).
        props["rest.extension.classes"] = BASIC_AUTH_EXTENSION
    if _group_flows_need_override(topology, group):
        props["connector.client.config.override.policy"] = "All"
    if any(f.exactly_once for f in topology.enabled_flows() if f.worker_group == group.name):
        props["exactly.once.source.support"] = "enabled"
    _reject_owned(group.worker_config, WORKER_OWNED, WORKER_OWNED_PREFIXES, f"worker group {group.name} workerConfig")
    props.update(group.worker_config)
    return props


def worker_rest_urls(group: WorkerGroup) -> tuple[str, ...]:
    """REST endpoints of the group's workers, first worker first."""
    if group.url:
        return (group.url.rstrip("/"),)
    if group.platform in (Platform.LOCAL, Platform.DOCKER):
        if group.rest_port is None:
            raise ValueError(f"worker group {group.name} has no restPort")
        return tuple(f"http://127.0.0.1:{group.rest_port + i}" for i in range(group.workers))
    # Kubernetes: one Service in front of all workers (Strimzi names it <name>-connect-api).
    return (f"http://{group.name}-connect-api:{KUBERNETES_REST_PORT}",)
