"""bin/status's reads through the API server's proxy, against a real loopback server playing it."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from components.platform.kubernetes.proxy import pod_texts, service_get

PODS = {"context": "kube", "namespace": "mm2", "selector": "app.kubernetes.io/instance=to-eu", "port": "9404"}


def _pod(name: str, phase: str, deleting: bool = False) -> dict[str, object]:
    meta: dict[str, object] = {"name": name, **({"deletionTimestamp": "2026-11-29T00:00:00Z"} if deleting else {})}
    return {"metadata": meta, "status": {"phase": phase}}


ANSWERS: dict[str, tuple[int, bytes]] = {
    "/api/v1/namespaces/mm2/pods?labelSelector=app.kubernetes.io/instance%3Dto-eu": (
        200,
        json.dumps(
            {
                "items": [
                    _pod("w-1", "Running"),
                    _pod("w-0", "Running"),
                    _pod("w-2", "Pending"),
                    _pod("w-3", "Running", True),
                ]
            }
        ).encode(),
    ),
    "/api/v1/namespaces/mm2/pods/w-0:9404/proxy/metrics": (200, b"rate 1\n"),
    "/api/v1/namespaces/mm2/pods/w-1:9404/proxy/metrics": (503, b"no endpoints"),
    "/api/v1/namespaces/mm2/services/to-eu-lag-exporter:9404/proxy/expired": (200, b"{}"),
}


@pytest.fixture
def kube(tmp_path: Path) -> Iterator[tuple[dict[str, str], list[str]]]:
    """A kubeconfig whose context `kube` is a loopback server answering ANSWERS; the paths asked."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            status, body = ANSWERS.get(self.path, (404, b"not found"))
            self.send_response(status)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    config = {
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{httpd.server_address[1]}"}}],
        "contexts": [{"name": "kube", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t0k"}}],
        "current-context": "kube",
    }
    (tmp_path / "config").write_text(yaml.safe_dump(config))
    try:
        yield {"KUBECONFIG": str(tmp_path / "config")}, asked
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


def test_each_running_pod_is_read_through_the_api_server(kube: tuple[dict[str, str], list[str]]) -> None:
    environ, asked = kube
    # w-0 answers, w-1's proxy fails; the Pending and the terminating pods are not asked.
    assert pod_texts(PODS, "/metrics", environ) == ["rate 1\n", None]
    assert sorted(asked[1:]) == [
        "/api/v1/namespaces/mm2/pods/w-0:9404/proxy/metrics",
        "/api/v1/namespaces/mm2/pods/w-1:9404/proxy/metrics",
    ]


def test_without_its_context_nothing_is_asked(kube: tuple[dict[str, str], list[str]]) -> None:
    environ, asked = kube
    assert pod_texts({**PODS, "context": "elsewhere"}, "/metrics", environ) == []
    with pytest.raises(OSError, match="no kubeconfig context 'elsewhere'"):
        service_get("elsewhere", "mm2", "to-eu-lag-exporter", 9404, "/expired", environ)
    assert asked == []


def test_a_service_is_read_through_the_api_server(kube: tuple[dict[str, str], list[str]]) -> None:
    environ, asked = kube
    assert service_get("", "mm2", "to-eu-lag-exporter", 9404, "/expired", environ) == b"{}"  # the current context
    with pytest.raises(OSError, match="HTTP 404 through the Kubernetes API server's service proxy"):
        service_get("kube", "mm2", "to-eu-lag-exporter", 9404, "/metrics", environ)
    assert asked == [
        "/api/v1/namespaces/mm2/services/to-eu-lag-exporter:9404/proxy/expired",
        "/api/v1/namespaces/mm2/services/to-eu-lag-exporter:9404/proxy/metrics",
    ]
