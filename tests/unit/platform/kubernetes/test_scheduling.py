"""What the scheduler wrote on a pod, read as lasting or passing, and the message `up` shows
(components/platform/kubernetes/scheduling.py)."""

from __future__ import annotations

from typing import Any

import pytest

from components.platform.kubernetes.scheduling import (
    TEMPLATE_ANNOTATION,
    Unplaced,
    Workload,
    lasting,
    of_template,
    report,
    scheduled,
    stamped,
    unplaced,
)

# kube-scheduler 1.34's own messages, as `kubectl get pod -o yaml` shows them.
CPU = (
    "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
    "1 No preemption victims found for incoming pod."
)
ANTI = (
    "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules. preemption: 0/1 nodes are "
    "available: 1 No preemption victims found for incoming pod."
)
CLAIM = "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: not eligible."
NOT_READY = "0/3 nodes are available: 3 node(s) had untolerated taint {node.kubernetes.io/not-ready: }."


def pod(name: str, message: str | None = None, node: str | None = None, digest: str = "") -> dict[str, Any]:
    conditions = []
    if message is not None:
        conditions.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message})
    return {
        "metadata": {"name": name, "annotations": {TEMPLATE_ANNOTATION: digest} if digest else {}},
        "spec": {"nodeName": node} if node else {},
        "status": {"conditions": conditions},
    }


@pytest.mark.parametrize(("message", "expected"), [(CPU, True), (ANTI, True), (CLAIM, False), (NOT_READY, False)])
def test_only_reasons_no_waiting_fixes_are_lasting(message: str, expected: bool) -> None:
    assert lasting(message) is expected


def test_unplaced_names_the_pods_with_a_lasting_reason() -> None:
    pods = [pod("us-kafka-0", node="n1"), pod("us-kafka-1", CPU), pod("us-kafka-2", CLAIM)]
    assert unplaced(pods) == [Unplaced("us-kafka-1", CPU)]
    assert scheduled(pods) == 1


def test_the_report_names_the_workload_the_reason_and_the_settings() -> None:
    workload = Workload("the brokers of us", "mm2-platform:kubernetes.kafka.resources", "mm2:clusters.us.brokers")
    text = report(workload, Unplaced("us-kafka-1", CPU))
    assert text.startswith("the brokers of us: pod us-kafka-1 cannot be scheduled: 0/1 nodes are available: 1 ")
    assert "Insufficient cpu." in text and "preemption" not in text
    assert "lower mm2-platform:kubernetes.kafka.resources (requests)" in text
    anti = report(workload, Unplaced("us-kafka-1", ANTI))
    assert "lower mm2:clusters.us.brokers, or add nodes" in anti


def test_the_stamp_is_the_templates_digest_and_tells_the_pods_of_this_version() -> None:
    workload = {"spec": {"replicas": 2, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"x": 1}}}}
    one, digest = stamped(workload)
    assert one["spec"]["template"]["metadata"]["annotations"] == {TEMPLATE_ANNOTATION: digest}
    assert "annotations" not in workload["spec"]["template"]["metadata"]  # the input is left as it was
    assert stamped(workload)[1] == digest
    changed = {"spec": {"replicas": 2, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"x": 2}}}}
    assert stamped(changed)[1] != digest
    pods = [pod("new", node="n", digest=digest), pod("old", node="n", digest="0" * 16)]
    assert [p["metadata"]["name"] for p in of_template(pods, digest)] == ["new"]
