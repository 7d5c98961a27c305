"""The preview's capacity check: the stack's pods against the nodes' allocatable (node lists as the
API server returns them), warning where pods would stay Pending until readyTimeout."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest

from components.platform.kubernetes.capacity import capacity_warnings, demands, quantity
from components.platform.settings import kubernetes_settings
from components.topology import parse_topology

from ..helpers import SASL_KUBERNETES


def nodes(*sizes: tuple[str, str], unschedulable: int = 0) -> dict[str, Any]:
    items = [{"spec": {}, "status": {"allocatable": {"cpu": cpu, "memory": memory}}} for cpu, memory in sizes]
    items += [
        {"spec": {"unschedulable": True}, "status": {"allocatable": {"cpu": "64", "memory": "256Gi"}}}
    ] * unschedulable
    return {"items": items}


def test_kubernetes_quantities() -> None:
    assert quantity("500m") == Decimal("0.5") and quantity("2") == 2 and quantity("1.5") == Decimal("1.5")
    assert quantity("4Gi") == 4 * 1024**3 and quantity("3931136Ki") == 3931136 * 1024 and quantity("1G") == 10**9
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        quantity("4 GiB")


def test_a_new_users_stack_on_a_two_cpu_node_is_warned_naming_the_settings_to_lower() -> None:
    """One broker per cluster and two workers at the defaults (1 CPU per broker, 500m per worker)
    on bin/kube's node: 3 CPUs asked of 2."""
    raw = copy.deepcopy(SASL_KUBERNETES)
    for cluster in raw["clusters"].values():
        cluster["brokers"] = 1
    raw["workerGroups"]["mm2"]["workers"] = 2
    topology, settings = parse_topology(raw), kubernetes_settings({})
    wanted = demands(topology, settings, None)
    assert {d.what for d in wanted} >= {"1 broker(s) of a", "1 broker(s) of b", "2 worker(s) of mm2"}
    [warning] = capacity_warnings("mm2-kube", wanted, nodes(("2", "16Gi")))
    assert warning.startswith("context 'mm2-kube' (1 schedulable node(s)): the stack's pods ask 3")
    assert "CPU in all and the nodes allocate 2" in warning and '"Insufficient cpu"' in warning
    fix = "lower mm2-platform:kubernetes.kafka.resources.requests.cpu (2 in all) or "
    assert fix + "mm2-platform:kubernetes.connect.resources.requests.cpu (1 in all)" in warning
    # Lowered as the lane does, it fits.
    small = {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}}
    lowered = kubernetes_settings({"kafka": {"resources": small}, "connect": {"resources": small}})
    assert capacity_warnings("mm2-kube", demands(topology, lowered, None), nodes(("2", "16Gi"))) == []


def test_a_pod_larger_than_every_node_and_more_brokers_than_nodes_are_named() -> None:
    topology = parse_topology(copy.deepcopy(SASL_KUBERNETES))  # 3 brokers per cluster, 3 workers
    big = {"requests": {"cpu": "8", "memory": "4Gi"}, "limits": {"memory": "4Gi"}}
    settings = kubernetes_settings({"clusters": {"a": {"resources": big}}})
    warnings = capacity_warnings("prod", demands(topology, settings, None), nodes(("4", "16Gi"), unschedulable=1))
    key = "mm2-platform:kubernetes.clusters.a.resources"
    assert any(w.startswith(f"{key}: each of 3 broker(s) of a asks 8 CPU") and "at most 4 CPU" in w for w in warnings)
    assert any(
        w.startswith(f"{key}: 3 broker(s) of a need 3 nodes") and "has 1: 2 would stay Pending" in w for w in warnings
    )
    assert any("mm2-platform:kubernetes.kafka.resources: 3 broker(s) of b need 3 nodes" in w for w in warnings)


def test_nothing_is_said_without_nodes_to_compare_with() -> None:
    topology = parse_topology(copy.deepcopy(SASL_KUBERNETES))
    assert capacity_warnings("x", demands(topology, kubernetes_settings({}), None), {"items": []}) == []
