"""What the security tests (test_security: SCRAM and ACLs, test_tls: TLS) check the same way: how a
broker refuses a client, and every place a deployed stack could show a password.

A refusal is the broker saying no, as librdkafka reports it: never the absence of an answer. A
broker that is down, slow or unreachable refuses nothing, and a test asserting a refusal fails
on it with that said ("no answer within 8 s: ..."), instead of passing as if refused.

A leak scan gathers its whole corpus itself, when it runs, and checks that the corpus holds what
it must (each process's log with its start line, each process's command line, each connector's
config), so that it scans the same places run alone (`-k`) as after the whole module, and a scan
that read nothing fails.
"""

from __future__ import annotations

import logging
import re
import subprocess
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

import httpx

from components.platform.local.layout import (
    BROKER_SECRETS,
    GROUP_SECRETS,
    WORKER_SECRETS,
    broker_path,
    group_path,
    process_marker,
    worker_path,
)
from components.platform.local.process import MARKER_FLAG
from components.topology.model import Platform
from tests.integration.harness import TestStack, connect_auth, kafka_conf

# --- refusals ---------------------------------------------------------------------------------


class Refusal(str, Enum):
    """How a broker refuses a client, by what librdkafka reports (measured on Kafka 4 brokers)."""

    # Error callback _AUTHENTICATION, "SASL authentication error: Authentication failed ...": an
    # unknown or deleted user, a wrong password, PLAIN for a user only SCRAM knows.
    AUTHENTICATION = "authentication"
    # Error callback _SSL, "SSL handshake failed: ... certificate verify failed": the client does
    # not trust the broker's certificate.
    TLS = "tls"
    # No error callback (but _ALL_BROKERS_DOWN), only log lines "Disconnected: connection closed
    # by peer ... (after Nms in state UP)" (or APIVERSION_QUERY): the broker accepted the
    # connection and closed it on a client that speaks the wrong protocol (no SASL on a SASL
    # listener, plaintext on a TLS one).
    DISCONNECT = "disconnect"


# A connection the broker accepted and then closed (any state after CONNECT). A port nobody
# listens on reads "Connect to ... failed: Connection refused (... in state CONNECT)" instead.
_CLOSED_BY_BROKER = re.compile(r"Disconnected: (?:SSL )?connection (?:closed|reset) by peer.*in state (?P<state>\w+)")
# A broker going down closes each connection once, then refuses to connect: one closed
# connection is not a refusal, a second one on a new connection is.
DISCONNECTS_TO_REFUSE = 2
RDKAFKA_INFO = 6  # librdkafka's log_level for the INFO lines that report a closed connection


def refusal_of(errors: Iterable[Any], log_lines: Iterable[str]) -> Refusal | None:
    """The refusal librdkafka reported through its error callback (`errors`, KafkaError) and its
    log (`log_lines`), or None: a transport failure, a timeout or _ALL_BROKERS_DOWN is none."""
    from confluent_kafka import KafkaError

    codes = {error.code() for error in errors}
    if KafkaError._AUTHENTICATION in codes:
        return Refusal.AUTHENTICATION
    if KafkaError._SSL in codes:
        return Refusal.TLS
    closed = sum(1 for line in log_lines if (m := _CLOSED_BY_BROKER.search(line)) and m["state"] != "CONNECT")
    return Refusal.DISCONNECT if closed >= DISCONNECTS_TO_REFUSE else None


class _Lines(logging.Handler):
    """One client's librdkafka log lines, kept instead of printed."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def metadata_refusal(conf: Mapping[str, Any], timeout_s: float = 8) -> tuple[Refusal | None, list[str]]:
    """(how the broker refused `conf`, what librdkafka reported: errors, then log lines) for
    metadata requests with `conf`.

    None as soon as a request is answered; the refusal as soon as librdkafka reports one (checked
    after every short attempt, so known in about a second). Neither within `timeout_s` fails the
    calling test (AssertionError): the broker is down, slow or unreachable, and that is no refusal."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    collected = _Lines()
    logger = logging.getLogger(f"{__name__}.rdkafka-{uuid.uuid4().hex[:8]}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(collected)
    errors: list[Any] = []
    settings = {k: v for k, v in conf.items() if k != "log_level"}
    admin = AdminClient({**settings, "log_level": RDKAFKA_INFO, "error_cb": errors.append}, logger=logger)

    def reported() -> list[str]:
        return [str(e) for e in errors] + collected.lines

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            admin.list_topics(timeout=0.5)
            return None, reported()
        except KafkaException:
            admin.poll(0)  # serves the error and log callbacks
        refusal = refusal_of(errors, collected.lines)
        if refusal is not None:
            return refusal, reported()
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"no answer within {timeout_s:.0f} s: the broker is down or slow, not refusing "
                f"(librdkafka's last reports: {reported()[-4:]})"
            )


# --- leaks ------------------------------------------------------------------------------------

# The only files of a run directory that may hold a password, each readable by its owner only.
SECRET_FILE_NAMES = ("secrets.properties", "secrets.json", "rest-users.properties")
BROKER_STARTED = "Kafka Server started"  # KafkaRaftServer's line once the broker serves
WORKER_STARTED = "Kafka Connect started"  # Connect's line once the worker serves REST


def config_topic_records(out: dict[str, Any], alias: str, topic: str) -> bytes:
    """Every record key and value of a worker group's config topic on `alias`, up to the end
    offsets read first (bounded), concatenated."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        kafka_conf(out, alias, **{"group.id": f"it-cfg-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False})
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


def leaked_in(places: Mapping[str, str | bytes], passwords: Iterable[str]) -> dict[str, int]:
    """{place: how many of `passwords` appear in it} for every place holding one; never the values."""
    wanted = [pw.encode() for pw in passwords]
    found: dict[str, int] = {}
    for place, text in places.items():
        raw = text if isinstance(text, bytes) else text.encode()
        if hits := sum(1 for pw in wanted if pw in raw):
            found[place] = hits
    return found


@dataclass(frozen=True)
class Corpus:
    """What a deployed stack shows to anyone but a secret's owner, by place, and the run-directory
    files that hold a password (checked owner-only when gathered)."""

    places: Mapping[str, str | bytes]
    secret_files: frozenset[str]  # paths relative to the run root

    def leaks(self, passwords: Iterable[str]) -> dict[str, int]:
        return leaked_in(self.places, passwords)


def processes(stack: TestStack) -> dict[str, str]:
    """{run path: the line its log shows once started} for every local broker and worker."""
    topology = stack.topology()
    started = {
        broker_path(c.alias, node): BROKER_STARTED
        for c in topology.clusters.values()
        if c.platform is Platform.LOCAL
        for node in range(c.brokers)
    }
    for group in topology.worker_groups.values():
        if group.platform is Platform.LOCAL:
            started.update({worker_path(group.name, i): WORKER_STARTED for i in range(group.workers)})
    return started


def gather(
    stack: TestStack, out: dict[str, Any], passwords: Iterable[str], outputs: Mapping[str, str], verify: Any = True
) -> Corpus:
    """Everything the deployment shows, read now: the command `outputs` the caller captured (the
    module fixture's `pulumi up` among them), the state (export and backend files), every
    connector's config, tasks and status over REST (`verify`: httpx's), the worker group's config
    topic, every process's command line, and every file of the run directory (process logs,
    configs, Kafka's data) but the secret files."""
    group = stack.topology().worker_groups["mm2"]
    places: dict[str, str | bytes] = {f"output of {name}": text for name, text in outputs.items()}
    places["pulumi stack export"] = stack.pulumi("stack", "export").stdout
    # -ww: the whole command line, however long (a JVM's is), not the terminal's width.
    ps = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True, check=True, timeout=30)
    places["ps -ww -eo args"] = ps.stdout
    places[f"{group.config_topic} topic"] = config_topic_records(out, group.cluster, group.config_topic)
    for state_file in stack.backend.rglob("*"):
        if state_file.is_file():
            places[f"state file {state_file.name}"] = state_file.read_bytes()
    url, auth = out["connect"]["mm2"]["url"], connect_auth(out)
    for name in out["flows"]["primary->dr"]["connectors"].values():
        for suffix in ("config", "tasks", "status"):
            places[f"GET /connectors/{name}/{suffix}"] = httpx.get(
                f"{url}/connectors/{name}/{suffix}", auth=auth, verify=verify, timeout=10
            ).text
    secret_files: set[str] = set()
    wanted = [pw.encode() for pw in passwords]
    for path in stack.run_dir.rglob("*"):
        if not path.is_file():
            continue
        where, content = str(path.relative_to(stack.run_dir)), path.read_bytes()
        if any(pw in content for pw in wanted):
            assert path.name.endswith(SECRET_FILE_NAMES), f"password in {where}"
            assert path.stat().st_mode & 0o077 == 0, f"{where} is readable by others"
            secret_files.add(where)
        else:
            places[f"run dir {where}"] = content
    return Corpus(places, frozenset(secret_files))


def _text(value: str | bytes | None) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value or ""


def assert_whole(stack: TestStack, out: dict[str, Any], corpus: Corpus) -> None:
    """The corpus holds what a full scan must: `pulumi up` output with its masked outputs, every
    broker's and worker's log with its start line (in server.log or a rolled-over server.log.N),
    command line and secrets file, the group's secrets file, and every connector in the config
    topic and over REST."""
    places, connectors = corpus.places, out["flows"]["primary->dr"]["connectors"].values()
    ups = [_text(text) for name, text in places.items() if name.startswith("output of pulumi up")]
    assert any("Resources:" in text and "[secret]" in text for text in ups), "no `pulumi up` output scanned"
    started = processes(stack)
    assert started, "the stack runs no local process"
    ps_args = set(_text(places.get("ps -ww -eo args")).split())
    for path, line in started.items():
        log = f"run dir {path}/logs/server.log"
        logs = "".join(_text(text) for name, text in places.items() if name.startswith(log))
        assert line in logs, f"no {line!r} in {path}'s log"
        assert MARKER_FLAG + process_marker(stack.name, path) in ps_args, f"{path}'s command line not in ps"
        secrets = BROKER_SECRETS if "/broker-" in path else WORKER_SECRETS
        assert f"{path}/{secrets}" in corpus.secret_files, f"{path}'s secrets file holds none of the passwords"
    assert f"{group_path('mm2')}/{GROUP_SECRETS}" in corpus.secret_files, "the group's secrets file holds no password"
    topic = "".join(_text(text) for name, text in places.items() if name.endswith("-configs topic"))
    for name in connectors:
        assert name in topic, f"connector {name} not in the config topic"
        config = _text(places.get(f"GET /connectors/{name}/config"))
        assert "connector.class" in config, f"no config for {name} over REST"
