"""The `local` platform: one JVM per broker (KRaft, combined broker+controller) and per Connect
worker, bound to 127.0.0.1 (or, when the stack's links are emulated, to its datacenter's home
address inside that datacenter's network namespace), in the run directories `layout` names.

Secrets, all in 0600 files written by providers from secret inputs, never in properties:
- per broker, `config/secrets.properties`: its own password (and, on a PLAIN cluster, every
  user's) and its keystore and truststore passwords;
- the group's secrets file (`group.secrets_file`, set by `components.program` to the group's directory):
  the MM2 passwords its connectors resolve through `${file:...}` placeholders, shared by every
  worker because Connect resolves a connector's placeholders on whichever worker runs it;
  rewritten in place on rotation (the flows restart their connectors);
- per worker, `config/worker-secrets.properties`: the worker's own Kafka password, and with
  `restAuth` the REST users file and the JAAS file naming it (passed as
  `-Djava.security.auth.login.config`, a path only); a change restarts the worker.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

from components.platform.contract import BrokerRequest, DeployedBrokers, DeployedWorkers, WorkerRequest
from components.platform.local.layout import (
    BROKER_DATA_DIR,
    BROKER_SECRETS,
    REST_JAAS,
    REST_USERS,
    WORKER_SECRETS,
    LocalPlatform,
    broker_path,
    group_path,
    worker_path,
)
from components.platform.local.metrics import agent_options, with_exporter_config
from components.platform.local.network import LocalNetwork
from components.platform.local.provider import LocalProcess
from components.platform.local.rolling import rolling_input
from components.platform.local.secrets_file import SecretsFile
from components.platform.local.tls import StackTls
from components.platform.readiness import connect_probe, kafka_probe
from components.platform.secret_files import rest_jaas_text
from components.platform.topology_facts import kraft_cluster_id
from components.topology import SaslMechanism, broker_ports, broker_properties, worker_properties, worker_rest_urls
from components.topology.jaas import jaas_ready, sasl_password_keys
from components.topology.model import ADMIN_USER
from components.topology.restarts import cluster_restarts, worker_group_restarts
from components.topology.runtime_config import broker_secret_keys, worker_secret_keys
from components.topology.security import group_secret_keys, render_secrets
from components.topology.tls import cluster_leaf_name, local_rest_tls, local_tls_cluster, rest_leaf_name

KAFKA_MAIN = "kafka.Kafka"
CONNECT_MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"


@dataclass(frozen=True)
class LocalBackend:
    """The local platform's `PlatformBackend`: `tls` is the stack's TLS material, when a local
    cluster or worker group uses TLS."""

    local: LocalPlatform
    tls: StackTls | None = None
    network: LocalNetwork | None = None

    def _placed(self, host: str, opts: pulumi.ResourceOptions) -> dict[str, Any]:
        """Where a process listens and runs (an emulated datacenter's namespace), started after
        the emulated network when there is one."""
        if self.network is None:
            return {"host": host, "opts": opts}
        after = pulumi.ResourceOptions(depends_on=[self.network.resource])
        return {
            "host": host,
            "netns": self.network.namespace_of(host),
            "opts": pulumi.ResourceOptions.merge(opts, after),
        }

    def deploy_brokers(self, parent: pulumi.ComponentResource, name: str, request: BrokerRequest) -> DeployedBrokers:
        cluster, local, tls = request.cluster, self.local, self.tls
        cluster_id = kraft_cluster_id(local.stack, cluster.alias)
        broker_users = {u.name: u.password for u in request.users if u.name != ADMIN_USER}
        broker_keys = list(broker_secret_keys(cluster))
        if cluster.security.protocol.uses_sasl and cluster.security.sasl_mechanism is SaslMechanism.PLAIN:
            broker_keys += [ref.key for ref in broker_users.values()]
        # Every user's password the brokers hold sits in their JAAS user table.
        jaas_keys = (
            frozenset(u.password.key for u in request.users) if cluster.security.protocol.uses_sasl else frozenset()
        )
        tls_on = tls is not None and local_tls_cluster(cluster)
        restart_on = tls.restart_on(cluster_leaf_name(cluster.alias)) if tls is not None and tls_on else None
        secrets = request.credentials
        brokers = []
        for node_id, (client_port, controller_port) in enumerate(broker_ports(cluster)):
            path = broker_path(cluster.alias, node_id)
            run_dir = local.run_dir(path)
            files: pulumi.Input[Mapping[str, str]] = {}
            if broker_keys:
                files = secrets.apply(lambda v: {BROKER_SECRETS: _secrets_text(v, broker_keys, jaas_keys)})
            brokers.append(
                LocalProcess(
                    f"{name}-broker-{node_id}",
                    component=f"KafkaCluster {cluster.alias!r}, broker {node_id}",
                    marker=local.marker(path),
                    main_class=KAFKA_MAIN,
                    classpath_dir=local.kafka_libs,
                    run_dir=run_dir,
                    properties=broker_properties(
                        cluster,
                        node_id,
                        f"{run_dir}/{BROKER_DATA_DIR}",
                        secrets_file=f"{run_dir}/{BROKER_SECRETS}",
                        users=broker_users,
                        tls=tls.layout if tls is not None and tls_on else None,
                    ),
                    ports=[client_port, controller_port],
                    config_key=f"mm2:clusters.{cluster.alias}.port",
                    cluster_id=cluster_id,
                    ready=request.admin.apply(functools.partial(kafka_probe, f"{cluster.host}:{client_port}")),
                    secret_files=with_exporter_config(files, cluster.metrics_port),
                    restart_on=restart_on,
                    jvm_options=agent_options(
                        run_dir,
                        cluster.host,
                        cluster.metrics_port,
                        node_id,
                        f"mm2:clusters.{cluster.alias}.metricsPort",
                    ),
                    heap="512m",
                    group_size=cluster.brokers,
                    **self._placed(cluster.host, pulumi.ResourceOptions(parent=parent)),
                    rolling=rolling_input(
                        cluster_restarts(cluster), local.run_dir(cluster.alias), cluster.brokers, node_id=node_id
                    ),
                )
            )
        return DeployedBrokers(resources=tuple(brokers))

    def deploy_workers(self, parent: pulumi.ComponentResource, name: str, request: WorkerRequest) -> DeployedWorkers:
        group, topology, secrets, local, tls = (
            request.group,
            request.topology,
            request.credentials,
            self.local,
            self.tls,
        )
        keys = group_secret_keys(topology, group)
        jaas_keys = sasl_password_keys(topology)
        shared = SecretsFile(
            f"{name}-secrets",
            path=group.secrets_file,
            content=secrets.apply(lambda v: _secrets_text(v, keys, jaas_keys)),
            opts=pulumi.ResourceOptions(parent=parent),
        )
        # Workers need their storage cluster up (users and ACLs included) and the secrets
        # file; connectors later need every cluster they touch.
        depends: list[pulumi.Resource] = [request.storage, shared]
        own_keys = worker_secret_keys(topology, group)
        rest_tls = local_rest_tls(group)
        restart_on = None
        if tls is not None and (rest_tls or local_tls_cluster(topology.clusters[group.cluster])):
            restart_on = tls.restart_on(*([rest_leaf_name(group.name)] if rest_tls else []))
        workers = []
        for index, url in enumerate(worker_rest_urls(group)):
            path = worker_path(group.name, index)
            run_dir = local.run_dir(path)
            jvm_options = [f"-Djava.security.auth.login.config={run_dir}/{REST_JAAS}"] if request.auth else []
            workers.append(
                LocalProcess(
                    f"{name}-worker-{index}",
                    component=f"ConnectWorkerGroup {group.name!r}, worker {index}",
                    marker=local.marker(path),
                    main_class=CONNECT_MAIN,
                    classpath_dir=local.kafka_libs,
                    run_dir=run_dir,
                    properties=worker_properties(
                        topology,
                        group,
                        index,
                        worker_secrets_file=f"{run_dir}/{WORKER_SECRETS}",
                        tls=tls.layout if tls is not None else None,
                    ),
                    ports=[int(url.rsplit(":", 1)[1])],
                    config_key=f"mm2:workerGroups.{group.name}.restPort",
                    ready=pulumi.Output.all(secrets, request.auth, request.ca_pem).apply(
                        functools.partial(_connect_probe, url)
                    ),
                    secret_files=with_exporter_config(
                        pulumi.Output.all(secrets, request.auth).apply(
                            functools.partial(_worker_files, run_dir, own_keys, jaas_keys)
                        ),
                        group.metrics_port,
                    ),
                    restart_on=restart_on,
                    jvm_options=jvm_options
                    + agent_options(
                        run_dir, group.host, group.metrics_port, index, f"mm2:workerGroups.{group.name}.metricsPort"
                    ),
                    heap="768m",
                    group_size=group.workers,
                    timeout_seconds=240,
                    **self._placed(group.host, pulumi.ResourceOptions(parent=parent, depends_on=depends)),
                    rolling=rolling_input(
                        worker_group_restarts(group), local.run_dir(group_path(group.name)), group.workers
                    ),
                )
            )
        return DeployedWorkers(resources=tuple(workers))


def _connect_probe(url: str, resolved: list[Any]) -> dict[str, Any]:
    """A worker's readiness probe from `resolved` = [passwords, auth, ca_pem]."""
    return connect_probe(url, resolved[1], resolved[2])


def _secrets_text(values: Mapping[str, Any], keys: Iterable[str], jaas_keys: frozenset[str]) -> str:
    """A FileConfigProvider file of `keys`, the SASL passwords quoted for the JAAS strings that
    name them (components/topology/jaas.py)."""
    return render_secrets(jaas_ready({k: str(values[k]) for k in keys}, jaas_keys))


def _worker_files(
    run_dir: str, own_keys: tuple[str, ...], jaas_keys: frozenset[str], resolved: list[Any]
) -> dict[str, str]:
    """The worker's own secret files (relative to its run directory); `resolved` is [passwords, auth].

    `own_keys`: what the worker itself resolves (its Kafka password, truststore and REST
    keystore passwords), not the connectors' passwords (those are in the group's file)."""
    values: Mapping[str, str] = resolved[0]
    auth: Mapping[str, str] | None = resolved[1]
    files: dict[str, str] = {}
    if own_keys:
        files[WORKER_SECRETS] = _secrets_text(values, own_keys, jaas_keys)
    if auth:
        files[REST_USERS] = render_secrets({auth["username"]: auth["password"]})
        files[REST_JAAS] = rest_jaas_text(f"{run_dir}/{REST_USERS}")
    return files
