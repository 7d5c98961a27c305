"""A cluster becomes broker properties; a worker group becomes distributed-worker properties.

Brokers are KRaft combined broker+controller nodes. Two listeners per node: CLIENT (the
cluster's security protocol; also carries inter-broker traffic, so every broker port is the
one clients use) and CONTROLLER (on 127.0.0.1 only; SASL PLAIN as `admin` when the cluster
uses SASL, PLAINTEXT when the cluster explicitly asked for PLAINTEXT).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType

from components.topology.config_provider import FILE_PROVIDER_PROPERTIES
from components.topology.connectors import (
    BYTE_ARRAY_CONVERTER,
    EXACTLY_ONCE_DISABLING,
    EXACTLY_ONCE_ENABLED,
    EXACTLY_ONCE_PREPARING,
    flow_connectors,
    group_bootstrap_servers,
    reverse_heartbeat_connector,
    security_properties,
    wants_exactly_once,
)
from components.topology.jaas_quoting import jaas_quote
from components.topology.model import (
    ADMIN_USER,
    DEFAULT_SECRETS_FILE,
    Cluster,
    Platform,
    SaslMechanism,
    SecretRef,
    Topology,
    WorkerGroup,
)
from components.topology.objectives import OFFSET_FLUSH_MS
from components.topology.security import admin_password, worker_security
from components.topology.settings import (
    BROKER_OWNED,
    BROKER_OWNED_PREFIXES,
    WORKER_OWNED,
    WORKER_OWNED_PREFIXES,
    reject_owned,
)
from components.topology.tls import (
    TRUSTSTORE_PASSWORD,
    TlsLayout,
    cluster_keystore_password,
    cluster_leaf_name,
    local_rest_tls,
    local_tls_cluster,
    rest_keystore_password,
    rest_leaf_name,
)

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
BASIC_AUTH_EXTENSION = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
CLIENT_LISTENER = "CLIENT"
CONTROLLER_LISTENER = "CONTROLLER"
KUBERNETES_REST_PORT = 8083


def broker_ports(cluster: Cluster) -> tuple[tuple[int, int], ...]:
    """(client port, controller port) per broker: port+2i and port+2i+1."""
    if cluster.port is None:
        raise ValueError(f"cluster {cluster.alias} has no port; only local and docker clusters have broker ports")
    return tuple((cluster.port + 2 * i, cluster.port + 2 * i + 1) for i in range(cluster.brokers))


def broker_properties(
    cluster: Cluster,
    node_id: int,
    data_dir: str,
    secrets_file: str = DEFAULT_SECRETS_FILE,
    users: Mapping[str, SecretRef] | None = None,
    tls: TlsLayout | None = None,
) -> dict[str, str]:
    """server.properties for broker `node_id` of a local cluster.

    Internal topics are replicated min(3, brokers) times with min.insync.replicas min(2, brokers):
    one broker may fail on a three-broker cluster, and a one-broker dev cluster still starts.
    With SASL see `_broker_sasl`; passwords are `${file:...}` placeholders (`secrets_file`),
    so brokers get the file config provider too. `users` are name -> password reference of the
    users a PLAIN cluster must know (SCRAM users live in the metadata log instead).
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
        # A cluster's brokers share one host (and namespace): the quorum stays on its loopback.
        "listeners": f"{CLIENT_LISTENER}://{cluster.host}:{client_port},{CONTROLLER_LISTENER}://127.0.0.1:{controller_port}",
        "advertised.listeners": f"{CLIENT_LISTENER}://{cluster.host}:{client_port}",
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
    if security.protocol.uses_sasl and security.sasl_mechanism is not None:
        props.update(_broker_sasl(cluster, secrets_file, users))
    if local_tls_cluster(cluster):
        if tls is None:
            raise ValueError(f"cluster {cluster.alias} uses {security.protocol.value}: give the stack's TLS layout")
        props.update(_broker_tls(cluster, secrets_file, tls))
    reject_owned(cluster.broker_config, BROKER_OWNED, BROKER_OWNED_PREFIXES, f"cluster {cluster.alias} brokerConfig")
    props.update(cluster.broker_config)
    return props


def _broker_sasl(cluster: Cluster, secrets_file: str, users: Mapping[str, SecretRef] | None) -> dict[str, str]:
    """SASL on both listeners of a local broker, an authorizer, and `admin` as the brokers' own
    super user (`stack_sasl_properties`). CONTROLLER: SASL_PLAINTEXT with PLAIN (KRaft
    controllers cannot check SCRAM: the credentials are in the log they serve)."""
    return {
        "listener.security.protocol.map": (
            f"{CLIENT_LISTENER}:{cluster.security.protocol.value},{CONTROLLER_LISTENER}:SASL_PLAINTEXT"
        ),
        **stack_sasl_properties(cluster, secrets_file, users, [CLIENT_LISTENER], [CONTROLLER_LISTENER]),
    }


def stack_sasl_properties(
    cluster: Cluster,
    secrets_file: str,
    users: Mapping[str, SecretRef] | None,
    client_listeners: Sequence[str],
    admin_listeners: Sequence[str],
    super_users: Sequence[str] = (),
) -> dict[str, str]:
    """The SASL and authorizer properties of a stack-managed cluster's brokers (any platform).

    - `client_listeners`: the cluster's mechanism for every client, plus PLAIN for `admin` only
      (its JAAS user table holds no one else). The stack bootstraps through PLAIN: SCRAM users
      live in the metadata log, which is empty until the stack creates them, and formatting
      storage with `--add-scram name=...,password=...` would put a password on a command line.
    - `admin_listeners` (the brokers' own: controller, replication): PLAIN, `admin` only.
    - StandardAuthorizer, deny when no ACL matches; `admin` and `super_users` (principals, e.g.
      `User:kafka-broker`) are the only super users.
    `users` are name -> password reference of the users a PLAIN cluster must know (SCRAM users
    live in the metadata log instead).
    """
    mechanism = cluster.security.sasl_mechanism
    assert mechanism is not None
    admin = admin_password(cluster.alias).placeholder(secrets_file)
    plain_users = {ADMIN_USER: admin}
    if mechanism is SaslMechanism.PLAIN:
        plain_users.update({name: ref.placeholder(secrets_file) for name, ref in (users or {}).items()})
    table = " ".join(f'user_{jaas_quote(name)}="{pw}"' for name, pw in sorted(plain_users.items()))
    plain_jaas = f'{PLAIN_MODULE} required username="{ADMIN_USER}" password="{admin}" {table};'
    mechanisms = [mechanism.value] if mechanism is SaslMechanism.PLAIN else [mechanism.value, "PLAIN"]
    props = {
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": ";".join([f"User:{ADMIN_USER}", *super_users]),
        "allow.everyone.if.no.acl.found": "false",
        **FILE_PROVIDER_PROPERTIES,
    }
    for listener in (name.lower() for name in client_listeners):
        props[f"listener.name.{listener}.sasl.enabled.mechanisms"] = ",".join(mechanisms)
        props[f"listener.name.{listener}.plain.sasl.jaas.config"] = plain_jaas
        if mechanism is not SaslMechanism.PLAIN:
            # SCRAM needs no JAAS user table: the broker looks users up in the metadata log.
            props[f"listener.name.{listener}.{mechanism.value.lower()}.sasl.jaas.config"] = f"{SCRAM_MODULE} required;"
    for listener in (name.lower() for name in admin_listeners):
        props[f"listener.name.{listener}.sasl.enabled.mechanisms"] = "PLAIN"
        props[f"listener.name.{listener}.plain.sasl.jaas.config"] = plain_jaas
    return props


def _store_properties(
    prefix: str, keystore: str, keystore_password: str, tls: TlsLayout, secrets_file: str
) -> dict[str, str]:
    """A PKCS12 keystore and the stack truststore under `prefix`; passwords as placeholders."""
    return {
        f"{prefix}ssl.keystore.type": "PKCS12",
        f"{prefix}ssl.keystore.location": keystore,
        f"{prefix}ssl.keystore.password": keystore_password,
        # keytool's PKCS12 keys are protected by the store password.
        f"{prefix}ssl.key.password": keystore_password,
        f"{prefix}ssl.truststore.type": "PKCS12",
        f"{prefix}ssl.truststore.location": tls.truststore,
        f"{prefix}ssl.truststore.password": TRUSTSTORE_PASSWORD.placeholder(secrets_file),
        f"{prefix}ssl.client.auth": "none",
    }


def _broker_tls(cluster: Cluster, secrets_file: str, tls: TlsLayout) -> dict[str, str]:
    """TLS on the CLIENT listener (clients and inter-broker traffic), with the certificate the
    stack CA issued for this cluster (SANs 127.0.0.1 and localhost). Clients authenticate with
    SASL (SASL_SSL) or not at all (SSL: encryption and server authentication only). The
    CONTROLLER listener stays on loopback without TLS."""
    password = cluster_keystore_password(cluster.alias).placeholder(secrets_file)
    keystore = tls.keystore(cluster_leaf_name(cluster.alias))
    return {
        **_store_properties(f"listener.name.{CLIENT_LISTENER.lower()}.", keystore, password, tls, secrets_file),
        **FILE_PROVIDER_PROPERTIES,
    }


def broker_secret_keys(cluster: Cluster) -> tuple[str, ...]:
    """Secret keys a local broker resolves from its own secrets file, besides SASL user passwords."""
    keys = []
    if cluster.security.protocol.uses_sasl:
        keys.append(admin_password(cluster.alias).key)
    if local_tls_cluster(cluster):
        keys += [cluster_keystore_password(cluster.alias).key, TRUSTSTORE_PASSWORD.key]
    return tuple(keys)


def worker_secret_keys(topology: Topology, group: WorkerGroup) -> tuple[str, ...]:
    """Secret keys a local worker resolves from its own secrets file: its Kafka password, its
    storage cluster's truststore password, its REST keystore's and the truststore's with restTls."""
    security = worker_security(topology, group)
    keys = {ref.key for ref in security.secret_refs()}
    if local_rest_tls(group):
        keys |= {rest_keystore_password(group.name).key, TRUSTSTORE_PASSWORD.key}
    return tuple(sorted(keys))


def _group_flows_need_override(topology: Topology, group: WorkerGroup) -> bool:
    for flow in topology.enabled_flows():
        if flow.worker_group != group.name:
            continue
        reverse = reverse_heartbeat_connector(topology, flow)
        for spec in (*flow_connectors(topology, flow).all(), *([reverse] if reverse else [])):
            if any(key.startswith("producer.override.") for key in spec.config):
                return True
    return False


def worker_properties(
    topology: Topology,
    group: WorkerGroup,
    index: int,
    worker_secrets_file: str | None = None,
    tls: TlsLayout | None = None,
) -> dict[str, str]:
    """connect-distributed.properties for worker `index` of `group`.

    The worker connects as its own user (`worker_security`: `connect-<group>` on a stack-managed
    cluster), its password a placeholder into `worker_secrets_file` (default: the group's
    secrets file, which the connectors read). The worker's own producer, consumer and admin
    clients do not inherit top-level security settings in Connect, so security is repeated
    under producer./consumer./admin.
    `connector.client.config.override.policy=All` is set only when a connector on this group
    carries `producer.override.*` (a flow whose target is not the group's cluster, target
    producer overrides, or the generated producer tuning of every source connector); Kafka 3.0+
    defaults to All anyway, stating it keeps intent visible.
    """
    if not 0 <= index < group.workers:
        raise ValueError(f"worker index {index} is outside 0..{group.workers - 1} for group {group.name}")
    own_secrets = worker_secrets_file or group.secrets_file
    props = _worker_storage_properties(topology, group, own_secrets)
    props.update(_rest_listener_properties(group, index, own_secrets, tls))
    if group.rest_auth:
        # Credentials come from the JAAS file the platform passes with
        # -Djava.security.auth.login.config (KafkaConnect login module section).
        props["rest.extension.classes"] = BASIC_AUTH_EXTENSION
    if _group_flows_need_override(topology, group):
        props["connector.client.config.override.policy"] = "All"
    if wants_exactly_once(topology, group):
        # A new group starts at enabled; an existing one goes through preparing first
        # (connect_group.with_exactly_once_stages decides from the running workers).
        props[EXACTLY_ONCE_KEY] = group.exactly_once_stage or EXACTLY_ONCE_ENABLED
    reject_owned(group.worker_config, WORKER_OWNED, WORKER_OWNED_PREFIXES, f"worker group {group.name} workerConfig")
    props.update(group.worker_config)
    return props


def _worker_storage_properties(topology: Topology, group: WorkerGroup, own_secrets: str) -> dict[str, str]:
    """How a worker reaches its cluster (as its own user) and where it keeps the group's state."""
    cluster = topology.clusters[group.cluster]
    rf = str(min(3, cluster.brokers))
    security = security_properties(worker_security(topology, group), own_secrets)
    return {
        "bootstrap.servers": group_bootstrap_servers(cluster, group),
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
        # How long the group waits for a departed worker before its connectors and tasks move to
        # the workers still up (Connect's default: 5 minutes). A worker restart takes 10-20 s
        # here (graceful stop, JVM start, rejoin), and during a rolling restart the others are up:
        # waiting longer than a second only idles the restarting worker's tasks. The price is that
        # they move twice (away, then back when it rejoins): two pauses of a rebalance (~1-2 s)
        # each instead of one as long as the restart (see bench/restarts).
        "scheduled.rebalance.max.delay.ms": "1000",
        "offset.flush.interval.ms": str(OFFSET_FLUSH_MS),
        **FILE_PROVIDER_PROPERTIES,
    }


def _rest_listener_properties(
    group: WorkerGroup, index: int, own_secrets: str, tls: TlsLayout | None
) -> dict[str, str]:
    """Where worker `index` serves the REST API: host:restPort+i locally (HTTPS with
    restTls), one port on all interfaces in a pod."""
    if group.platform not in (Platform.LOCAL, Platform.DOCKER):
        return {"listeners": f"http://0.0.0.0:{KUBERNETES_REST_PORT}"}
    if group.rest_port is None:
        raise ValueError(f"worker group {group.name} has no restPort")
    port = group.rest_port + index
    scheme = "https" if local_rest_tls(group) else "http"
    props = {
        "listeners": f"{scheme}://{group.host}:{port}",
        "rest.advertised.host.name": group.host,
        "rest.advertised.port": str(port),
    }
    if local_rest_tls(group):
        if tls is None:
            raise ValueError(f"worker group {group.name} has restTls: give the stack's TLS layout")
        password = rest_keystore_password(group.name).placeholder(own_secrets)
        # `listeners.https.` holds all of it: Connect then ignores the top-level ssl.* (the
        # worker's Kafka client settings) for the REST server and for the client it forwards
        # requests to the leader with, which must trust the stack CA too.
        props["rest.advertised.listener"] = "https"
        props.update(
            _store_properties("listeners.https.", tls.keystore(rest_leaf_name(group.name)), password, tls, own_secrets)
        )
    return props


def worker_rest_urls(group: WorkerGroup) -> tuple[str, ...]:
    """REST endpoints of the group's workers, first worker first."""
    if group.url:
        return (group.url.rstrip("/"),)
    if group.platform in (Platform.LOCAL, Platform.DOCKER):
        if group.rest_port is None:
            raise ValueError(f"worker group {group.name} has no restPort")
        scheme = "https" if local_rest_tls(group) else "http"
        return tuple(f"{scheme}://{group.host}:{group.rest_port + i}" for i in range(group.workers))
    # Kubernetes: one Service in front of all workers (Strimzi names it <name>-connect-api).
    return (f"http://{group.name}-connect-api:{KUBERNETES_REST_PORT}",)


def worker_metrics_targets(group: WorkerGroup) -> tuple[str, ...]:
    """host:port of each worker's JMX exporter agent, first worker first, where the local platform
    runs the workers with one (`metricsPort`: worker i on metricsPort+i); empty otherwise."""
    if group.platform is not Platform.LOCAL or group.metrics_port is None:
        return ()
    return tuple(f"{group.host}:{group.metrics_port + i}" for i in range(group.workers))


def worker_metrics_urls(group: WorkerGroup) -> tuple[str, ...]:
    """The Prometheus endpoints of the group's workers (`worker_metrics_targets`), for a group the
    stack runs (not one adopted by its `url`)."""
    return () if group.url else tuple(f"http://{target}/metrics" for target in worker_metrics_targets(group))


EXACTLY_ONCE_KEY = "exactly.once.source.support"


def next_exactly_once_stage(deployed: Sequence[str], wanted: bool = True) -> str | None:
    """The exactly-once rollout stage of a group whose running workers have `deployed`.

    `deployed`: the value of `exactly.once.source.support` each running worker has now
    ("disabled" when its properties do not set it), empty for a group with no workers yet.
    Wanted (Connect, KIP-618): a new group may start at enabled; an existing one first runs
    every worker at preparing, then enabled. So: enabled when there are no workers or all are at
    preparing or enabled; preparing while any worker is still without it (also after a half-done
    first step). Not wanted: `disabling` while any worker still runs with it (the workers roll to
    disabled, keeping what their transactions need), else None.
    """
    if not wanted:
        return EXACTLY_ONCE_DISABLING if any(value != "disabled" for value in deployed) else None
    if all(value in (EXACTLY_ONCE_PREPARING, EXACTLY_ONCE_ENABLED) for value in deployed):
        return EXACTLY_ONCE_ENABLED
    return EXACTLY_ONCE_PREPARING


def with_exactly_once_stage(topology: Topology, group: str, stage: str | None) -> Topology:
    """The same topology with `group` at rollout `stage` (worker properties and connectors follow)."""
    groups = dict(topology.worker_groups)
    groups[group] = replace(groups[group], exactly_once_stage=stage)
    return replace(topology, worker_groups=MappingProxyType(groups))
