"""Broker properties and start script for container platforms (kubernetes, docker): pure, no I/O.

Brokers are KRaft combined broker+controller nodes, like on the local platform. On kubernetes
each pod binds 0.0.0.0 and is advertised under a name other pods resolve; on docker every
container shares the host's network and node i binds 127.0.0.1 on the local platform's port
plan (`BrokerNetwork.host_port_base`). Listeners:

- CLIENT (9092, or base+2i): the cluster's security protocol, for clients. On kubernetes this
  is what `<alias>-kafka-bootstrap:9092` reaches; on docker it carries inter-broker traffic too.
- REPLICATION (9091, kubernetes only): inter-broker traffic, on the brokers' own protocol
  (`internal_protocol`). A NetworkPolicy lets only broker pods reach it.
- CONTROLLER (9093, or base+2i+1): the KRaft quorum. On kubernetes the brokers' own protocol and
  restricted to broker pods like REPLICATION; on docker PLAINTEXT, bound to loopback.
- EXTERNAL (port 9094, optional): the cluster's security protocol again, advertised under an
  address reachable from outside (load balancer per broker); for clusters in other regions.

The brokers' own protocol on kubernetes: mutual TLS with their certificates on a TLS cluster
(every certificate of the cluster's CA presented there is the super user `kafka-broker`), SASL
PLAIN as `admin` on a SASL_PLAINTEXT one, PLAINTEXT on a PLAINTEXT one. A cluster with SASL runs
StandardAuthorizer with the stack's users (components/topology/security.py), as local ones do.

Per-pod values (node id, advertised host, rack) are not known when Pulumi renders a StatefulSet,
so they are shell expressions (`${ORDINAL}`, `${RACK}`) the broker's start script expands; the
shared properties here never change between pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from components.platform.image_layout import (
    BROKER_DATA_DIR,
    BROKER_SECRETS_FILE,
    BROKER_TLS_DIR,
    KAFKA_HOME,
    RUNTIME_DIR,
)
from components.topology.config_provider import FILE_PROVIDER_PROPERTIES, file_placeholder
from components.topology.model import Cluster, SaslMechanism, SecretRef
from components.topology.runtime_config import stack_sasl_properties
from components.topology.security import BROKER_USER, admin_password, stack_managed
from components.topology.settings import BROKER_OWNED, BROKER_OWNED_PREFIXES, reject_owned

CLIENT_PORT = 9092
CONTROLLER_PORT = 9093
EXTERNAL_PORT = 9094
REPLICATION_PORT = 9091
# Every certificate the cluster's CA signed, presented on the brokers' own listeners, is the
# brokers' one principal, which `super.users` names (a broker certificate's DN is its issuer's choice).
BROKER_PRINCIPAL_RULE = rf"RULE:^.*$/{BROKER_USER}/"


@dataclass(frozen=True)
class BrokerNetwork:
    """How the nodes of one cluster find each other and how clients find them.

    `advertised_host` and `voter_host` are templates with `{ordinal}` for the node id; they may
    contain shell expressions for the start script.
    """

    voter_host: str  # e.g. "{alias}-kafka-{ordinal}.{alias}-kafka-brokers.{ns}.svc"
    advertised_host: str  # CLIENT listener's advertised host, same template rules
    advertised_port: int = CLIENT_PORT
    external_host: str | None = None  # EXTERNAL listener's advertised host template, if any
    external_port: int = EXTERNAL_PORT
    # Brokers behind node ports: node i advertises external_port_base + 1 + i (the base itself is
    # the bootstrap's); None: every node advertises external_port.
    external_port_base: int | None = None
    # Host networking (docker): node i binds `listen_host` on host_port_base+2i (CLIENT) and
    # host_port_base+2i+1 (CONTROLLER), so the listeners differ per node; None: 9092/9093.
    host_port_base: int | None = None
    listen_host: str = "0.0.0.0"
    # Kubernetes: a REPLICATION listener of the brokers' own, and REPLICATION and CONTROLLER on
    # `internal_protocol`; otherwise (docker) inter-broker traffic rides CLIENT, CONTROLLER is PLAINTEXT.
    own_listeners: bool = False

    def client_port(self, node: int) -> int:
        return CLIENT_PORT if self.host_port_base is None else self.host_port_base + 2 * node

    def controller_port(self, node: int) -> int:
        return CONTROLLER_PORT if self.host_port_base is None else self.host_port_base + 2 * node + 1

    def listeners(self, node: int) -> str:
        """`listeners` of node `node` (every node alike unless ports are per node)."""
        out = f"CLIENT://{self.listen_host}:{self.client_port(node)},CONTROLLER://{self.listen_host}:{self.controller_port(node)}"
        if self.own_listeners:
            out += f",REPLICATION://{self.listen_host}:{REPLICATION_PORT}"
        if self.external_host is not None:
            out += f",EXTERNAL://{self.listen_host}:{EXTERNAL_PORT}"
        return out


def broker_secret_key(alias: str) -> str:
    """The secrets-file key of a container cluster's broker keystore/truststore password.

    One password for both stores, as cert-manager's PKCS12 keystores produce them.
    """
    return f"{alias}.broker.tls.password"


def voters(cluster: Cluster, network: BrokerNetwork) -> str:
    return ",".join(
        f"{i}@{network.voter_host.format(ordinal=i)}:{network.controller_port(i)}" for i in range(cluster.brokers)
    )


def internal_protocol(cluster: Cluster) -> str:
    """The security protocol of a kubernetes cluster's own listeners (REPLICATION, CONTROLLER):
    mutual TLS on a TLS cluster, SASL (PLAIN, `admin`) on a SASL_PLAINTEXT one, else PLAINTEXT."""
    protocol = cluster.security.protocol
    if protocol.uses_tls:
        return "SSL"
    return "SASL_PLAINTEXT" if protocol.uses_sasl else "PLAINTEXT"


def container_broker_properties(
    cluster: Cluster,
    network: BrokerNetwork,
    *,
    users: Mapping[str, SecretRef] | None = None,
    secrets_file: str = BROKER_SECRETS_FILE,
    tls_dir: str = BROKER_TLS_DIR,
    data_dir: str = BROKER_DATA_DIR,
) -> dict[str, str]:
    """The properties every broker of a container cluster shares (no node.id, no rack, and no
    `listeners` when they differ per node: see `BrokerNetwork.listeners`).

    Secrets are `${file:...}` placeholders naming `secrets_file`: SASL passwords under the
    model's SecretRef keys, the broker's TLS store password under `broker_secret_key(alias)`.
    `users`: the stack's users of a PLAIN cluster (name -> password), which its JAAS table holds.
    """
    protocol = cluster.security.protocol.value
    own = internal_protocol(cluster) if network.own_listeners else "PLAINTEXT"
    protocol_map = [f"CLIENT:{protocol}", f"CONTROLLER:{own}"]
    client_listeners = ["CLIENT"]
    if network.external_host is not None:
        protocol_map.append(f"EXTERNAL:{protocol}")
        client_listeners.append("EXTERNAL")
    if network.own_listeners:
        protocol_map.append(f"REPLICATION:{own}")
    rf = str(min(3, cluster.brokers))
    min_isr = str(min(2, cluster.brokers))
    props: dict[str, str] = {
        "process.roles": "broker,controller",
        "controller.quorum.voters": voters(cluster, network),
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "REPLICATION" if network.own_listeners else "CLIENT",
        "listener.security.protocol.map": ",".join(protocol_map),
        # A subdirectory: a fresh volume's root may hold lost+found, which Kafka rejects.
        "log.dirs": f"{data_dir}/log",
        "offsets.topic.replication.factor": rf,
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": min_isr,
        "share.coordinator.state.topic.replication.factor": rf,
        "share.coordinator.state.topic.min.isr": min_isr,
        "default.replication.factor": rf,
        "min.insync.replicas": min_isr,
        "auto.create.topics.enable": "false",
        **FILE_PROVIDER_PROPERTIES,
        **_sasl_properties(cluster, own, client_listeners, users, secrets_file),
    }
    if own == "SSL":
        for listener in ("replication", "controller"):
            props[f"listener.name.{listener}.ssl.client.auth"] = "required"
    if cluster.security.protocol.uses_tls:
        store_password = file_placeholder(secrets_file, broker_secret_key(cluster.alias))
        props.update(
            {
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.location": f"{tls_dir}/keystore.p12",
                "ssl.keystore.password": store_password,
                "ssl.truststore.type": "PKCS12",
                "ssl.truststore.location": f"{tls_dir}/truststore.p12",
                "ssl.truststore.password": store_password,
            }
        )
    if network.host_port_base is None:
        props["listeners"] = network.listeners(0)
    reject_owned(cluster.broker_config, BROKER_OWNED, BROKER_OWNED_PREFIXES, f"cluster {cluster.alias} brokerConfig")
    props.update(cluster.broker_config)
    return props


def _sasl_properties(
    cluster: Cluster,
    own: str,
    client_listeners: list[str],
    users: Mapping[str, SecretRef] | None,
    secrets_file: str,
) -> dict[str, str]:
    """SASL on the client listeners. A stack-managed cluster (kubernetes) gets the stack's users
    and StandardAuthorizer; its brokers are `admin` (SASL on their own listeners) or, with mutual
    TLS there, `kafka-broker`. Otherwise (docker) the cluster's one user is every identity."""
    security = cluster.security
    if not security.protocol.uses_sasl or security.sasl_mechanism is None:
        return {}
    if stack_managed(cluster):
        admin_listeners = ["REPLICATION", "CONTROLLER"] if own == "SASL_PLAINTEXT" else []
        mutual = own == "SSL"
        props = stack_sasl_properties(
            cluster, secrets_file, users, client_listeners, admin_listeners, [f"User:{BROKER_USER}"] if mutual else []
        )
        if mutual:
            props["ssl.principal.mapping.rules"] = BROKER_PRINCIPAL_RULE
        return props
    mechanism = security.sasl_mechanism
    user = security.username or ""
    password = security.password.placeholder(secrets_file) if security.password else ""
    jaas = f'{mechanism.login_module} required username="{user}" password="{password}"'
    if mechanism is SaslMechanism.PLAIN:
        # PlainLoginModule on a broker also holds the user table: user_<name>="<password>".
        jaas += f' user_{user}="{password}"'
    props = {"sasl.enabled.mechanisms": mechanism.value, "sasl.mechanism.inter.broker.protocol": mechanism.value}
    for listener in client_listeners:
        props[f"listener.name.{listener.lower()}.{mechanism.value.lower()}.sasl.jaas.config"] = jaas + ";"
    return props


def advertised_listeners(network: BrokerNetwork, ordinal: str) -> str:
    """`advertised.listeners` of node `ordinal` (a number, or a shell expression where every
    node has the same ports)."""
    port = network.advertised_port if network.host_port_base is None else network.client_port(int(ordinal))
    out = f"CLIENT://{network.advertised_host.format(ordinal=ordinal)}:{port}"
    if network.own_listeners:
        out += f",REPLICATION://{network.voter_host.format(ordinal=ordinal)}:{REPLICATION_PORT}"
    if network.external_host is not None:
        out += f",EXTERNAL://{network.external_host.format(ordinal=ordinal)}:{external_port(network, ordinal)}"
    return out


def broker_node_port(base: int, node: int) -> int:
    """The node port of broker `node` behind node ports: the one after the bootstrap's (`base`)."""
    return base + 1 + node


def external_port(network: BrokerNetwork, ordinal: str) -> str:
    """The EXTERNAL listener's advertised port of node `ordinal`: a number, or shell arithmetic
    when `ordinal` is a shell expression."""
    base = network.external_port_base
    if base is None:
        return str(network.external_port)
    if ordinal.isdigit():
        return str(broker_node_port(base, int(ordinal)))
    return f"$(({broker_node_port(base, 0)} + {ordinal}))"


def scram_credentials(cluster: Cluster) -> tuple[SaslMechanism, str, str] | None:
    """(mechanism, user, secret key) to add when storage is formatted, for SCRAM clusters.

    SCRAM users live in the cluster metadata, so the inter-broker user must exist before the
    first broker starts: `kafka-storage.sh format --add-scram` creates it. Not on a stack-managed
    cluster, whose brokers are `admin` or `kafka-broker` to each other: the stack creates its
    users through the Admin API once they run.
    """
    security = cluster.security
    if stack_managed(cluster):
        return None
    if (
        security.protocol.uses_sasl
        and security.sasl_mechanism in (SaslMechanism.SCRAM_SHA_256, SaslMechanism.SCRAM_SHA_512)
        and security.username
        and security.password
    ):
        return security.sasl_mechanism, security.username, security.password.key
    return None


def container_broker_secret_keys(cluster: Cluster, users: Mapping[str, SecretRef] | None = None) -> tuple[str, ...]:
    """Every secrets-file key a container cluster's brokers read (their SASL passwords and TLS
    store password). Not `runtime_config.broker_secret_keys`, the local brokers' keys.

    A stack-managed cluster's brokers read `admin`'s password, and on a PLAIN cluster those of
    `users` (its JAAS table); others the cluster's one user's."""
    keys: list[str] = []
    security = cluster.security
    if stack_managed(cluster):
        keys.append(admin_password(cluster.alias).key)
        if security.sasl_mechanism is SaslMechanism.PLAIN:
            keys += sorted({ref.key for ref in (users or {}).values()} - set(keys))
    elif security.protocol.uses_sasl and security.password:
        keys.append(security.password.key)
    if cluster.security.protocol.uses_tls:
        keys.append(broker_secret_key(cluster.alias))
    return tuple(keys)


def properties_text(props: Mapping[str, str]) -> str:
    """java.util.Properties text, keys sorted; `\\`, newlines and leading blanks escaped."""
    lines = []
    for key in sorted(props):
        value = props[key].replace("\\", "\\\\").replace("\n", "\\n")
        if value[:1] in (" ", "\t"):
            value = "\\" + value
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _secret_reader(secrets_file: str) -> str:
    # Plain `key=value` lines; the first match wins. Used only for values the JVM cannot read
    # through a config provider (the SCRAM user added when storage is formatted).
    return f'read_secret() {{\n  sed -n "s/^$1=//p" {_shell_quote(secrets_file)} | head -n 1\n}}\n'


def broker_start_script(
    cluster: Cluster,
    cluster_id: str,
    base_config: str,
    pod_lines: list[str],
    preamble: str = "",
    secrets_file: str = BROKER_SECRETS_FILE,
    data_dir: str = BROKER_DATA_DIR,
    runtime_dir: str = RUNTIME_DIR,
) -> str:
    """bash: write the effective server.properties, format storage once, exec the broker.

    `pod_lines` are appended to the shared properties and may use shell variables set in
    `preamble` (ORDINAL, RACK). SCRAM clusters add the inter-broker user at format time.
    """
    scram = scram_credentials(cluster)
    lines = [
        "#!/bin/bash",
        "set -euo pipefail",
        preamble.rstrip("\n"),
        f"mkdir -p {runtime_dir}/logs",
        f"CONFIG={runtime_dir}/server.properties",
        # install, not cp: the copy of a read-only (0555 ConfigMap) file would be read-only too, so
        # the lines below could not append to it, nor could a restarted container overwrite it.
        f'install -m 0600 {_shell_quote(base_config)} "$CONFIG"',
        "{",
        *(f'  echo "{line}"' for line in pod_lines),
        '} >> "$CONFIG"',
        "FORMAT_ARGS=()",
    ]
    if scram is not None:
        mechanism, user, key = scram
        lines += [
            _secret_reader(secrets_file).rstrip("\n"),
            f'PASSWORD="$(read_secret {_shell_quote(key.replace(".", chr(92) + "."))})"',
            f'[ -n "$PASSWORD" ] || {{ echo "secret key {key} missing in {secrets_file}" >&2; exit 1; }}',
            f'FORMAT_ARGS+=(--add-scram "{mechanism.value}=[name={user},password=$PASSWORD]")',
        ]
    lines += [
        f"if [ ! -f {data_dir}/log/meta.properties ]; then",
        f"  {KAFKA_HOME}/bin/kafka-storage.sh format --ignore-formatted --cluster-id {cluster_id} "
        '--config "$CONFIG" "${FORMAT_ARGS[@]}"',
        "fi",
        f'exec {KAFKA_HOME}/bin/kafka-server-start.sh "$CONFIG"',
    ]
    return "\n".join(line for line in lines if line) + "\n"
