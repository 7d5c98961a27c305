"""Pulumi program: read the `mm2` stack config, build the components, export what they made.

Everything is validated before any resource is registered, so bad input fails the preview with
every problem listed and nothing deployed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pulumi

from components.connect_group import ConnectWorkerGroup
from components.kafka_cluster import KafkaCluster, LocalPlatform
from components.replication_flow import ReplicationFlow
from components.topology import Platform, TopologyError, bootstrap_servers, parse_topology

PROJECT_DIR = Path(__file__).resolve().parent
NAMESPACE = "mm2"
SECTIONS = ("defaults", "clusters", "workerGroups", "flows")


def read_stack_config() -> dict[str, object]:
    config = pulumi.Config(NAMESPACE)
    return {key: value for key in SECTIONS if (value := config.get_object(key)) is not None}


def local_platform(stack: str, needed: bool) -> LocalPlatform:
    libs = os.environ.get("MM2_KAFKA_LIBS", "")
    if needed and not (libs and Path(libs).is_dir()):
        raise pulumi.RunError(
            "the local platform needs the Kafka jars, but MM2_KAFKA_LIBS is not set or missing. "
            "Fix: run bin/bootstrap, then use bin/pulumi (it sets the environment) instead of plain `pulumi`."
        )
    return LocalPlatform(stack=stack, run_root=str(PROJECT_DIR / ".mm2" / "run" / stack), kafka_libs=libs)


def main() -> None:
    stack = pulumi.get_stack()
    try:
        topology = parse_topology(read_stack_config())
    except TopologyError as exc:
        raise pulumi.RunError(f"invalid stack config for stack {stack!r}:\n{exc}") from None

    local = local_platform(stack, any(c.platform is Platform.LOCAL for c in topology.clusters.values()))
    clusters = {alias: KafkaCluster(f"kafka-{alias}", cluster, local) for alias, cluster in topology.clusters.items()}
    groups = {
        name: ConnectWorkerGroup(f"connect-{name}", group, topology, clusters, local)
        for name, group in topology.worker_groups.items()
    }
    flows = {
        flow.name: ReplicationFlow(f"flow-{flow.slug}", flow, topology, groups[flow.worker_group], clusters)
        for flow in topology.enabled_flows()
    }

    pulumi.export(
        "clusters",
        {
            alias: {"bootstrap": bootstrap_servers(c), "securityProtocol": c.security.protocol.value}
            for alias, c in topology.clusters.items()
        },
    )
    pulumi.export(
        "connect", {name: {"url": g.url, "cluster": topology.worker_groups[name].cluster} for name, g in groups.items()}
    )
    pulumi.export("flows", {name: f.summary for name, f in flows.items()})


main()
