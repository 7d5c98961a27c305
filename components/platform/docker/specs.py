"""Docker (single host) container specs for brokers and Connect workers, as plain data.

Pure: no pulumi import and no I/O. `deploy` turns each spec into a `DockerContainer` resource and
`engine.run_container` runs one on a Docker engine directly; both read only these fields.

Every container shares the host's network, as the local platform's processes do: the model
gives every client the address 127.0.0.1:<port>, connector configs carry it, and the engine
runs with `--bridge=none --iptables=false`, so there is no private network to join. Broker i of
a cluster listens on 127.0.0.1:port+2i (CLIENT) and port+2i+1 (CONTROLLER); worker i's REST
listener is on 127.0.0.1:restPort+i. Secret files are `SecretUpload`s whose text the caller
renders from the stack's `mm2:secrets` and keeps secret.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from components.platform.container_broker import (
    BrokerNetwork,
    advertised_listeners,
    broker_start_script,
    container_broker_properties,
    container_broker_secret_keys,
    properties_text,
)
from components.platform.image_layout import (
    BROKER_DATA_DIR,
    BROKER_SECRETS_FILE,
    CONFIG_DIR,
    KAFKA_HOME,
    REST_USERS_FILE,
)
from components.platform.secret_files import (
    container_group_secret_keys,
    rest_jaas_text,
    rest_password_key,
    rest_users_text,
    secrets_file_text,
)
from components.platform.settings import DockerSettings
from components.platform.topology_facts import kraft_cluster_id
from components.topology import broker_ports, worker_rest_urls
from components.topology.model import Cluster, Platform, Topology, WorkerGroup
from components.topology.runtime_config import worker_properties

# A container that stops on its own (a crash, the OOM killer) is started again by the engine;
# one stopped on purpose (`docker stop`, `docker kill`) stays stopped until started again.
RESTART_POLICY = "unless-stopped"


@dataclass(frozen=True)
class SecretUpload:
    """A file whose text is rendered from the stack's secrets (readable by the image user only)."""

    path: str
    render: Callable[[Mapping[str, str]], str]
    keys: tuple[str, ...]


@dataclass(frozen=True)
class ContainerSpec:
    name: str  # container name on the host
    image: str
    command: tuple[str, ...]
    env: Mapping[str, str]
    uploads: Mapping[str, str]  # path -> plain text (no secrets)
    secret_uploads: tuple[SecretUpload, ...] = ()
    volume: str | None = None  # named volume for data
    volume_path: str | None = None
    healthcheck: tuple[str, ...] = ()
    restart: str = RESTART_POLICY
    stack: str = ""  # labels the container `mm2.io/stack=<stack>`


def _port_check(port: int) -> tuple[str, ...]:
    return ("CMD-SHELL", f"bash -c 'printf \"\" > /dev/tcp/127.0.0.1/{port}'")


def docker_prefix(stack: str) -> str:
    return f"mm2-{stack}"


def broker_container(stack: str, alias: str, node_id: int) -> str:
    return f"{docker_prefix(stack)}-{alias}-{node_id}"


def worker_container(stack: str, group: str, index: int) -> str:
    return f"{docker_prefix(stack)}-connect-{group}-{index}"


def data_volume(container: str) -> str:
    return f"{container}-data"


@dataclass(frozen=True)
class DockerClaim:
    """What one container of a stack takes on its host: the ports it listens on (host network),
    the stack-config key that sets them, its data volume."""

    container: str
    stack: str
    ports: tuple[int, ...]
    config_key: str
    volume: str | None = None


def cluster_claims(cluster: Cluster, stack: str) -> tuple[DockerClaim, ...]:
    """Broker i's container: its client and controller ports and its data volume."""
    key = f"mm2:clusters.{cluster.alias}.port"
    claims = []
    for node_id, ports in enumerate(broker_ports(cluster)):
        name = broker_container(stack, cluster.alias, node_id)
        claims.append(DockerClaim(name, stack, tuple(ports), key, data_volume(name)))
    return tuple(claims)


def group_claims(group: WorkerGroup, stack: str) -> tuple[DockerClaim, ...]:
    """Worker i's container: its REST port."""
    key = f"mm2:workerGroups.{group.name}.restPort"
    ports = [int(url.rsplit(":", 1)[1]) for url in worker_rest_urls(group)]
    return tuple(DockerClaim(worker_container(stack, group.name, i), stack, (p,), key) for i, p in enumerate(ports))


def docker_claims(topology: Topology, stack: str) -> tuple[DockerClaim, ...]:
    """The claims of every docker broker and worker of `topology` (checked at preview)."""
    clusters = [c for c in topology.clusters.values() if c.platform is Platform.DOCKER and c.port is not None]
    groups = [g for g in topology.worker_groups.values() if g.platform is Platform.DOCKER]
    return tuple(
        [claim for c in clusters for claim in cluster_claims(c, stack)]
        + [claim for g in groups for claim in group_claims(g, stack)]
    )


def docker_broker_specs(cluster: Cluster, stack: str, settings: DockerSettings) -> tuple[ContainerSpec, ...]:
    """One container per broker on the host network, broker i on 127.0.0.1:port+2i and +2i+1."""
    if cluster.platform is not Platform.DOCKER or cluster.port is None:
        raise ValueError(f"cluster {cluster.alias} is not a docker cluster with a port")
    if cluster.security.protocol.uses_tls:
        raise ValueError(
            f"mm2:clusters.{cluster.alias}.security.protocol: the docker platform does not provision TLS "
            f"certificates, so {cluster.security.protocol.value} cannot run there. Fix: use SASL_PLAINTEXT "
            "(as seed 001 does) or PLAINTEXT on docker, or platform kubernetes for TLS."
        )
    network = BrokerNetwork(
        voter_host="127.0.0.1", advertised_host="127.0.0.1", host_port_base=cluster.port, listen_host="127.0.0.1"
    )
    props = properties_text(container_broker_properties(cluster, network))
    cluster_id = kraft_cluster_id(stack, cluster.alias)
    keys = container_broker_secret_keys(cluster)
    secret_uploads: tuple[SecretUpload, ...] = ()
    if keys:
        secret_uploads = (SecretUpload(BROKER_SECRETS_FILE, functools.partial(secrets_file_text, keys), keys),)
    specs = []
    for i in range(cluster.brokers):
        node_lines = [
            f"node.id={i}",
            f"listeners={network.listeners(i)}",
            f"advertised.listeners={advertised_listeners(network, str(i))}",
        ]
        if cluster.datacenter:
            node_lines.append(f"broker.rack={cluster.datacenter}")
        script = broker_start_script(cluster, cluster_id, f"{CONFIG_DIR}/server.properties", node_lines)
        name = broker_container(stack, cluster.alias, i)
        specs.append(
            ContainerSpec(
                name=name,
                image=settings.image,
                command=("/bin/bash", f"{CONFIG_DIR}/start.sh"),
                env={"KAFKA_HEAP_OPTS": f"-Xms{settings.broker_heap} -Xmx{settings.broker_heap}"},
                uploads={f"{CONFIG_DIR}/server.properties": props, f"{CONFIG_DIR}/start.sh": script},
                secret_uploads=secret_uploads,
                volume=data_volume(name),
                volume_path=BROKER_DATA_DIR,
                healthcheck=_port_check(network.client_port(i)),
                stack=stack,
            )
        )
    return tuple(specs)


def docker_connect_specs(
    group: WorkerGroup, topology: Topology, stack: str, settings: DockerSettings
) -> tuple[ContainerSpec, ...]:
    """One container per worker on the host network, worker i's REST listener on restPort+i."""
    if group.platform is not Platform.DOCKER:
        raise ValueError(f"worker group {group.name} is {group.platform.value}, not docker")
    keys = container_group_secret_keys(topology, group)
    specs = []
    for i in range(group.workers):
        worker = worker_properties(topology, group, i)
        uploads = {f"{CONFIG_DIR}/connect-distributed.properties": properties_text(worker)}
        secret_uploads: list[SecretUpload] = []
        if keys:
            secret_uploads.append(SecretUpload(group.secrets_file, functools.partial(secrets_file_text, keys), keys))
        env = {"KAFKA_HEAP_OPTS": f"-Xms{settings.connect_heap} -Xmx{settings.connect_heap}"}
        if group.rest_auth:
            uploads[f"{CONFIG_DIR}/rest-jaas.conf"] = rest_jaas_text(REST_USERS_FILE)
            key = rest_password_key(group)
            secret_uploads.append(
                SecretUpload(REST_USERS_FILE, functools.partial(rest_users_text, group), (key,) if key else ())
            )
            env["KAFKA_OPTS"] = f"-Djava.security.auth.login.config={CONFIG_DIR}/rest-jaas.conf"
        specs.append(
            ContainerSpec(
                name=worker_container(stack, group.name, i),
                image=settings.image,
                command=(f"{KAFKA_HOME}/bin/connect-distributed.sh", f"{CONFIG_DIR}/connect-distributed.properties"),
                env=env,
                uploads=uploads,
                secret_uploads=tuple(secret_uploads),
                healthcheck=_port_check((group.rest_port or 0) + i),
                stack=stack,
            )
        )
    return tuple(specs)
