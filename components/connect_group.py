"""ConnectWorkerGroup: a distributed Kafka Connect worker group that runs MM2 connectors.

Its storage topics (config, offsets, status) live on the cluster named in the stack config. On
the `local` platform each worker is a JVM on 127.0.0.1; `external` adopts a running Connect
cluster by its REST URL and deploys nothing.

Secrets on the local platform, all in 0600 files written by providers from secret inputs:
- the group's secrets file (`group.secrets_file`, set by `__main__` to the group's run
  directory): the MM2 passwords its connectors resolve through `${file:...}` placeholders,
  shared by every worker because Connect resolves a connector's placeholders on whichever
  worker runs it; rewritten in place on rotation (the flows restart their connectors);
- per worker, `config/worker-secrets.properties`: the worker's own Kafka password, and with
  `restAuth` the REST users file and the JAAS file naming it (passed as
  `-Djava.security.auth.login.config`, a path only); a change restarts the worker.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import pulumi

from components.kafka_cluster import ContainerPlatforms, KafkaCluster, LocalPlatform
from components.local.provider import LocalProcess
from components.local.secrets_file import SecretsFile
from components.local.tls import StackTls
from components.platform.docker import deploy_connect_docker
from components.platform.kubernetes import deploy_connect_kubernetes
from components.topology import Platform, Topology, WorkerGroup, worker_properties, worker_rest_urls
from components.topology.runtime_config import worker_secret_keys
from components.topology.security import group_secret_keys, render_secrets
from components.topology.tls import local_rest_tls, local_tls_cluster, rest_leaf_name

CONNECT_MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"
WORKER_SECRETS = "config/worker-secrets.properties"
REST_JAAS = "config/rest-jaas.conf"
REST_USERS = "config/rest-users.properties"
PROPERTY_FILE_LOGIN_MODULE = "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"


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
        urls = worker_rest_urls(group)
        platforms = platforms or ContainerPlatforms()
        endpoint: pulumi.Input[str] = group.url or urls[0]
        after_storage = pulumi.ResourceOptions(depends_on=[clusters[group.cluster]])
        # The model derives the group's platform: external whenever it only has a URL, else the
        # platform of its storage cluster (a kubernetes group may also carry the URL the
        # deployer reaches it through).
        if group.platform is Platform.EXTERNAL:
            pass  # adopted Connect cluster: nothing to run
        elif group.platform is Platform.KUBERNETES:
            k8s = deploy_connect_kubernetes(
                self,
                name,
                group,
                topology,
                after_storage,
                settings=platforms.kubernetes,
                secret_values=platforms.secret_values,
            )
            self.workers, endpoint = list(k8s.resources), k8s.url
        elif group.platform is Platform.DOCKER:
            dock = deploy_connect_docker(
                self,
                name,
                group,
                topology,
                after_storage,
                stack=local.stack,
                settings=platforms.docker,
                secret_values=platforms.secret_values,
            )
            self.workers = list(dock.resources)
            endpoint = dock.url or endpoint
        elif group.platform is Platform.LOCAL:
            keys = group_secret_keys(topology, group)
            shared = SecretsFile(
                f"{name}-secrets",
                path=group.secrets_file,
                content=secrets.apply(lambda v: render_secrets({k: str(v[k]) for k in keys})),
                opts=pulumi.ResourceOptions(parent=self),
            )
            # Workers need their storage cluster up (users and ACLs included) and the secrets
            # file; connectors later need every cluster they touch.
            depends: list[pulumi.Resource] = [clusters[group.cluster], shared]
            own_keys = worker_secret_keys(topology, group)
            restart_on = None
            if tls is not None and (rest_tls or storage_tls):
                restart_on = tls.restart_on(*([rest_leaf_name(group.name)] if rest_tls else []))
            ca_pem = self.ca_pem
            for index, url in enumerate(urls):
                port = int(url.rsplit(":", 1)[1])
                run_dir = f"{local.run_root}/connect-{group.name}/worker-{index}"
                jvm_options = [f"-Djava.security.auth.login.config={run_dir}/{REST_JAAS}"] if self.auth else []
                self.workers.append(
                    LocalProcess(
                        f"{name}-worker-{index}",
                        component=f"ConnectWorkerGroup {group.name!r}, worker {index}",
                        marker=f"{local.stack}/connect-{group.name}/worker-{index}",
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
                        ports=[port],
                        config_key=f"mm2:workerGroups.{group.name}.restPort",
                        ready=pulumi.Output.all(secrets, self.auth, ca_pem).apply(
                            functools.partial(_connect_probe, url)
                        ),
                        secret_files=pulumi.Output.all(secrets, self.auth).apply(
                            functools.partial(_worker_files, run_dir, own_keys)
                        ),
                        restart_on=restart_on,
                        jvm_options=jvm_options,
                        heap="768m",
                        timeout_seconds=240,
                        opts=pulumi.ResourceOptions(parent=self, depends_on=depends),
                    )
                )
        self.url = pulumi.Output.from_input(endpoint)
        self.register_outputs({**props, "url": self.url})


def _connect_probe(url: str, resolved: list[Any]) -> dict[str, Any]:
    """A worker's readiness probe: /health and /connectors, authenticated when restAuth is on,
    over HTTPS verified against the stack CA with restTls; `resolved` is [passwords, auth, ca_pem]."""
    probe = {"kind": "connect", "url": url, "auth": resolved[1]}
    if resolved[2]:
        probe["ca_pem"] = resolved[2]
    return probe


def _worker_files(run_dir: str, own_keys: tuple[str, ...], resolved: list[Any]) -> dict[str, str]:
    """The worker's own secret files (relative to its run directory); `resolved` is [passwords, auth].

    `own_keys`: what the worker itself resolves (its Kafka password, truststore and REST
    keystore passwords), not the connectors' passwords (those are in the group's file)."""
    values: Mapping[str, str] = resolved[0]
    auth: Mapping[str, str] | None = resolved[1]
    files: dict[str, str] = {}
    if own_keys:
        files[WORKER_SECRETS] = render_secrets({k: str(values[k]) for k in own_keys})
    if auth:
        files[REST_USERS] = render_secrets({auth["username"]: auth["password"]})
        files[REST_JAAS] = (
            f'KafkaConnect {{\n  {PROPERTY_FILE_LOGIN_MODULE} required\n  file="{run_dir}/{REST_USERS}";\n}};\n'
        )
    return files
