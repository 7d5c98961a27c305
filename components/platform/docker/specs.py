"""Docker (single host) container specs for brokers, Connect workers and Kafka UI, as plain data.

Pure: no pulumi import and no I/O; `components.platform.docker.deploy` turns each spec into a
pulumi_docker container. Secret files are `SecretUpload`s whose text the deploy side renders
from the stack's `mm2:secrets` and marks secret.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from components.platform.container_broker import (
    CLIENT_PORT,
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
from components.topology.model import Cluster, Platform, Topology, WorkerGroup
from components.topology.runtime_config import worker_properties


@dataclass(frozen=True)
class SecretUpload:
    """A file whose text is rendered from the stack's secrets (docker.py marks it secret)."""

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
    ports: tuple[tuple[int, int], ...] = ()  # (container port, host port on 127.0.0.1)
    network_aliases: tuple[str, ...] = ()
    host_network: bool = False
    volume: str | None = None  # named volume for data
    volume_path: str | None = None
    healthcheck: tuple[str, ...] = ()


def docker_prefix(stack: str) -> str:
    return f"mm2-{stack}"


def docker_broker_specs(cluster: Cluster, stack: str, settings: DockerSettings) -> tuple[ContainerSpec, ...]:
    """One container per broker: CLIENT published on 127.0.0.1:port+2i, INTERNAL and
    CONTROLLER on the private network only."""
    if cluster.platform is not Platform.DOCKER or cluster.port is None:
        raise ValueError(f"cluster {cluster.alias} is not a docker cluster with a port")
    if cluster.security.protocol.uses_tls:
        raise ValueError(
            f"mm2:clusters.{cluster.alias}.security.protocol: the docker platform does not provision TLS "
            f"certificates, so {cluster.security.protocol.value} cannot run there. Fix: use SASL_PLAINTEXT "
            "(as seed 001 does) or PLAINTEXT on docker, or platform kubernetes for TLS."
        )
    prefix = docker_prefix(stack)
    host = f"{prefix}-{cluster.alias}-{{ordinal}}"
    cluster_id = kraft_cluster_id(stack, cluster.alias)
    keys = container_broker_secret_keys(cluster)
    specs = []
    for i in range(cluster.brokers):
        network = BrokerNetwork(
            voter_host=host, advertised_host="127.0.0.1", advertised_port=cluster.port + 2 * i, internal_host=host
        )
        props = container_broker_properties(cluster, network)
        pod_lines = [f"node.id={i}", f"advertised.listeners={advertised_listeners(network, str(i))}"]
        if cluster.datacenter:
            pod_lines.append(f"broker.rack={cluster.datacenter}")
        script = broker_start_script(cluster, cluster_id, f"{CONFIG_DIR}/server.properties", pod_lines)
        secret_uploads: tuple[SecretUpload, ...] = ()
        if keys:
            secret_uploads = (SecretUpload(BROKER_SECRETS_FILE, functools.partial(secrets_file_text, keys), keys),)
        name = host.format(ordinal=i)
        specs.append(
            ContainerSpec(
                name=name,
                image=settings.image,
                command=("/bin/bash", f"{CONFIG_DIR}/start.sh"),
                env={"KAFKA_HEAP_OPTS": f"-Xms{settings.broker_heap} -Xmx{settings.broker_heap}"},
                uploads={f"{CONFIG_DIR}/server.properties": properties_text(props), f"{CONFIG_DIR}/start.sh": script},
                secret_uploads=secret_uploads,
                ports=((CLIENT_PORT, cluster.port + 2 * i),),
                network_aliases=(name,),
                volume=f"{name}-data",
                volume_path=BROKER_DATA_DIR,
                healthcheck=("CMD-SHELL", f"bash -c 'printf \"\" > /dev/tcp/127.0.0.1/{CLIENT_PORT}'"),
            )
        )
    return tuple(specs)


def docker_connect_specs(
    group: WorkerGroup, topology: Topology, stack: str, settings: DockerSettings
) -> tuple[ContainerSpec, ...]:
    """One container per worker on the host network: the model addresses every broker as
    127.0.0.1:<published port> and every worker as 127.0.0.1:restPort+i, and connector configs
    carry those addresses, so workers must share the host's loopback."""
    if group.platform is not Platform.DOCKER:
        raise ValueError(f"worker group {group.name} is {group.platform.value}, not docker")
    prefix = docker_prefix(stack)
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
        port = (group.rest_port or 0) + i
        specs.append(
            ContainerSpec(
                name=f"{prefix}-connect-{group.name}-{i}",
                image=settings.image,
                command=(f"{KAFKA_HOME}/bin/connect-distributed.sh", f"{CONFIG_DIR}/connect-distributed.properties"),
                env=env,
                uploads=uploads,
                secret_uploads=tuple(secret_uploads),
                host_network=True,
                healthcheck=("CMD-SHELL", f"bash -c 'printf \"\" > /dev/tcp/127.0.0.1/{port}'"),
            )
        )
    return tuple(specs)


def docker_kafka_ui_spec(topology: Topology, stack: str, settings: DockerSettings) -> ContainerSpec:
    """Kafka UI (seed 001) wired to every docker cluster and Connect group, on the host network
    for the same reason as the workers. Credentials come from a secret config file, not env."""
    clusters = [c for c in topology.clusters.values() if c.platform is Platform.DOCKER]
    groups = [g for g in topology.worker_groups.values() if g.platform is Platform.DOCKER]
    keys = sorted(
        {ref.key for c in clusters for ref in c.security.secret_refs()}
        | {k for g in groups if (k := rest_password_key(g))}
    )
    path = "/etc/kafkaui/mm2.yaml"

    def render(values: Mapping[str, str]) -> str:
        from components.topology.connectors import bootstrap_servers, security_properties

        missing = [k for k in keys if k not in values]
        if missing:
            raise KeyError("missing secret(s) for Kafka UI: " + ", ".join(missing))
        entries = []
        for cluster in clusters:
            props = security_properties(cluster.security, "/nonexistent")
            # Kafka UI has no config provider: resolve placeholders to the values themselves.
            resolved = {k: _resolve(v, values) for k, v in props.items()}
            entry: dict[str, Any] = {
                "name": cluster.alias,
                "bootstrapServers": bootstrap_servers(cluster),
                "properties": resolved,
            }
            connects: list[dict[str, Any]] = []
            for g in groups:
                if g.cluster != cluster.alias:
                    continue
                connect: dict[str, Any] = {"name": g.name, "address": f"http://127.0.0.1:{g.rest_port}"}
                key = rest_password_key(g)
                if key is not None:
                    connect.update({"username": g.rest_username or "mm2-admin", "password": values[key]})
                connects.append(connect)
            if connects:
                entry["kafkaConnect"] = connects
            entries.append(entry)
        return json.dumps({"kafka": {"clusters": entries}}, indent=2) + "\n"

    return ContainerSpec(
        name=f"{docker_prefix(stack)}-kafka-ui",
        image=settings.kafka_ui_image,
        command=(),
        env={
            "spring.config.additional-location": path,
            "SERVER_ADDRESS": "127.0.0.1",
            "SERVER_PORT": str(settings.kafka_ui_port),
            "LOGGING_LEVEL_ROOT": "warn",
        },
        uploads={},
        secret_uploads=(SecretUpload(path, render, tuple(keys)),),
        host_network=True,
    )


_PLACEHOLDER = re.compile(r"\$\{file:[^:}]+:([A-Za-z0-9_.-]+)\}")


def _resolve(text: str, values: Mapping[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], text)
