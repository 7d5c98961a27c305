"""The preview's read of the Kubernetes API as a kubeconfig's user, against a real loopback server."""

from __future__ import annotations

import base64
import http.server
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.platform.kubernetes.api import Unsupported, _material, get_json
from components.platform.kubernetes.exec_credential import ExecFailed, credential, forget, parse


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


def test_auth_provider_and_basic_auth_users_are_not_spoken(tmp_path: Path) -> None:
    for user in ({"auth-provider": {"name": "gcp"}}, {"username": "u", "password": "p"}):
        with pytest.raises(Unsupported):
            get_json(config("https://127.0.0.1:1", user), "x", "/api/v1/nodes", tmp_path)


def plugin(tmp_path: Path, status: dict[str, object]) -> dict[str, object]:
    """An exec plugin (a script beside the kubeconfig) that prints `status` as an ExecCredential,
    counts its runs and keeps the KUBERNETES_EXEC_INFO it was given."""
    script = tmp_path / "bin" / "get-token"
    script.parent.mkdir(exist_ok=True)
    document = json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status})
    script.write_text(
        f"#!{sys.executable}\n"
        "import os, pathlib\n"
        f"runs = pathlib.Path({str(tmp_path / 'runs')!r})\n"
        "runs.write_text((runs.read_text() if runs.exists() else '') + os.environ['KUBERNETES_EXEC_INFO'] + '\\n')\n"
        f"print({document!r})\n"
    )
    script.chmod(0o755)
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "bin/get-token", "args": ["--x"]}}


def test_an_exec_users_token_is_asked_of_its_plugin_once_while_valid(
    server: tuple[str, list[dict[str, str]]], tmp_path: Path
) -> None:
    url, seen = server
    user = plugin(tmp_path, {"token": "from-plugin", "expirationTimestamp": "2999-01-01T00:00:00Z"})
    for _ in range(3):
        assert get_json(config(url, user), "x", "/api/v1/nodes", tmp_path) == {"items": []}
    assert [s["auth"] for s in seen] == ["Bearer from-plugin"] * 3
    runs = (tmp_path / "runs").read_text().splitlines()
    assert len(runs) == 1
    assert json.loads(runs[0]) == {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }


def test_an_expired_or_refused_credential_is_asked_for_again(tmp_path: Path) -> None:
    spec = plugin(tmp_path, {"token": "t", "expirationTimestamp": "2000-01-01T00:00:00Z"})["exec"]
    cluster = {"server": "https://k"}
    assert isinstance(spec, dict)
    assert credential(spec, cluster, tmp_path).token == "t"
    assert credential(spec, cluster, tmp_path).expires == 946684800.0
    assert len((tmp_path / "runs").read_text().splitlines()) == 2  # expired: run again
    later = {**spec, "args": ["--y"]}
    credential(later, cluster, tmp_path, now=0.0)
    credential(later, cluster, tmp_path, now=0.0)
    assert len((tmp_path / "runs").read_text().splitlines()) == 3
    forget(later, cluster)
    credential(later, cluster, tmp_path, now=0.0)
    assert len((tmp_path / "runs").read_text().splitlines()) == 4


def test_a_plugins_client_certificate_becomes_inline_key_material() -> None:
    got = parse(json.dumps({"status": {"clientCertificateData": "CERT PEM", "clientKeyData": "KEY PEM"}}))
    assert (got.token, got.certificate, got.key, got.expires) == ("", "CERT PEM", "KEY PEM", None)


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ({"command": "no-such-plugin-here", "installHint": "install it from your cloud's CLI"}, "not found on PATH"),
        ({"command": "true", "interactiveMode": "Always"}, "needs a terminal"),
        ({"command": "false"}, "failed: exit code 1"),
        ({"command": "true"}, "printed no ExecCredential"),
    ],
)
def test_a_plugin_that_gives_no_credential_says_why(spec: dict[str, str], said: str, tmp_path: Path) -> None:
    with pytest.raises(ExecFailed, match=said) as failed:
        credential(spec, {"server": str(tmp_path)}, tmp_path)
    assert isinstance(failed.value, OSError)  # callers treat it as the API not answering
    if "installHint" in spec:
        assert "install it from your cloud's CLI" in str(failed.value)


def test_a_credential_without_token_or_certificate_is_refused() -> None:
    with pytest.raises(ExecFailed, match="neither a token nor a client certificate"):
        parse(json.dumps({"status": {"clientCertificateData": "CERT PEM"}}))


def test_material_is_a_path_relative_to_the_kubeconfig_or_inline_data_in_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "private"
    folder.mkdir()
    assert _material({"client-key": "pki/admin.key"}, "client-key", tmp_path, folder) == str(tmp_path / "pki/admin.key")
    inline = _material({"client-key-data": base64.b64encode(b"KEY").decode()}, "client-key", tmp_path, folder)
    assert inline is not None and Path(inline).read_bytes() == b"KEY" and Path(inline).parent == folder
    assert _material({}, "client-key", tmp_path, folder) is None
