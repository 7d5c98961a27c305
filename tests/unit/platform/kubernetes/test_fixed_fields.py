"""A change Kubernetes forbids in a cluster's StatefulSet is refused at preview, naming the key."""

from __future__ import annotations

from dataclasses import replace

import pytest

from components.platform.kubernetes.fixed_fields import fixed_field_problems, listener_layout, shape_inputs
from components.platform.settings import KafkaPodSettings

POD = KafkaPodSettings(storage_size="1Gi")


def shape(pod: KafkaPodSettings, brokers: int = 3, protocol: str = "SSL") -> dict[str, object]:
    return shape_inputs("us", "mm2", "us-kafka", pod, brokers, listener_layout(protocol))


def test_the_same_shape_and_other_changes_pass() -> None:
    assert fixed_field_problems(shape(POD), shape(POD)) == []
    assert fixed_field_problems(shape(POD), shape(replace(POD, heap="1g"))) == []


def test_a_new_storage_size_names_the_key_the_outage_and_the_fix() -> None:
    (problem,) = fixed_field_problems(shape(POD), shape(replace(POD, storage_size="2Gi")))
    assert problem.startswith("mm2-platform:kubernetes.clusters.us.storageSize: changing the brokers' storage size")
    assert "'1Gi' to '2Gi'" in problem and "StatefulSet mm2/us-kafka" in problem and "stops at once" in problem
    assert "Fix: put back '1Gi'" in problem and "kubectl -n mm2 patch pvc data-us-kafka-<i>" in problem
    assert "recreateStatefulSet: true" in problem


def test_recreate_lets_it_through_but_never_with_delete_claims() -> None:
    allowed = replace(POD, storage_class="fast", recreate_statefulset=True)
    assert fixed_field_problems(shape(POD), shape(allowed)) == []
    (problem,) = fixed_field_problems(shape(POD), shape(replace(allowed, delete_claims=True)))
    assert "storageClass" in problem and "their data, would be deleted with it: refused" in problem


@pytest.mark.parametrize(("before", "after", "why"), [(3, 5, "split the metadata log"), (5, 3, "replicas they hold")])
def test_a_new_broker_count_is_refused_with_the_resize_procedure(before: int, after: int, why: str) -> None:
    allowed = replace(POD, recreate_statefulset=True)  # no setting lets the voter set change in place
    (problem,) = fixed_field_problems(shape(POD, before), shape(allowed, after))
    assert problem.startswith(f"mm2:clusters.us.brokers: changing us from {before} to {after} brokers")
    assert why in problem and f"Fix: put back brokers: {before}" in problem
    assert "replicate us's topics to it with a flow" in problem


def test_a_guard_recorded_before_it_knew_the_count_accepts_any() -> None:
    olds = {k: v for k, v in shape(POD).items() if k != "brokers"}
    assert fixed_field_problems(olds, shape(POD, 5)) == []


def test_new_security_on_the_brokers_own_listeners_is_refused_with_the_procedure() -> None:
    (problem,) = fixed_field_problems(shape(POD, protocol="SASL_PLAINTEXT"), shape(POD, protocol="SSL"))
    assert problem.startswith("mm2:clusters.us.security: the brokers of us would go from replication and controller")
    assert "never catches up: refused" in problem and "add a cluster beside it" in problem


def test_a_cluster_made_before_its_brokers_had_own_listeners_keeps_its_layout() -> None:
    first = {k: v for k, v in shape(POD).items() if k != "listeners"}
    (problem,) = fixed_field_problems(first, shape(POD))
    assert "from inter-broker on the client listener, controller on PLAINTEXT to replication and controller" in problem
