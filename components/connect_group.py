"""ConnectWorkerGroup: a distributed Kafka Connect worker group that runs MM2 connectors.

Its storage topics (config, offsets, status) live on the cluster named in the stack config. The
workers run on the group's platform (`components/platform/`: one JVM per worker on `local`, a
Deployment on `kubernetes`, one container per worker on `docker`); `external` adopts a running
Connect cluster by its REST URL and deploys nothing. Where each platform keeps the group's
secrets is described in its package (`components/platform/local/deploy.py` for `local`).

The component is wiring: it validates, hands the workers to the platform's backend
(`components/platform/contract.py`) and exports the REST endpoint connectors are sent to.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pulumi

from components.kafka_cluster import KafkaCluster
from components.platform.backends import platform_backend
from components.platform.contract import ContainerPlatforms, WorkerRequest
from components.platform.lag_exporter import lag_flows, plan_clusters
from components.platform.local.lag_exporter import deploy_local_lag_exporter
from components.platform.local.layout import PROCESS_PROPERTIES, LocalPlatform, worker_path
from components.platform.local.network import LocalNetwork
from components.platform.local.tls import StackTls
from components.platform.local.watcher import deploy_local_watcher
from components.platform.topology_facts import group_clusters
from components.topology import Platform, Topology, WorkerGroup, worker_rest_urls
from components.topology.connectors import EXACTLY_ONCE_DISABLING, EXACTLY_ONCE_PREPARING, wants_exactly_once
from components.topology.java_properties import parse_properties
from components.topology.runtime_config import (
    EXACTLY_ONCE_KEY,
    next_exactly_once_stage,
    with_exactly_once_stage,
)
from components.topology.tls import local_rest_tls, local_tls_cluster


class ConnectWorkerGroup(pulumi.ComponentResource):
    """Connect workers sharing one group id; `url` is the REST endpoint the connectors are sent to,
    `auth` (secret, None without restAuth) the basic-auth credentials {username, password},
    `ca_pem` (None without restTls) the CA certificate its HTTPS listener is verified against."""

    url: pulumi.Output[str]
    auth: pulumi.Output[dict[str, str]] | None
    ca_pem: pulumi.Output[str] | None
    workers: list[pulumi.Resource]

    def __init__(
        self,
        name: str,
        group: WorkerGroup,
        topology: Topology,
        clusters: dict[str, KafkaCluster],
        local: LocalPlatform,
        credentials: pulumi.Output[Mapping[str, str]] | None = None,
        opts: pulumi.ResourceOptions | None = None,
        platforms: ContainerPlatforms | None = None,
        tls: StackTls | None = None,
        network: LocalNetwork | None = None,
    ) -> None:
        # Also registered as outputs (see KafkaCluster): policies judge REST auth from them.
        rest_tls = local_rest_tls(group)
        props = {
            "name": group.name,
            "cluster": group.cluster,
            "workers": group.workers,
            "restAuth": group.rest_auth,
            "restTls": rest_tls or bool(group.url and group.url.startswith("https://")),
        }
        super().__init__("mm2:index:ConnectWorkerGroup", name, props, opts)
        self.workers = []
        secrets = credentials if credentials is not None else pulumi.Output.secret({})
        storage_tls = local_tls_cluster(topology.clusters[group.cluster])
        if (rest_tls or storage_tls) and group.platform is Platform.LOCAL and tls is None:
            raise ValueError(f"ConnectWorkerGroup {group.name!r}: TLS needs the stack TLS material")
        self.ca_pem = tls.ca_pem if tls is not None and rest_tls else None
        self.auth = None
        if group.rest_auth and group.rest_username and group.rest_password:
            user, key = group.rest_username, group.rest_password.key
            self.auth = pulumi.Output.secret(secrets.apply(lambda v: {"username": user, "password": str(v[key])}))
        endpoint: pulumi.Input[str] = group.url or worker_rest_urls(group)[0]
        # Where the group's lag exporter serves /metrics and /expired (components/ops/lag_exporter.py):
        # a loopback URL locally, the in-cluster Service URL on Kubernetes.
        self.lag_url: pulumi.Input[str] | None = None
        self.pods: dict[str, str] = {}  # where the workers run as pods (DeployedWorkers.pods)
        # The model derives the group's platform: external whenever it only has a URL, else the
        # platform of its storage cluster (a kubernetes group may also carry the URL the
        # deployer reaches it through).
        backend = platform_backend(group.platform, local, platforms or ContainerPlatforms(), tls, network)
        if backend is not None:
            others = tuple(clusters[c.alias] for c in group_clusters(topology, group) if c.alias != group.cluster)
            request = WorkerRequest(
                group, topology, secrets, clusters[group.cluster], self.auth, self.ca_pem, others=others
            )
            deployed = backend.deploy_workers(self, name, request)
            self.workers = list(deployed.resources)
            endpoint = deployed.url if deployed.url is not None else endpoint
            self.lag_url = deployed.lag_url
            self.pods = dict(deployed.pods or {})
        if group.platform is Platform.LOCAL:
            # The group's watcher, a process of the stack like its workers: restarts dead workers
            # (and autoRestart connectors).
            self.watcher = deploy_local_watcher(
                self, name, topology, group.name, local, self.auth, self.ca_pem, self.workers
            )
        if group.platform is Platform.LOCAL and lag_flows(topology, group.name):
            clients = {alias: clusters[alias].client for alias in plan_clusters(topology, group.name)}
            self.lag_exporter = deploy_local_lag_exporter(
                self, name, topology, group.name, local, clients, self.workers
            )
            self.lag_url = self.lag_exporter.url
        self.url = pulumi.Output.from_input(endpoint)
        # The other workers of a group the stack runs on this host: connector calls fail over to them.
        self.other_urls: list[str] = (
            list(worker_rest_urls(group)[1:]) if group.platform in (Platform.LOCAL, Platform.DOCKER) else []
        )
        self.register_outputs({**props, "url": self.url})


def with_exactly_once_stages(topology: Topology, local: LocalPlatform) -> Topology:
    """Each local worker group at its next exactly-once rollout step.

    Connect's two-step rollout (KIP-618) for a group that already runs without it: one
    `pulumi up` rolls every worker to `exactly.once.source.support=preparing` (connectors stay
    at-least-once), the next rolls them to `enabled` and turns exactly-once on in the source
    connectors. A new group starts at enabled. Turned off, the workers roll to disabled while
    the grants and connector overrides their transactions need stay (`disabling`); the next
    `pulumi up` removes them. The step is read from the properties the running workers were
    started with; groups on other platforms start at enabled.
    """
    for name, group in topology.worker_groups.items():
        if group.platform is not Platform.LOCAL or group.url:
            continue
        wanted = wants_exactly_once(topology, group)
        deployed = deployed_worker_values(local, group, EXACTLY_ONCE_KEY, "disabled")
        stage = next_exactly_once_stage(deployed, wanted)
        if stage == EXACTLY_ONCE_PREPARING:
            pulumi.log.info(
                f"ConnectWorkerGroup {name!r}: exactly-once rollout step 1 of 2, workers restart with "
                f"{EXACTLY_ONCE_KEY}=preparing and flows stay at-least-once; run `pulumi up` again to enable it."
            )
        elif stage == EXACTLY_ONCE_DISABLING:
            pulumi.log.info(
                f"ConnectWorkerGroup {name!r}: exactly-once off, step 1 of 2, workers restart with "
                f"{EXACTLY_ONCE_KEY}=disabled and keep their transactional grants until all have; "
                "run `pulumi up` again to remove them."
            )
        if stage is not None:
            topology = with_exactly_once_stage(topology, name, stage)
    return topology


def deployed_worker_values(local: LocalPlatform, group: WorkerGroup, key: str, absent: str) -> list[str]:
    """`key` in the properties each existing worker of a local group was started with (`absent`
    when not set); workers never started (a new group, or one being scaled up) are left out."""
    values = []
    for index in range(group.workers):
        file = Path(local.run_dir(worker_path(group.name, index))) / PROCESS_PROPERTIES
        try:
            pairs = parse_properties(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        values.append(dict(pairs).get(key, absent))
    return values
