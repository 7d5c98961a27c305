"""The brokers `bin/status` reports (components/ops/brokers.py): which are down or behind, and on
Kubernetes the pod and node a down one runs on."""

from __future__ import annotations

from typing import Any

import pytest

from components.ops import brokers
from components.ops.brokers import BrokerGap, PartitionReplicas, cluster_health, gap_problem, health_lines

PODS = {"context": "prod", "namespace": "mm2", "statefulset": "us-kafka"}


def partition(name: str, index: int, replicas: tuple[int, ...], isr: tuple[int, ...]) -> PartitionReplicas:
    return PartitionReplicas(name, index, replicas, isr)


def test_a_broker_holding_replicas_but_not_registered_is_down_and_its_partitions_under_replicated() -> None:
    parts = [partition("orders", 0, (0, 1, 2), (0, 2)), partition("orders", 1, (1, 2, 0), (2, 0))]
    parts.append(partition("__consumer_offsets", 0, (2, 0, 1), (2, 0)))
    health = cluster_health("us", [0, 2], parts)
    assert health.brokers == (0, 1, 2)
    assert health.gaps == (BrokerGap(1, down=True, behind=3),)
    assert health.under_replicated == 3 and not health.healthy
    [line] = health.problems
    assert line.startswith("cluster us: broker 1 is down (not registered with the cluster), 3 of its partition")
    assert "Next step: start the broker again" in line


def test_a_registered_broker_out_of_sync_is_behind_and_every_replica_in_sync_is_healthy() -> None:
    behind = cluster_health("eu", [0, 1, 2], [partition("orders", 0, (0, 1, 2), (0, 1))])
    assert behind.gaps == (BrokerGap(2, down=False, behind=1),)
    assert "broker 2 is behind, 1 of its partition replicas out of sync" in behind.problems[0]
    whole = cluster_health("eu", [0, 1, 2], [partition("orders", 0, (0, 1, 2), (2, 0, 1))])
    assert whole.healthy and health_lines([whole]) == []


def test_the_lines_name_the_broker_the_pod_and_the_node_and_say_to_bring_the_node_back() -> None:
    place = "pod us-kafka-1 on node kube-2 (zone-b), which is NotReady: Kubelet stopped posting node status"
    health = cluster_health("us", [0, 2], [partition("orders", 0, (0, 1, 2), (0, 2))])
    from dataclasses import replace

    health = replace(health, gaps=(replace(health.gaps[0], place=place),))
    lines = health_lines([health])
    assert lines[0] == "cluster us  DEGRADED: 2 of 3 brokers registered, 1 partition(s) under-replicated"
    assert f"It runs as {place}. Next step: bring the node back" in lines[1]
    assert gap_problem("us", health.gaps[0]) in lines[1]


def node(ready: str, message: str = "") -> dict[str, Any]:
    condition = {"type": "Ready", "status": ready, "message": message}
    return {"metadata": {"labels": {brokers.ZONE_LABEL: "zone-b"}}, "status": {"conditions": [condition]}}


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The API server's answers by path; what was asked, with which context."""
    from components.platform.kubernetes import access, api

    answers: dict[str, Any] = {}

    def get_json(config: Any, context: str, path: str, base: Any) -> Any:
        answers.setdefault("asked", []).append((context, path))
        if path not in answers:
            raise api.Unsupported(f"404 for {path}")
        return answers[path]

    contexts = [{"name": name, "context": {"cluster": name}} for name in ("prod", "other")]
    monkeypatch.setattr(
        access, "read_kubeconfig", lambda environ: ({"current-context": "other", "contexts": contexts}, "/kube")
    )
    monkeypatch.setattr(api, "get_json", get_json)
    return answers


def test_pod_place_reads_the_pods_node_and_its_ready_condition(api: dict[str, Any]) -> None:
    api["/api/v1/namespaces/mm2/pods/us-kafka-1"] = {"spec": {"nodeName": "kube-2"}}
    api["/api/v1/nodes/kube-2"] = node("Unknown", "Kubelet stopped posting node status.")
    said = brokers.pod_place(PODS, 1)
    assert said == "pod us-kafka-1 on node kube-2 (zone-b), which is NotReady: Kubelet stopped posting node status"
    assert {context for context, _ in api["asked"]} == {"prod"}  # the cluster's context, not the current one
    api["/api/v1/nodes/kube-2"] = node("True")
    assert brokers.pod_place(PODS, 1).endswith("which is Ready")


def test_pod_place_says_why_when_the_pod_is_unplaced_or_cannot_be_read(api: dict[str, Any]) -> None:
    api["/api/v1/namespaces/mm2/pods/us-kafka-0"] = {"spec": {}, "status": {"phase": "Pending"}}
    assert brokers.pod_place(PODS, 0) == "pod us-kafka-0, not placed on a node (Pending)"
    assert brokers.pod_place(PODS, 2).startswith("pod us-kafka-2 (its node could not be read: 404 for ")


def test_pod_place_says_so_when_the_kubeconfig_lacks_the_clusters_context(api: dict[str, Any]) -> None:
    said = brokers.pod_place({**PODS, "context": "gone"}, 1)
    assert (
        said
        == "pod us-kafka-1 (its node could not be read: no kubeconfig context 'gone' (KUBECONFIG, else ~/.kube/config))"
    )
    assert "asked" not in api  # no request went anywhere
