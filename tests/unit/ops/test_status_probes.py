"""components/ops/status_probes.py on Kubernetes: a group whose workers run as pods has its lag
exporter and its workers' metrics read through the API server (proxy.py), unless --lag-url gave
another address."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from components.ops import status_probes
from components.platform.kubernetes import proxy
from tests.unit.ops.helpers import outputs

PODS = {"context": "kube", "namespace": "mm2", "selector": "app.kubernetes.io/instance=mm2", "port": "9404"}
IN_CLUSTER = "http://mm2-lag-exporter.mm2.svc:9404"


def _on_kubernetes(**group: Any) -> Any:
    exports = outputs()
    return replace(exports, connect={"mm2": replace(exports.connect["mm2"], **{"pods": PODS, **group})})


def test_an_in_cluster_exporter_is_read_through_the_api_server(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, str, str, int, str]] = []

    def service_get(context: str, namespace: str, service: str, port: int, path: str) -> bytes:
        asked.append((context, namespace, service, port, path))
        return json.dumps({"primary->dr": []}).encode() if path == "/expired" else b"mm2_flow_lag_records 0\n"

    monkeypatch.setattr(proxy, "service_get", service_get)
    reading = status_probes.exporter_readings(_on_kubernetes(lag_url=IN_CLUSTER), ["mm2"])["mm2"]
    assert not reading.error and reading.url == IN_CLUSTER and reading.expired == {"primary->dr": []}
    assert asked == [("kube", "mm2", "mm2-lag-exporter", 9404, p) for p in ("/expired", "/metrics")]


def test_a_given_lag_url_and_a_url_outside_the_cluster_are_read_directly(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: Any) -> bytes:
        raise AssertionError("asked the API server")

    monkeypatch.setattr(proxy, "service_get", refused)
    read: list[str] = []
    monkeypatch.setattr(status_probes, "_get", lambda url: read.append(url) or b"{}")
    status_probes.exporter_readings(_on_kubernetes(lag_url="http://127.0.0.1:9404"), ["mm2"])
    status_probes.exporter_readings(_on_kubernetes(lag_url=IN_CLUSTER), ["mm2"], given={"mm2"})
    assert read == [
        "http://127.0.0.1:9404/expired",
        "http://127.0.0.1:9404/metrics",
        f"{IN_CLUSTER}/expired",
        f"{IN_CLUSTER}/metrics",
    ]


def test_each_worker_pods_metrics_are_read_through_the_api_server(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[dict[str, str], str]] = []

    def pod_texts(pods: dict[str, str], path: str) -> list[str | None]:
        seen.append((dict(pods), path))
        return ["rate 1\n", None]

    monkeypatch.setattr(proxy, "pod_texts", pod_texts)
    assert status_probes.worker_metrics(_on_kubernetes(), ["mm2"]) == {"mm2": ["rate 1\n", None]}
    assert seen == [(PODS, "/metrics")]
    monkeypatch.setattr(proxy, "pod_texts", lambda pods, path: [])
    assert status_probes.worker_metrics(_on_kubernetes(), ["mm2"]) == {"mm2": [None]}  # said: none answered
    # Metrics off (no port): nothing to read, no throughput line.
    assert status_probes.worker_metrics(_on_kubernetes(pods={**PODS, "port": ""}), ["mm2"]) == {}
