"""components/platform/kubernetes/admin_rotation.py: admin's SCRAM credential gets the new password,
logged in as the old admin, before the roll; a rotation stopped halfway goes on without setting it again."""

from __future__ import annotations

from typing import Any

import pytest

from components.kafka.admin import Login
from components.platform.kubernetes.admin_rotation import rotated, scram_login, switch_admin
from components.rpc_values import Refused


def _props(password: str) -> dict[str, Any]:
    client = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "admin"}
    admin = {"bootstrap": "us:9094", "client": {**client, "sasl.password": password}}
    return {"cluster": "us", "mechanism": "SCRAM-SHA-512", "admin": admin}


class Brokers:
    """Which (mechanism, password) logins the brokers accept; the SCRAM credentials set."""

    def __init__(self, *accepted: tuple[str, str], unreached: str = "") -> None:
        self.accepted = set(accepted)
        self.unreached = unreached  # librdkafka's error event when no broker answers
        self.set: list[tuple[str, str, dict[str, str]]] = []

    def login(self, props: Any) -> Login:
        client = props["client"]
        if self.unreached:
            return Login(None, self.unreached)
        return Login((client["sasl.mechanism"], client["sasl.password"]) in self.accepted, "refused")

    def set_passwords(self, props: Any, users: Any) -> None:
        client = props["client"]
        self.set.append((client["sasl.mechanism"], client["sasl.password"], dict(users)))
        self.accepted |= {("SCRAM-SHA-512", password) for password in users.values()}


def _switch(brokers: Brokers) -> dict[str, Any]:
    return switch_admin(_props("old"), _props("new"), brokers.login, brokers.set_passwords)


def test_the_new_password_is_set_logged_in_as_the_old_scram_admin() -> None:
    brokers = Brokers(("SCRAM-SHA-512", "old"), ("PLAIN", "old"))
    login = _switch(brokers)
    assert brokers.set == [("SCRAM-SHA-512", "old", {"admin": "new"})]
    assert login == scram_login(_props("new"))
    assert login["client"]["sasl.mechanism"] == "SCRAM-SHA-512" and login["client"]["sasl.password"] == "new"
    assert login["client"]["security.protocol"] == "SASL_SSL" and login["bootstrap"] == "us:9094"


def test_without_a_scram_admin_yet_the_old_plain_admin_sets_it() -> None:
    brokers = Brokers(("PLAIN", "old"))
    _switch(brokers)
    assert brokers.set == [("PLAIN", "old", {"admin": "new"})]


def test_a_rotation_stopped_halfway_goes_on_without_setting_it_again() -> None:
    # The last up set the SCRAM credential, then its roll stopped: brokers hold either PLAIN password.
    brokers = Brokers(("SCRAM-SHA-512", "new"), ("PLAIN", "new"), ("PLAIN", "old"))
    assert _switch(brokers)["client"]["sasl.password"] == "new"
    assert brokers.set == []


def test_no_login_at_all_is_refused_naming_the_key_and_why() -> None:
    with pytest.raises(Refused, match=r"mm2:secrets\.us\.admin\.password: .*neither the new nor the old") as refused:
        _switch(Brokers())
    assert "its brokers refuse both. Fix: give the password the brokers hold as the old one's value" in str(
        refused.value
    )
    tls = "ssl://us:9094/bootstrap: SSL handshake failed: certificate verify failed"
    with pytest.raises(Refused) as refused:
        _switch(Brokers(unreached=tls))
    assert f"they could not be reached (librdkafka: {tls}). Fix: check that its brokers are up" in str(refused.value)


def test_a_rotation_is_the_same_admin_with_another_known_password() -> None:
    assert rotated(_props("old"), _props("new"))
    assert not rotated(_props("old"), _props("old"))
    other = _props("new")
    other["admin"]["client"]["sasl.username"] = "mm2"
    assert not rotated(_props("old"), other)
    assert not rotated(_props("old"), {**_props("new"), "admin": "04da6b54-80e4-46f7-96ec-b56ff0331ba9"})
