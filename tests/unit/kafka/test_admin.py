"""The admin connection every Kafka provider builds: settings passed to librdkafka, secrets unwrapped."""

from __future__ import annotations

from typing import Any

import confluent_kafka.admin
import pytest

from components.kafka.admin import admin_client

from .fakes import BOOTSTRAP, secret


class RecordingAdminClient:
    """Takes the place of AdminClient: keeps its settings and never opens a socket."""

    def __init__(self, conf: dict[str, Any]) -> None:
        self.conf = conf


@pytest.fixture(autouse=True)
def no_real_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confluent_kafka.admin, "AdminClient", RecordingAdminClient)


def test_a_client_without_credentials_gets_the_bootstrap_and_quiet_logging() -> None:
    for props in (
        {"bootstrap": BOOTSTRAP},
        {"bootstrap": BOOTSTRAP, "client": None},
        {"bootstrap": BOOTSTRAP, "client": {}},
    ):
        # log_level 0 keeps librdkafka's connection errors off the engine's stderr.
        assert admin_client(props).conf == {"bootstrap.servers": BOOTSTRAP, "log_level": 0, "socket.timeout.ms": 10000}


def test_client_settings_arrive_unwrapped_and_as_strings() -> None:
    client = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.password": secret("s3cret")}
    conf = admin_client({"bootstrap": BOOTSTRAP, "client": secret({**client, "retries": 3})}).conf
    assert conf == {
        "bootstrap.servers": BOOTSTRAP,
        "log_level": 0,
        "socket.timeout.ms": 10000,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.password": "s3cret",
        "retries": "3",
    }
