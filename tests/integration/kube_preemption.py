"""Brokers outrank their workers on a full node (issue 39, item 7): on bin/kube's node a deleted
broker pod once stayed Pending for over two minutes while Connect pods waiting for CPU took what it
freed. The lane's proof (tests/integration/test_kube_stack.py): a pod of the workers' priority class
waits, pinned to a broker's node, for exactly the CPU that broker holds; the broker is deleted;
whichever the scheduler places first, the broker is back on its node (its volume is there) and the
waiting pod is not, preempted if it got there first."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from components.platform.kubernetes.metadata import container_security, pod_security
from components.platform.kubernetes.names import ConnectNames
from tests.integration.harness import wait_until
from tests.integration.kube import NAMESPACE, WATCHER_TAG, kubectl

WAITER = "cpu-waiter"


def cpu_millis(quantity: str) -> int:
    """A Kubernetes CPU quantity ("100m", "1", "0.5") in millicores."""
    return int(quantity[:-1]) if quantity.endswith("m") else int(float(quantity) * 1000)


def requested_cpu(pod: dict[str, Any]) -> int:
    """What the scheduler counts for `pod`: the larger of its containers' sum and any init container."""

    def cpu(container: dict[str, Any]) -> int:
        return cpu_millis(container.get("resources", {}).get("requests", {}).get("cpu", "0"))

    spec = pod["spec"]
    return max(sum(cpu(c) for c in spec["containers"]), *(cpu(c) for c in spec.get("initContainers", [])), 0)


def free_cpu(kubeconfig: str, node_name: str) -> int:
    """The node's allocatable CPU less what its running and pending-bound pods request, in millicores."""
    shown = kubectl(kubeconfig, "get", "node", node_name, "-o", "json")
    assert shown.returncode == 0, shown.stderr
    allocatable = cpu_millis(json.loads(shown.stdout)["status"]["allocatable"]["cpu"])
    listed = kubectl(kubeconfig, "get", "pods", "-A", "--field-selector", f"spec.nodeName={node_name}", "-o", "json")
    assert listed.returncode == 0, listed.stderr
    pods = json.loads(listed.stdout)["items"]
    live = [p for p in pods if p["status"].get("phase") not in ("Succeeded", "Failed")]
    return allocatable - sum(requested_cpu(p) for p in live)


def _pod(kubeconfig: str, name: str) -> dict[str, Any] | None:
    shown = kubectl(kubeconfig, "-n", NAMESPACE, "get", "pod", name, "-o", "json")
    return json.loads(shown.stdout) if shown.returncode == 0 else None


def unschedulable(pod: dict[str, Any] | None) -> bool:
    conditions = (pod or {}).get("status", {}).get("conditions") or []
    return any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conditions)


@contextmanager
def waiting_for_cpu(kubeconfig: str, node_name: str, group: str, cpu_m: int) -> Iterator[None]:
    """A pod of worker group `group`'s priority class, pinned to `node_name` and asking `cpu_m`
    millicores, left Pending for CPU (checked) while the block runs; deleted after."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": WAITER, "namespace": NAMESPACE, "labels": {"app": WAITER}},
        "spec": {
            "priorityClassName": ConnectNames(group).priority_class(NAMESPACE),
            "nodeSelector": {"kubernetes.io/hostname": node_name},
            "terminationGracePeriodSeconds": 1,
            "securityContext": pod_security(),
            "containers": [
                {
                    "name": "wait",
                    "image": WATCHER_TAG,
                    "command": ["python3", "-c", "import time; time.sleep(3600)"],
                    "resources": {"requests": {"cpu": f"{cpu_m}m", "memory": "16Mi"}},
                    "securityContext": container_security(),
                }
            ],
        },
    }
    made = kubectl(kubeconfig, "apply", "-f", "-", stdin=json.dumps(pod))
    assert made.returncode == 0, made.stderr
    try:
        wait_until(lambda: unschedulable(_pod(kubeconfig, WAITER)), 60, f"{WAITER} Pending for CPU on {node_name}")
        yield
    finally:
        kubectl(kubeconfig, "-n", NAMESPACE, "delete", "pod", WAITER, "--wait=false", "--ignore-not-found")


def waiter_outcome(kubeconfig: str) -> str:
    """What became of the waiting pod once the broker was back: still Pending (the broker was
    placed first) or preempted (it had the CPU first; a preempted bare pod is deleted)."""
    pod = _pod(kubeconfig, WAITER)
    if pod is None or pod["metadata"].get("deletionTimestamp"):
        return "preempted"
    assert not pod["spec"].get("nodeName"), f"{WAITER} runs on the broker's CPU: {pod['status']}"
    return "still Pending, the broker placed first"
