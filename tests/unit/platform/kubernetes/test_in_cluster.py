"""components/platform/kubernetes/in_cluster.py: in-cluster clients sent out through a public listener."""

from __future__ import annotations

import copy
from typing import Any

from components.platform.kubernetes.in_cluster import public_bootstrap_notes
from components.platform.settings import KubernetesSettings, kubernetes_settings

from ..helpers import SASL_KUBERNETES, topology


def config(**clusters: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(SASL_KUBERNETES)
    for alias, fields in clusters.items():
        out["clusters"][alias].update(fields)
    return out


def test_a_public_bootstrap_used_by_groups_beside_it_names_the_service_to_set() -> None:
    topo = topology(config(b={"bootstrap": "b.example.com:9094"}))
    (note,) = public_bootstrap_notes(topo, kubernetes_settings({"namespace": "kafka"}))
    assert note.startswith("mm2:clusters.b.internalBootstrap is unset, so the workers of mm2")
    assert note.endswith("Set internalBootstrap: b-kafka-bootstrap.kafka.svc:9092.")


def test_no_note_with_an_internal_bootstrap_or_a_group_in_another_kubernetes_cluster() -> None:
    given = topology(config(b={"bootstrap": "b.example.com:9094", "internalBootstrap": "b-kafka-bootstrap:9092"}))
    assert public_bootstrap_notes(given, kubernetes_settings({})) == []
    elsewhere = kubernetes_settings(
        {"clusters": {"b": {"context": "east"}}, "workerGroups": {"mm2": {"context": "west"}}}
    )
    assert public_bootstrap_notes(topology(config(b={"bootstrap": "b.example.com:9094"})), elsewhere) == []


def test_each_group_reaches_a_cluster_in_cluster_only_from_its_kubernetes_cluster() -> None:
    from components.platform.kubernetes.in_cluster import with_public_clusters
    from components.platform.lag_exporter import public_clients
    from components.topology.connectors import group_bootstrap_servers

    from ..helpers import prod_settings, prod_topology

    raw = prod_topology()
    topo = with_public_clusters(raw, prod_settings())
    # Two regions, each its own Kubernetes cluster: each group's own cluster in-cluster, the other public.
    assert {n: g.public_clusters for n, g in topo.worker_groups.items()} == {
        "to-us-east": frozenset({"eu-west"}),
        "to-eu-west": frozenset({"us-east"}),
    }
    group = topo.worker_groups["to-us-east"]
    assert group_bootstrap_servers(topo.clusters["us-east"], group) == "us-east-kafka-bootstrap.mm2.svc:9092"
    assert group_bootstrap_servers(topo.clusters["eu-west"], group) == "eu-west-kafka-bootstrap.kafka.example.com:9094"
    clients = public_clients(topo, "to-us-east", {})
    assert clients["eu-west"]["bootstrap.servers"] == "eu-west-kafka-bootstrap.kafka.example.com:9094"
    # Not derived (as before): every group would be sent to the in-cluster names, unresolvable elsewhere.
    assert group_bootstrap_servers(raw.clusters["eu-west"], raw.worker_groups["to-us-east"]).endswith(".svc:9092")
    # One Kubernetes cluster for all: every group is beside every cluster.
    same = KubernetesSettings(namespace="mm2")
    assert all(not g.public_clusters for g in with_public_clusters(raw, same).worker_groups.values())


def test_the_note_names_only_the_groups_beside_the_cluster() -> None:
    two = config(b={"bootstrap": "b.example.com:9094"})
    two["workerGroups"]["far"] = {**two["workerGroups"]["mm2"], "cluster": "b"}  # stores its state on b
    contexts = {"clusters": {"b": {"context": "east"}}, "workerGroups": {"mm2": {"context": "east"}}}
    (note,) = public_bootstrap_notes(topology(two), kubernetes_settings(contexts))
    assert note.startswith("mm2:clusters.b.internalBootstrap is unset, so the workers of mm2 (their")
