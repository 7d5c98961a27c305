"""TLS on real parts: a stack CA, SASL_SSL and SSL brokers, an HTTPS Connect REST API.

One deployment per module of `examples/active-passive-tls.yaml` with free ports, `primary` on
SASL_SSL (SCRAM over TLS) and `dr` on SSL (TLS without SASL), so the flow also proves MM2 bridges
two different protocols; the worker group serves HTTPS (restTls) with basic auth. Passwords come
from the stack's state and are never printed: messages name where one was found, never which.
"""

from __future__ import annotations

import json
import logging
import ssl
import subprocess
import time
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
    metadata_refusal,
    produce_one,
    stack_passwords,
    wait_until,
    write_outputs,
)
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
        s.up_output = up.stdout + up.stderr  # type: ignore[attr-defined]
        yield s
    assert s.markers() == [], f"processes left behind: {s.markers()}"
    assert not s.run_dir.exists(), f"data directory left behind: {s.run_dir}"


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _errors_of(conf: dict[str, Any]) -> tuple[bool, list[str]]:
    """(refused, librdkafka's error and log messages) for a metadata request with `conf`; the
    messages are collected, not printed (librdkafka logs why a TLS handshake failed)."""
    collect = _Collect()
    logger = logging.getLogger(f"it-tls-{uuid.uuid4().hex[:8]}")
    logger.propagate = False
    logger.addHandler(collect)
    settings: dict[str, Any] = {k: v for k, v in conf.items() if k != "log_level"}
    refused, errors = metadata_refusal({**settings, "log_level": 4}, logger=logger)
    return refused, errors + collect.messages


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
    refused, errors = _errors_of(with_ca)
    assert not refused, f"the stack's own TLS client settings were refused: {errors}"
    # The same client, trusting the system CAs instead of the stack CA: the handshake fails.
    without_ca = {k: v for k, v in with_ca.items() if k != "ssl.ca.location"}
    refused, errors = _errors_of(without_ca)
    assert refused, f"{alias}: a client without the stack CA was accepted"
    assert any("certificate verify failed" in e or "SSL handshake failed" in e for e in errors), errors
    # A client that does not speak TLS gets nothing either.
    plain = {k: v for k, v in without_ca.items() if not k.startswith("ssl.")}
    plain["security.protocol"] = "SASL_PLAINTEXT" if alias == "primary" else "PLAINTEXT"
    assert _errors_of(plain)[0], f"{alias}: a non-TLS client was accepted on the TLS listener"


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
    outputs = write_outputs(stack.outputs(), tmp_path / "outputs.json")
    run = subprocess.run(
        [str(ROOT / "bin" / "connectors"), "--outputs", str(outputs), "status", "--flow", FLOW, "--json"],
        cwd=ROOT,
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    stack.up_output += run.stdout + run.stderr  # type: ignore[attr-defined]  # searched for passwords below
    # 3 is an answer too (a task briefly UNASSIGNED while MM2 reconfigures them); 1 is not reaching it.
    assert run.returncode in (0, 3), run.stderr[-2000:]
    states = {c["name"]: c["state"] for c in json.loads(run.stdout)}
    assert states["mm2-primary-to-dr-source"] == "RUNNING", states


def test_spark_validation_reads_both_clusters_over_tls(stack: TestStack, tmp_path: Path) -> None:
    """The post-deploy Spark stage (Java Kafka clients) reads the stack CA from the outputs, and
    finds the flow between the TLS clusters whole: exit code 0, every check passed."""
    out = stack.outputs()
    _produce(out, "primary", "payments", f"spark-{uuid.uuid4().hex}".encode())
    outputs = write_outputs(out, tmp_path / "outputs.json")
    run = run_stage(outputs, tmp_path / "report.json", stack.env, "--latency-window", "0")
    stack.up_output += run.output  # type: ignore[attr-defined]  # searched for passwords below
    flow = run.report["flows"][FLOW]
    checks = {topic: t["checks"]["completeness"]["status"] for topic, t in flow["topics"].items()}
    assert checks and set(checks.values()) == {"pass"}, (checks, run.summary())
    assert run.code == 0 and run.report["failedChecks"] == [], run.summary()
    html = (tmp_path / "report.html").read_text()  # the page people open; no password in it either
    stack.up_output += html  # type: ignore[attr-defined]


def test_rotating_store_passwords_reissues_and_keeps_replicating(stack: TestStack) -> None:
    """`mm2:rotate` on the truststore and a keystore password: `pulumi up` rebuilds the stores,
    restarts the brokers and workers that load them and the connectors that open them."""
    before = _credentials(stack)
    cert_before = (stack.run_dir / "tls" / "cluster-primary.p12").read_bytes()
    stack.config["config"]["mm2:rotate"] = {"tls.truststore.password": "2", "primary.ssl.keystore.password": "2"}
    stack.write_config()
    up = stack.up()
    stack.up_output += up.stdout + up.stderr  # type: ignore[attr-defined]
    after = _credentials(stack)
    assert after["tls.truststore.password"] != before["tls.truststore.password"]
    assert after["primary.ssl.keystore.password"] != before["primary.ssl.keystore.password"]
    assert after["tls.ca.password"] == before["tls.ca.password"]
    assert (stack.run_dir / "tls" / "cluster-primary.p12").read_bytes() != cert_before
    out = stack.outputs()
    key = f"rotated-{uuid.uuid4().hex}".encode()
    _produce(out, "primary", "orders", key)
    assert _arrives(out, "dr", "primary.orders", key), "replication stopped after rotating the store passwords"


def _connect_configs(out: dict[str, Any], topic: str) -> bytes:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        kafka_conf(out, "dr", **{"group.id": f"it-cfg-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False})
    )
    data = b""
    try:
        parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts}
        consumer.assign([TopicPartition(topic, p, 0) for p in parts])
        done = {p for p, high in ends.items() if high == 0}
        deadline = time.monotonic() + 60
        while len(done) < len(ends) and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error() is not None:
                continue
            data += (msg.key() or b"") + b"\n" + (msg.value() or b"") + b"\n"
            offset, partition = msg.offset(), msg.partition()
            if offset is not None and partition is not None and offset + 1 >= ends[partition]:
                done.add(partition)
    finally:
        consumer.close()
    assert data, f"read nothing from {topic}"
    return data


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

    places: dict[str, str | bytes] = {
        "pulumi stack export": stack.pulumi("stack", "export").stdout,
        "pulumi up output": stack.up_output,  # type: ignore[attr-defined]
        "ps -eo args": subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout,
        "connect-configs topic": _connect_configs(out, "mm2-mm2-configs"),
    }
    for state_file in stack.backend.rglob("*"):
        if state_file.is_file():
            places[f"state file {state_file.name}"] = state_file.read_bytes()
    for name in out["flows"][FLOW]["connectors"].values():
        for suffix in ("config", "tasks", "status"):
            places[f"GET /connectors/{name}/{suffix}"] = httpx.get(
                f"{url}/connectors/{name}/{suffix}", auth=auth, verify=ca, timeout=10
            ).text
    secret_files = []
    for path in stack.run_dir.rglob("*"):
        if not path.is_file():
            continue
        content = path.read_bytes()
        if any(pw.encode() in content for pw in passwords):
            assert path.name.endswith(("secrets.properties", "secrets.json", "rest-users.properties")), (
                f"password in {path}"
            )
            assert path.stat().st_mode & 0o077 == 0, f"{path} is readable by others"
            secret_files.append(path.name)
        else:
            places[f"run dir {path.relative_to(stack.run_dir)}"] = content
    # Keystores hold private keys: owner-only like the secrets files.
    for store in (stack.run_dir / "tls").glob("*.p12"):
        assert store.stat().st_mode & 0o077 == 0, f"{store.name} is readable by others"
    assert "worker-secrets.properties" in secret_files, "the workers' TLS passwords are not in their secrets file"
    places["this test's output"] = capsys.readouterr().out
    found = {
        place: hits
        for place, text in places.items()
        if (hits := sum(1 for pw in passwords if pw.encode() in (text if isinstance(text, bytes) else text.encode())))
    }
    assert found == {}, f"stack passwords found in: {sorted(found)}"
