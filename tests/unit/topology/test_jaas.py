"""SASL passwords with `"` and `\\` survive the secrets file and the JAAS string they are substituted into."""

from __future__ import annotations

import re

import pytest

from components.topology import parse_topology
from components.topology.config_provider import PLACEHOLDER
from components.topology.connectors import security_properties
from components.topology.jaas import jaas_ready, quotable_password_keys, sasl_password_keys
from components.topology.java_properties import parse_properties
from components.topology.security import render_secrets
from tests.unit.topology.helpers import SECRETS, secure_config

PASSWORDS = ['p"w', "p\\w", 'a\\"b\\\\', '"', "plain"]


def _substituted(value: str, secrets_text: str) -> str:
    """What FileConfigProvider does: every `${file:<path>:<key>}` replaced by the file's value."""
    values = dict(parse_properties(secrets_text))
    return PLACEHOLDER.sub(lambda m: values[m["body"].partition(":")[2]], value)


def _jaas_password(jaas: str) -> str:
    """The `password` option as Kafka's JaasConfig tokenizer reads it: `\\x` stands for `x`."""
    match = re.search(r'\bpassword="((?:[^"\\]|\\.)*)"', jaas)
    assert match is not None, "no complete quoted password option"
    return re.sub(r"\\(.)", r"\1", match.group(1))


@pytest.mark.parametrize("password", PASSWORDS)
def test_a_connectors_sasl_password_reaches_kafka_intact(password: str) -> None:
    topology = parse_topology(secure_config())
    security = topology.clusters["primary"].security
    assert security.password is not None
    jaas = security_properties(security, SECRETS)["sasl.jaas.config"]
    text = render_secrets(jaas_ready({security.password.key: password}, sasl_password_keys(topology)))
    assert _jaas_password(_substituted(jaas, text)) == password


def test_without_quoting_such_a_password_breaks_the_jaas_string() -> None:
    """The failure the quoting prevents (so the test above can fail)."""
    topology = parse_topology(secure_config())
    security = topology.clusters["primary"].security
    assert security.password is not None
    jaas = security_properties(security, SECRETS)["sasl.jaas.config"]
    text = render_secrets({security.password.key: 'p"w'})
    assert _jaas_password(_substituted(jaas, text)) != 'p"w'


def test_sasl_password_keys_are_the_client_and_user_passwords_only() -> None:
    keys = sasl_password_keys(parse_topology(secure_config()))
    assert {"primary.admin.password", "dr.admin.password", "primary.mm2.password", "dr.mm2.password"} <= keys
    assert "mm2.worker.password" in keys
    assert not any("rest" in k or "store" in k for k in keys), keys


def test_only_all_local_stacks_may_quote() -> None:
    config = secure_config()
    assert quotable_password_keys(parse_topology(config)) == sasl_password_keys(parse_topology(config))
    config["workerGroups"]["mm2"]["url"] = "http://connect.example:8083"
    config["workerGroups"]["mm2"].pop("restPort", None)
    assert quotable_password_keys(parse_topology(config)) == frozenset()
