"""What the scheduler wrote on a pod, read as lasting or passing, and the message `up` shows
(components/platform/kubernetes/scheduling.py)."""

from __future__ import annotations

from typing import Any

import pytest

from components.platform.kubernetes.scheduling import (
    TEMPLATE_ANNOTATION,
    Stuck,
    Workload,
    lasting,
    of_template,
    ready,
    report,
    rolled_out,
    stamped,
    started,
    unplaced,
    unready_report,
    unstarted,
)

# kube-scheduler 1.34's own messages, as `kubectl get pod -o yaml` shows them.
CPU = (
    "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
    "1 No preemption victims found for incoming pod."
)
ANTI = (
    "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules. no new claims to deallocate, "
    "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
)
CLAIM = "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: not eligible."
NOT_READY = "0/3 nodes are available: 3 node(s) had untolerated taint {node.kubernetes.io/not-ready: }."


def pod(
    name: str,
    message: str | None = None,
    node: str | None = None,
    digest: str = "",
    state: dict[str, Any] | None = None,
    init: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A pod as the API shows it: unschedulable with `message`, or on `node` with its container
    in `state` (default running) and its init container's status `init`."""
    conditions = []
    if message is not None:
        conditions.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message})
    status: dict[str, Any] = {"conditions": conditions}
    if node:
        status["containerStatuses"] = [{"name": "kafka", "state": state or {"running": {}}}]
        if init is not None:
            status["initContainerStatuses"] = [{"name": "rack", **init}]
    return {
        "metadata": {"name": name, "annotations": {TEMPLATE_ANNOTATION: digest} if digest else {}},
        "spec": {"containers": [{"name": "kafka"}], **({"nodeName": node} if node else {})},
        "status": status,
    }


PULL = {"waiting": {"reason": "ErrImageNeverPull", "message": 'Container image "mm2-iac/kafka:absent" is not present'}}
RACK_FAILS = {
    "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s restarting failed container"}},
    "lastState": {"terminated": {"exitCode": 1, "message": "rack: node n2 has no label z. Fix: label the node."}},
}


@pytest.mark.parametrize(("message", "expected"), [(CPU, True), (ANTI, True), (CLAIM, False), (NOT_READY, False)])
def test_only_reasons_no_waiting_fixes_are_lasting(message: str, expected: bool) -> None:
    assert lasting(message) is expected


def test_unplaced_names_the_pods_with_a_lasting_reason() -> None:
    pods = [pod("us-kafka-0", node="n1"), pod("us-kafka-1", CPU), pod("us-kafka-2", CLAIM)]
    assert unplaced(pods) == [Stuck("us-kafka-1", CPU)]


def test_the_report_names_the_workload_the_reason_and_the_settings() -> None:
    workload = Workload("the brokers of us", "mm2-platform:kubernetes.kafka.resources", "mm2:clusters.us.brokers")
    text = report(workload, Stuck("us-kafka-1", CPU))
    assert text.startswith("the brokers of us: pod us-kafka-1 cannot be scheduled: 0/1 nodes are available: 1 ")
    assert "Insufficient cpu." in text and "preemption" not in text
    assert "lower mm2-platform:kubernetes.kafka.resources (requests)" in text
    anti = report(workload, Stuck("us-kafka-1", ANTI))
    assert "cannot be scheduled: 0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules. Fix:" in anti
    assert "lower mm2:clusters.us.brokers, or add nodes" in anti


def test_a_pod_of_fixed_requests_is_given_room_by_the_settings_of_the_others() -> None:
    watcher = Workload("the auto-restart watcher of to-eu", "", "")
    text = report(watcher, Stuck("to-eu-connect-watcher-1", CPU))
    assert (
        "Fix: its requests are fixed and small: make room by lowering mm2-platform:kubernetes.kafka.resources" in text
    )
    assert "or mm2-platform:kubernetes.connect.resources, or add nodes with room." in text
    other = report(watcher, Stuck("to-eu-connect-watcher-1", "0/3 nodes are available: 3 volume node affinity"))
    assert "Fix: check the cluster's nodes." in other and " or ," not in other


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


def test_a_placed_pod_whose_image_or_init_container_fails_cannot_start() -> None:
    pods = [
        pod("a-0", node="n1"),
        pod("a-1", node="n1", state={"waiting": {"reason": "ContainerCreating"}}),
        pod("a-2", node="n1", state={"waiting": {"reason": "PodInitializing"}}, init={"state": PULL}),
        pod("a-3", node="n1", state={"waiting": {"reason": "PodInitializing"}}, init=RACK_FAILS),
    ]
    assert [started(p) for p in pods] == [True, False, False, False]
    found = unstarted(pods)
    assert [(u.pod, u.why) for u in found] == [("a-2", "cannot start"), ("a-3", "cannot start")]
    assert found[0].message.startswith("init container rack: ErrImageNeverPull: Container image")
    workload = Workload("the brokers of us", "r", "c", "mm2-platform:kubernetes.kafka.image")
    pulled = report(workload, found[0])
    assert "the brokers of us: pod a-2 cannot start: init container rack: ErrImageNeverPull" in pulled
    assert "Fix: check mm2-platform:kubernetes.kafka.image and that the nodes can pull it" in pulled
    # The rack reader's own message names the fix: it is shown as it is.
    rack = report(workload, found[1])
    assert rack.endswith("init container rack fails: rack: node n2 has no label z. Fix: label the node.")


def ready_pod(name: str, digest: str, is_ready: bool = True, **extra: Any) -> dict[str, Any]:
    """A placed, running pod of `digest` whose Ready condition is `is_ready`."""
    made = pod(name, node="n1", digest=digest, **extra)
    made["status"]["conditions"].append({"type": "Ready", "status": "True" if is_ready else "False"})
    return made


def test_a_rollout_is_done_when_its_pods_are_ready_and_the_old_ones_gone() -> None:
    old = ready_pod("w-old", "d0")
    leaving = {**ready_pod("w-old", "d0"), "metadata": {**old["metadata"], "deletionTimestamp": "2026-11-29T00:00:00Z"}}
    new = [ready_pod("w-a", "d1"), ready_pod("w-b", "d1")]
    assert rolled_out(new, "d1", 2)
    assert not rolled_out([*new, old], "d1", 2)  # an old pod still serving
    assert rolled_out([*new, leaving], "d1", 2)  # only terminating: done, as `kubectl rollout status`
    assert not rolled_out([new[0], ready_pod("w-b", "d1", is_ready=False)], "d1", 2)
    assert not rolled_out(new[:1], "d1", 2)
    assert not ready(leaving) and ready(new[0])


def test_a_container_that_keeps_failing_cannot_start_and_its_log_is_named() -> None:
    crashing = {
        "waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container"},
    }
    failing = pod("w-0", node="n1", state=crashing)
    status = failing["status"]["containerStatuses"][0]
    status["lastState"] = {"terminated": {"reason": "OOMKilled", "exitCode": 137}}
    status["restartCount"] = 3
    failing["metadata"]["namespace"] = "mm2"
    [found] = unstarted([failing])
    assert found.message == "container kafka fails: OOMKilled, exit code 137, restarted 3 time(s)"
    workload = Workload("the workers of g", "mm2-platform:kubernetes.connect.resources", "c")
    said = report(workload, found)
    assert said.startswith("the workers of g: pod w-0 cannot start: container kafka fails: OOMKilled")
    assert "raise its memory in mm2-platform:kubernetes.connect.resources (limits)" in said
    assert said.endswith("kubectl logs --previous -n mm2 w-0 -c kafka")
    status["lastState"] = {"terminated": {"reason": "Error", "exitCode": 1}}
    [found] = unstarted([failing])
    said = report(workload, found)
    assert "fails: Error, exit code 1, restarted 3 time(s). Fix: read why in its last run's log: kubectl logs" in said


def test_pods_not_ready_at_the_bound_are_reported_with_what_they_are_at() -> None:
    restarting = ready_pod("w-b", "d1", is_ready=False)
    restarting["status"]["containerStatuses"][0].update(ready=False, restartCount=2)
    pods = [ready_pod("w-a", "d1"), restarting, ready_pod("w-old", "d0", is_ready=False)]
    workload = Workload("the workers of g", "r", "c")
    said = unready_report(workload, pods, "d1", 2, "readyTimeout 5m")
    assert said.startswith("the workers of g: 1 of 2 pod(s) of this version Ready after readyTimeout 5m; ")
    assert "pod w-b: container kafka running, not ready, restarted 2 time(s). Fix: read why in its log" in said
    assert "mm2-platform:kubernetes.readyTimeout" in said
    unplaced_pod = pod("w-c", CPU, digest="d1")
    assert "pod w-c: no container started yet" in unready_report(workload, [unplaced_pod], "d1", 1, "x")
    assert "the old pods take long to stop" in unready_report(workload, pods[:1], "d1", 1, "x")
