"""The security tests' checks (tests/integration/security_checks.py), without a broker.

A refusal is what librdkafka reports when a broker says no; a port nobody listens on, or a
listener that never answers, is a broker down or slow, and the check must fail on it instead of
counting it as refused. The texts below are librdkafka 2.16's, measured against Kafka 4 brokers.
A leak scan's corpus must hold every place it claims to scan, or the scan fails.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from confluent_kafka import KafkaError

from components.platform.local.layout import process_marker
from tests.integration.harness import ROOT, TestStack
from tests.integration.security_checks import (
    BROKER_STARTED,
    DISCONNECTS_TO_REFUSE,
    WORKER_STARTED,
    Corpus,
    Refusal,
    assert_whole,
    metadata_refusal,
    processes,
    refusal_of,
)

BROKER = "sasl_plaintext://127.0.0.1:18484/bootstrap"
WRONG_PASSWORD = (
    f"{BROKER}: SASL authentication error: Authentication failed during authentication due to invalid "
    "credentials with SASL mechanism SCRAM-SHA-512 (after 206ms in state AUTH_REQ)"
)
UNTRUSTED = (
    "ssl://127.0.0.1:15865/bootstrap: SSL handshake failed: error:0A000086:SSL routines::certificate verify "
    "failed: broker certificate could not be verified (after 12ms in state SSL_HANDSHAKE)"
)
CLOSED_ON_PLAINTEXT = (
    "FAIL [rdkafka#producer-1] [thrd:127.0.0.1:18484/bootstrap]: 127.0.0.1:18484/bootstrap: Disconnected: "
    "connection closed by peer: receive 0 after POLLIN (after 1ms in state UP)"
)
ALL_DOWN = "1/1 brokers are down"
NOT_LISTENING = (
    "127.0.0.1:43805/bootstrap: Connect to ipv4#127.0.0.1:43805 failed: Connection refused (after 0ms in state CONNECT)"
)


@pytest.mark.parametrize(
    ("errors", "lines", "expected"),
    [
        ([KafkaError(KafkaError._AUTHENTICATION, WRONG_PASSWORD)], [], Refusal.AUTHENTICATION),
        ([KafkaError(KafkaError._SSL, UNTRUSTED)], [UNTRUSTED], Refusal.TLS),
        ([KafkaError(KafkaError._ALL_BROKERS_DOWN, ALL_DOWN)], [CLOSED_ON_PLAINTEXT] * 2, Refusal.DISCONNECT),
        # One closed connection may be a broker going down; a port nobody listens on, a timeout
        # and _ALL_BROKERS_DOWN alone are no refusal.
        ([], [CLOSED_ON_PLAINTEXT], None),
        ([KafkaError(KafkaError._TRANSPORT, NOT_LISTENING)] * 5, [NOT_LISTENING] * 5, None),
        ([KafkaError(KafkaError._ALL_BROKERS_DOWN, ALL_DOWN)], [], None),
        ([KafkaError(KafkaError._TIMED_OUT, "Failed to get metadata: Local: Timed out")], [], None),
    ],
)
def test_only_what_a_broker_says_no_with_is_a_refusal(
    errors: list[KafkaError], lines: list[str], expected: Refusal | None
) -> None:
    assert refusal_of(errors, lines) is expected


@contextmanager
def _listener(closes: bool) -> Iterator[int]:
    """A loopback port that accepts connections and then closes each (`closes`) or never answers."""
    stop = threading.Event()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.1)

        def serve() -> None:
            while not stop.is_set():
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    continue
                conn.settimeout(1)
                with suppress(TimeoutError):
                    conn.recv(1024)  # the client's first request, then what a refusing broker does
                conn.close()

        thread = threading.Thread(target=serve, daemon=True)
        if closes:
            thread.start()
        try:
            yield server.getsockname()[1]
        finally:
            stop.set()
            if closes:
                thread.join(5)


def test_a_port_nobody_listens_on_fails_the_check_instead_of_passing_as_refused() -> None:
    with socket.socket() as bound:  # bound, never listening: the kernel refuses every connection
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        with pytest.raises(AssertionError, match=r"no answer within 1 s: the broker is down or slow, not refusing"):
            metadata_refusal({"bootstrap.servers": f"127.0.0.1:{port}"}, timeout_s=1)


def test_a_listener_that_never_answers_fails_the_check_instead_of_passing_as_refused() -> None:
    with _listener(closes=False) as port, pytest.raises(AssertionError, match=r"no answer within 1 s"):
        metadata_refusal({"bootstrap.servers": f"127.0.0.1:{port}"}, timeout_s=1)


def test_a_listener_closing_every_connection_it_accepted_refuses_by_disconnect() -> None:
    with _listener(closes=True) as port:
        refusal, reports = metadata_refusal({"bootstrap.servers": f"127.0.0.1:{port}"}, timeout_s=8)
    assert refusal is Refusal.DISCONNECT, reports
    assert sum("Disconnected" in r for r in reports) >= DISCONNECTS_TO_REFUSE, reports


# --- the leak scan's corpus -------------------------------------------------------------------

CONNECTORS = {"source": "mm2-primary-to-dr-source", "checkpoint": "mm2-primary-to-dr-checkpoint"}
OUT = {"flows": {"primary->dr": {"connectors": CONNECTORS}}}


def _dev_stack() -> Any:
    """A stand-in for a deployed dev stack: its name and its config, parsed as TestStack does."""
    fake = SimpleNamespace(name="itest-x", config=yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text()))
    fake.topology = lambda: TestStack.topology(fake)  # type: ignore[arg-type]
    return fake


def _whole(stack: Any) -> dict[str, Any]:
    """The places and secret files of a scan that read everything."""
    started = processes(stack)
    places: dict[str, str | bytes] = {
        "output of pulumi up (module setup)": "Outputs:\n    client: [secret]\nResources:\n    + 23 created\n",
        "ps -ww -eo args": "\n".join(f"java -Dmm2.process={process_marker(stack.name, p)} Main" for p in started),
        "mm2-mm2-configs topic": "\n".join(CONNECTORS.values()).encode(),
    }
    places |= {f"run dir {path}/logs/server.log": f"[t] INFO {line} (x)\n".encode() for path, line in started.items()}
    places |= {f"GET /connectors/{name}/config": '{"connector.class": "x"}' for name in CONNECTORS.values()}
    secrets = {f"{path}/config/{'worker-' if 'worker' in path else ''}secrets.properties" for path in started}
    return {"places": places, "secret_files": frozenset(secrets | {"connect-mm2/secrets.properties"})}


def test_the_dev_stack_runs_two_brokers_and_two_workers() -> None:
    assert processes(_dev_stack()) == {
        "primary/broker-0": BROKER_STARTED,
        "dr/broker-0": BROKER_STARTED,
        "connect-mm2/worker-0": WORKER_STARTED,
        "connect-mm2/worker-1": WORKER_STARTED,
    }


def test_a_corpus_holding_every_place_is_whole() -> None:
    stack = _dev_stack()
    assert_whole(stack, OUT, Corpus(**_whole(stack)))


def _drop(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda corpus: corpus["places"].pop(key)


def _blank(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda corpus: corpus["places"].update({key: b"[t] INFO nothing yet (x)\n"})


@pytest.mark.parametrize(
    ("lose", "message"),
    [
        (_drop("output of pulumi up (module setup)"), "no `pulumi up` output scanned"),
        (_blank("run dir connect-mm2/worker-1/logs/server.log"), "worker-1's log"),
        (_drop("run dir dr/broker-0/logs/server.log"), "dr/broker-0's log"),
        (_blank("ps -ww -eo args"), "broker-0's command line not in ps"),
        (_blank("mm2-mm2-configs topic"), "not in the config topic"),
        (_drop("GET /connectors/mm2-primary-to-dr-source/config"), "mm2-primary-to-dr-source"),
        (lambda c: c.update(secret_files=c["secret_files"] - {"connect-mm2/secrets.properties"}), "group's secrets"),
        (lambda c: c.update(secret_files=frozenset()), "broker-0's secrets file holds none"),
    ],
)
def test_a_corpus_missing_a_place_fails_the_scan(lose: Callable[[dict[str, Any]], None], message: str) -> None:
    stack = _dev_stack()
    corpus = _whole(stack)
    lose(corpus)
    with pytest.raises(AssertionError, match=message):
        assert_whole(stack, OUT, Corpus(**corpus))
