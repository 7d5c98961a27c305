"""TLS on real parts: a stack CA, SASL_SSL and SSL brokers, an HTTPS Connect REST API.

One deployment per module of `examples/active-passive-tls.yaml` with free ports, `primary` on
SASL_SSL (SCRAM over TLS) and `dr` on SSL (TLS without SASL), so the flow also proves MM2 bridges
two different protocols; the worker group serves HTTPS (restTls) with basic auth. Passwords come
from the stack's state and are never printed: messages name where one was found, never which.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.integration.harness import (
    ROOT,
    TestStack,
    arrives,
    connect_auth,
    deployed,
    free_port_block,
    kafka_conf,
    produce_one,
    stack_passwords,
    wait_until,
    write_outputs,
)
from tests.integration.security_checks import Refusal, assert_whole, gather, leaked_in, metadata_refusal
from tests.integration.validation_stage import run_stage

pytestmark = pytest.mark.integration

FLOW = "primary->dr"


def tls_config() -> dict[str, Any]:
    cfg = yaml.safe_load((ROOT / "examples" / "active-passive-tls.yaml").read_text())
    config = cfg["config"]
    for cluster in config["mm2:clusters"].values():
        cluster["port"] = free_port_block(2 * int(cluster.get("brokers", 1)))
    config["mm2:clusters"]["dr"]["security"] = {"protocol": "SSL"}
    config["mm2:defaults"]["settings"].update(
        {"refresh.topics.interval.seconds": "5", "emit.heartbeats.interval.seconds": "1"}
    )
    for group in config["mm2:workerGroups"].values():
        group["restPort"] = free_port_block(int(group.get("workers", 1)))
    return cfg


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with deployed(tmp_path_factory.mktemp("tls"), tls_config()) as s:
        up = s.up()
        # Kept for the leak scan: the one output every test of the module can count on.
        s.up_output = up.stdout + up.stderr  # type: ignore[attr-defined]
        yield s
    assert s.markers() == [], f"processes left behind: {s.markers()}"
    assert not s.run_dir.exists(), f"data directory left behind: {s.run_dir}"


def _produce(out: dict[str, Any], alias: str, topic: str, key: bytes) -> None:
    produce_one(out, alias, topic, key, b"tls " + key)


def _arrives(out: dict[str, Any], alias: str, topic: str, key: bytes, timeout_s: float = 150) -> bool:
    return arrives(out, alias, topic, key, timeout_s, "it-tls")


def _ca(out: dict[str, Any]) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=out["connect"]["mm2"]["caPem"])


def _credentials(stack: TestStack) -> dict[str, str]:
    """Every password of the stack by secret key (users, REST, CA, keystores, truststore), from
    the decrypted state."""
    state = json.loads(stack.pulumi("stack", "export", "--show-secrets").stdout)
    for resource in state["deployment"].get("resources", []):
        if resource.get("type") == "pulumi-python:dynamic/security:Credentials":
            values = resource.get("outputs", {}).get("values") or {}
            if "plaintext" in values:  # a secret, shown: {<sig>: ..., "plaintext": "<json>"}
                values = json.loads(values["plaintext"])
            return {str(k): str(v) for k, v in values.items()}
    raise AssertionError("no Credentials resource in the stack state")


def _passwords(stack: TestStack, out: dict[str, Any]) -> set[str]:
    """Every password of the stack: the generated and given credentials, users and REST."""
    return set(_credentials(stack).values()) | stack_passwords(out)


def test_flow_between_tls_clusters_replicates(stack: TestStack) -> None:
    out = stack.outputs()
    assert out["clusters"]["primary"]["securityProtocol"] == "SASL_SSL"
    assert out["clusters"]["dr"]["securityProtocol"] == "SSL"
    ca_location = out["clusters"]["primary"]["caLocation"]
    assert ca_location and Path(ca_location).read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert out["clusters"]["primary"]["client"]["ssl.ca.location"] == ca_location
    assert out["connect"]["mm2"]["url"].startswith("https://127.0.0.1:")
    assert set(out["flows"][FLOW]["states"].values()) == {"RUNNING"}
    key = f"tls-{uuid.uuid4().hex}".encode()
    _produce(out, "primary", "orders", key)
    assert _arrives(out, "dr", "primary.orders", key), "record did not replicate from SASL_SSL primary to SSL dr"


@pytest.mark.parametrize("alias", ["primary", "dr"])
def test_client_without_the_ca_is_refused(stack: TestStack, alias: str) -> None:
    out = stack.outputs()
    with_ca = kafka_conf(out, alias)
    refusal, reports = metadata_refusal(with_ca)
    assert refusal is None, f"the stack's own TLS client settings were refused: {reports}"
    # The same client, trusting the system CAs instead of the stack CA: the handshake fails.
    without_ca = {k: v for k, v in with_ca.items() if k != "ssl.ca.location"}
    refusal, reports = metadata_refusal(without_ca)
    assert refusal is Refusal.TLS, f"{alias}: a client without the stack CA: {refusal}, {reports[-4:]}"
    assert any("certificate verify failed" in r for r in reports), reports
    # A client that does not speak TLS gets nothing either: the broker closes its connection.
    plain = {k: v for k, v in without_ca.items() if not k.startswith("ssl.")}
    plain["security.protocol"] = "SASL_PLAINTEXT" if alias == "primary" else "PLAINTEXT"
    refusal, reports = metadata_refusal(plain)
    assert refusal is Refusal.DISCONNECT, f"{alias}: a non-TLS client on the TLS listener: {refusal}, {reports[-4:]}"


def test_https_rest_api_verifies_against_the_stack_ca_and_keeps_basic_auth(stack: TestStack) -> None:
    out = stack.outputs()
    auth = connect_auth(out)
    assert auth is not None
    port = int(stack.config["config"]["mm2:workerGroups"]["mm2"]["restPort"])
    for worker in (0, 1):
        url = f"https://127.0.0.1:{port + worker}"
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            httpx.get(f"{url}/connectors", auth=auth, timeout=10)
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{port + worker}/connectors", auth=auth, timeout=10)
        assert httpx.get(f"{url}/connectors", verify=_ca(out), timeout=10).status_code == 401
        assert httpx.get(f"{url}/connectors", auth=(auth[0], "wrong"), verify=_ca(out), timeout=10).status_code == 401
        listing = httpx.get(f"{url}/connectors", auth=auth, verify=_ca(out), timeout=10)
        assert listing.status_code == 200
        assert set(out["flows"][FLOW]["connectors"].values()) <= set(listing.json())


def test_connect_client_with_the_ca_pem(stack: TestStack) -> None:
    from components.connect.client import ConnectClient
    from components.connect.errors import ConnectTlsError

    out = stack.outputs()
    url, auth = out["connect"]["mm2"]["url"], connect_auth(out)
    with ConnectClient(url, auth=auth, ca_pem=out["connect"]["mm2"]["caPem"]) as client:
        # The worker group may rebalance after `up`: poll until RUNNING, not one sampled instant.
        def running() -> Any:
            st = client.get_status("mm2-primary-to-dr-source")
            return st if st is not None and st["connector"]["state"] == "RUNNING" else None

        status = wait_until(running, 120, "the source connector RUNNING, read over https with the stack CA")
        assert status is not None and status["connector"]["state"] == "RUNNING"
    with ConnectClient(url, auth=auth, retry_budget_s=2) as client, pytest.raises(ConnectTlsError):
        client.get_status("mm2-primary-to-dr-source")


def test_ops_commands_reach_the_https_rest_api(stack: TestStack, tmp_path: Path) -> None:
    """bin/connectors (components/ops) verifies the workers with connect.<group>.caPem from the outputs."""
    out = stack.outputs()
    outputs = write_outputs(out, tmp_path / "outputs.json")
    run = subprocess.run(
        [str(ROOT / "bin" / "connectors"), "--outputs", str(outputs), "status", "--flow", FLOW, "--json"],
        cwd=ROOT,
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # 3 is an answer too (a task briefly UNASSIGNED while MM2 reconfigures them); 1 is not reaching it.
    assert run.returncode in (0, 3), run.stderr[-2000:]
    states = {c["name"]: c["state"] for c in json.loads(run.stdout)}
    assert states["mm2-primary-to-dr-source"] == "RUNNING", states
    assert leaked_in({"bin/connectors output": run.stdout + run.stderr}, _passwords(stack, out)) == {}


def test_spark_validation_reads_both_clusters_over_tls(stack: TestStack, tmp_path: Path) -> None:
    """The post-deploy Spark stage (Java Kafka clients) reads the stack CA from the outputs, and
    finds the flow between the TLS clusters whole: exit code 0, every check passed."""
    out = stack.outputs()
    _produce(out, "primary", "payments", f"spark-{uuid.uuid4().hex}".encode())
    run = run_stage(out, tmp_path / "report.json", stack.env, "--latency-window", "0")
    flow = run.report["flows"][FLOW]
    checks = {topic: t["checks"]["completeness"]["status"] for topic, t in flow["topics"].items()}
    assert checks and set(checks.values()) == {"pass"}, (checks, run.summary())
    assert run.code == 0 and run.report["failedChecks"] == [], run.summary()
    # Neither its output nor the page people open shows a password.
    shown = {"the stage's output": run.output, "report.html": (tmp_path / "report.html").read_text()}
    assert leaked_in(shown, _passwords(stack, out)) == {}


def test_rotating_store_passwords_reissues_and_keeps_replicating(stack: TestStack) -> None:
    """`mm2:rotate` on the truststore and a keystore password: `pulumi up` rebuilds the stores,
    restarts the brokers and workers that load them and the connectors that open them."""
    before = _credentials(stack)
    cert_before = (stack.run_dir / "tls" / "cluster-primary.p12").read_bytes()
    stack.config["config"]["mm2:rotate"] = {"tls.truststore.password": "2", "primary.ssl.keystore.password": "2"}
    stack.write_config()
    up = stack.up()
    after = _credentials(stack)
    rotated = {"pulumi up (rotation)": up.stdout + up.stderr}
    assert leaked_in(rotated, set(before.values()) | set(after.values())) == {}, "a store password in the output"
    assert after["tls.truststore.password"] != before["tls.truststore.password"]
    assert after["primary.ssl.keystore.password"] != before["primary.ssl.keystore.password"]
    assert after["tls.ca.password"] == before["tls.ca.password"]
    assert (stack.run_dir / "tls" / "cluster-primary.p12").read_bytes() != cert_before
    out = stack.outputs()
    key = f"rotated-{uuid.uuid4().hex}".encode()
    _produce(out, "primary", "orders", key)
    assert _arrives(out, "dr", "primary.orders", key), "replication stopped after rotating the store passwords"


def test_no_password_leaks_keystore_and_truststore_passwords_included(
    stack: TestStack, capsys: pytest.CaptureFixture[str]
) -> None:
    out = stack.outputs()
    credentials = _credentials(stack)
    tls_keys = {
        "tls.ca.password",
        "tls.truststore.password",
        "primary.ssl.keystore.password",
        "dr.ssl.keystore.password",
        "mm2.rest.keystore.password",
    }
    assert tls_keys <= set(credentials), sorted(credentials)
    passwords = set(credentials.values()) | stack_passwords(out)
    url, auth, ca = out["connect"]["mm2"]["url"], connect_auth(out), _ca(out)
    source = httpx.get(f"{url}/connectors/mm2-primary-to-dr-source/config", auth=auth, verify=ca, timeout=10).json()
    # Connectors open the stack truststore with a config-provider placeholder, never the value.
    assert source["source.cluster.ssl.truststore.location"].endswith("/tls/truststore.p12")
    assert source["source.cluster.ssl.truststore.password"].startswith("${file:")
    assert source["target.cluster.ssl.truststore.password"].startswith("${file:")

    # Everything the deployment shows, read now and checked whole (security_checks.gather): the
    # workers' TLS passwords, for one, are in their secrets files and nowhere else.
    up_output: str = stack.up_output  # type: ignore[attr-defined]
    corpus = gather(stack, out, passwords, {"pulumi up (module setup)": up_output}, verify=ca)
    assert_whole(stack, out, corpus)
    # Keystores hold private keys: owner-only like the secrets files.
    for store in (stack.run_dir / "tls").glob("*.p12"):
        assert store.stat().st_mode & 0o077 == 0, f"{store.name} is readable by others"
    found = corpus.leaks(passwords) | leaked_in({"this test's output": capsys.readouterr().out}, passwords)
    assert found == {}, f"stack passwords found in: {sorted(found)}"
