"""The preview's read of the Kubernetes API as a kubeconfig's user, against a real loopback server."""

from __future__ import annotations

import base64
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.platform.kubernetes.api import Unsupported, _material, get_json


@pytest.fixture
def server() -> Iterator[tuple[str, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append({"path": self.path, "auth": self.headers.get("Authorization", "")})
            body = json.dumps({"items": []}).encode() if self.path == "/api/v1/nodes" else b"{}"
            self.send_response(200 if self.path == "/api/v1/nodes" else 403)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


def config(server: str, user: dict[str, object]) -> dict[str, object]:
    return {
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": user}],
    }


def test_a_token_user_reads_the_path(server: tuple[str, list[dict[str, str]]], tmp_path: Path) -> None:
    url, seen = server
    assert get_json(config(url, {"token": "t0k"}), "x", "/api/v1/nodes", tmp_path) == {"items": []}
    assert seen == [{"path": "/api/v1/nodes", "auth": "Bearer t0k"}]


def test_a_refusal_is_an_error_naming_the_status(server: tuple[str, list[dict[str, str]]], tmp_path: Path) -> None:
    url, _ = server
    with pytest.raises(ValueError, match="HTTP 403"):
        get_json(config(url, {}), "x", "/api/v1/secrets", tmp_path)


def test_exec_users_are_not_spoken(tmp_path: Path) -> None:
    with pytest.raises(Unsupported):
        get_json(config("https://127.0.0.1:1", {"exec": {"command": "aws"}}), "x", "/api/v1/nodes", tmp_path)


def test_material_is_a_path_relative_to_the_kubeconfig_or_inline_data_in_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "private"
    folder.mkdir()
    assert _material({"client-key": "pki/admin.key"}, "client-key", tmp_path, folder) == str(tmp_path / "pki/admin.key")
    inline = _material({"client-key-data": base64.b64encode(b"KEY").decode()}, "client-key", tmp_path, folder)
    assert inline is not None and Path(inline).read_bytes() == b"KEY" and Path(inline).parent == folder
    assert _material({}, "client-key", tmp_path, folder) is None
