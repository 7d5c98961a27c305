"""ConnectWorkerGroup: a distributed Kafka Connect worker group that runs MM2 connectors.

Its storage topics (config, offsets, status) live on the cluster named in the stack config. On
the `local` platform each worker is a JVM on 127.0.0.1; `external` adopts a running Connect
cluster by its REST URL and deploys nothing.
"""

from __future__ import annotations

import pulumi

from components.kafka_cluster import KafkaCluster, LocalPlatform
from components.local.provider import LocalProcess
from components.topology import Platform, Topology, WorkerGroup, worker_properties, worker_rest_urls

CONNECT_MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"


class ConnectWorkerGroup(pulumi.ComponentResource):
    """Connect workers sharing one group id; `url` is the REST endpoint the connectors are sent to."""

    url: pulumi.Output[str]
    workers: list[LocalProcess]

    def __init__(
        self,
        name: str,
        group: WorkerGroup,
        topology: Topology,
        clusters: dict[str, KafkaCluster],
        local: LocalPlatform,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        # Also registered as outputs (see KafkaCluster): policies judge REST auth from them.
        props = {
            "name": group.name,
            "cluster": group.cluster,
            "workers": group.workers,
            "restAuth": group.rest_auth,
            "restTls": False,
        }
        super().__init__("mm2:index:ConnectWorkerGroup", name, props, opts)
        self.workers = []
        urls = worker_rest_urls(group)
        # The group's platform is external whenever it has a URL, whatever hosts its storage.
        if group.platform is Platform.EXTERNAL:
            pass  # adopted Connect cluster: nothing to run
        elif group.platform is Platform.LOCAL:
            # Workers need their storage cluster up; connectors later need every cluster they touch.
            depends = [clusters[group.cluster]]
            for index, url in enumerate(urls):
                port = int(url.rsplit(":", 1)[1])
                run_dir = f"{local.run_root}/connect-{group.name}/worker-{index}"
                self.workers.append(
                    LocalProcess(
                        f"{name}-worker-{index}",
                        component=f"ConnectWorkerGroup {group.name!r}, worker {index}",
                        marker=f"{local.stack}/connect-{group.name}/worker-{index}",
                        main_class=CONNECT_MAIN,
                        classpath_dir=local.kafka_libs,
                        run_dir=run_dir,
                        properties=worker_properties(topology, group, index),
                        ports=[port],
                        config_key=f"mm2:workerGroups.{group.name}.restPort",
                        ready={"kind": "connect", "url": url},
                        heap="768m",
                        timeout_seconds=240,
                        opts=pulumi.ResourceOptions(parent=self, depends_on=depends),
                    )
                )
        else:
            raise ValueError(
                f"mm2:workerGroups.{group.name}: worker groups on platform {group.platform.value!r} are not "
                "implemented yet. Fix: attach the group to a `local` cluster, or give `url` of an existing "
                "Connect cluster."
            )
        self.url = pulumi.Output.from_input(group.url or urls[0])
        self.register_outputs({**props, "url": self.url})
