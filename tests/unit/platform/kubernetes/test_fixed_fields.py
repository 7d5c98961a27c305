"""A change Kubernetes forbids in a cluster's StatefulSet is refused at preview, naming the key."""

from __future__ import annotations

from dataclasses import replace

from components.platform.kubernetes.fixed_fields import fixed_field_problems, shape_inputs
from components.platform.settings import KafkaPodSettings

POD = KafkaPodSettings(storage_size="1Gi")


def shape(pod: KafkaPodSettings) -> dict[str, object]:
    return shape_inputs("us", "mm2", "us-kafka", pod)


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
