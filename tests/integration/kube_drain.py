"""A node drained through the eviction API on the Kubernetes lane (tests/integration/test_kube_stack.py):
the brokers' disruption budget keeps at most one us broker out, and the evicted one comes back on
its own volume once the node is schedulable again."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.integration.harness import wait_until
from tests.integration.kube import NAMESPACE, kubectl
from tests.integration.kube_checks import pods, ready
from tests.integration.streaming import streamed_during


def _evict(node: str, pod: str) -> Any:
    """One eviction of `pod` through the API (what `kubectl drain` sends), as kubectl answered it."""
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": NAMESPACE}}
    path = f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}/eviction"
    return kubectl(node, "create", "--raw", path, "-f", "-", stdin=json.dumps(body))


def _claim_uid(node: str, broker: int) -> str:
    shown = kubectl(node, "-n", NAMESPACE, "get", "pvc", f"data-us-kafka-{broker}", "-o", "jsonpath={.metadata.uid}")
    assert shown.returncode == 0 and shown.stdout, shown.stderr
    return shown.stdout


def _broker(node: str, broker: int) -> dict[str, Any] | None:
    return next((p for p in pods(node) if p["metadata"]["name"] == f"us-kafka-{broker}"), None)


def drained_node_keeps_one_broker_out(node: str, outputs: dict[str, Any], name: str, broker: int) -> None:
    """Node `name` (us broker `broker` on it, not eu's) drained with `kubectl drain` while records
    stream us->eu with acks=all: broker `broker` is evicted and waits, Pending, for its node (its
    volume is there and the other nodes hold a us broker each); an eviction of a second us broker
    meanwhile is refused by the brokers' disruption budget; uncordoned, the node takes the broker
    back on the same claim. Every record arrives, none is refused."""
    claim = _claim_uid(node, broker)
    other = (broker + 1) % 3

    def drain_and_return() -> tuple[str, float]:
        t0 = time.monotonic()
        drained = kubectl(node, "drain", name, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=100s")
        try:
            assert drained.returncode == 0, drained.stdout[-2000:] + drained.stderr[-2000:]
            wait_until(
                lambda: (p := _broker(node, broker)) is not None and p["status"].get("phase") == "Pending",
                60,
                f"us-kafka-{broker} evicted and Pending",
            )
            refused = _evict(node, f"us-kafka-{other}")
            assert refused.returncode != 0 and "disruption budget" in refused.stderr, refused.stdout + refused.stderr
        finally:  # schedulable again also when a check failed, so the rest of the lane finds it
            back = kubectl(node, "uncordon", name)
        assert back.returncode == 0, back.stderr
        wait_until(lambda: (p := _broker(node, broker)) is not None and ready(p), 180, f"us-kafka-{broker} Ready")
        return refused.stderr.strip().splitlines()[-1], time.monotonic() - t0

    (why, took), streamed = streamed_during(outputs, ("us", "orders"), ("eu", "us.orders"), drain_and_return)
    placed = _broker(node, broker)
    assert placed is not None and placed["spec"]["nodeName"] == name, placed and placed["spec"].get("nodeName")
    assert _claim_uid(node, broker) == claim, "the broker came back on another volume claim"
    print(
        f"[kube stack] node {name} drained: us-kafka-{broker} evicted and back on its claim in {took:.0f}s, "
        f"evicting us-kafka-{other} meanwhile refused ({why}); {streamed.sent} records, "
        f"longest gap {streamed.longest_gap_s:.1f}s, refused {dict(streamed.failed)}"
    )
    assert not streamed.missing, f"{streamed.missing} of {streamed.sent} records never arrived on eu"
    assert not streamed.failed, f"records the producer could not write: {dict(streamed.failed)}"
