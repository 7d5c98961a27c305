"""Providers that hold or write secrets: generation and rotation, check errors, file modes, diffs."""

from __future__ import annotations

import stat
from functools import partial
from pathlib import Path
from typing import Any

from components.credentials import CredentialsProvider, resolve
from components.local import process as proc
from components.local.provider import ProcessProvider
from components.local.secrets_file import SecretsFileProvider
from components.rollout import CredentialRolloutProvider


def test_generated_passwords_are_random_strong_and_kept() -> None:
    first = resolve(["a", "b"], {}, {}, {}, {}, {})
    assert first["a"] != first["b"] and len(first["a"]) >= 32
    assert set(first["a"]) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    again = resolve(["a", "b"], {}, {}, first, {}, {})
    assert again == first


def test_given_wins_and_rotation_labels_regenerate() -> None:
    old = {"a": "old-a", "b": "old-b", "c": "old-c"}
    values = resolve(["a", "b", "c"], {"a": "given-a"}, {"b": "2"}, old, {}, {"b": "1"})
    assert values["a"] == "given-a"
    assert values["b"] not in ("old-b", "")
    assert values["c"] == "old-c"
    # A key that is no longer given gets a fresh password, not the old given one.
    assert resolve(["a"], {}, {}, {"a": "given-a"}, {"a": "given-a"}, {})["a"] != "given-a"


def test_check_names_a_missing_required_secret_and_never_echoes_values() -> None:
    provider = CredentialsProvider()
    result = provider.check(
        {},
        {
            "generated": ["dr.mm2.password"],
            "required": ["dr.mm2.password", "ext.mm2.password"],
            "given": {"dr.mm2.password": 'has"quote'},
        },
    )
    reasons = [f.reason for f in result.failures]
    assert any("'ext.mm2.password'" in r and "pulumi config set --secret" in r for r in reasons)
    assert any("quote" in r for r in reasons)
    assert all('has"quote' not in r for r in reasons)


def test_credentials_diff_ignores_unrelated_given_keys() -> None:
    provider = CredentialsProvider()
    olds = {"generated": ["a"], "required": ["a"], "given": {"zzz": "1"}, "rotate": {}}
    news = {**olds, "given": {"zzz": "2"}}
    assert provider.diff("credentials", olds, news).changes is False
    assert provider.diff("credentials", olds, {**olds, "given": {"a": "x"}}).changes is True


def test_secret_files_are_owner_only_and_inside_the_run_dir(tmp_path: Path) -> None:
    spec = proc.JvmSpec(
        component="test",
        marker="m",
        main_class="X",
        classpath_dir="/x",
        run_dir=str(tmp_path),
        properties={"a": "b"},
        secret_files={"config/secrets.properties": "k=v\n"},
    )
    proc.prepare_run_dir(spec)
    written = tmp_path / "config" / "secrets.properties"
    assert written.read_text() == "k=v\n"
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    escape = proc.JvmSpec(**{**spec.__dict__, "secret_files": {"../outside": "x"}})
    try:
        proc.write_secret_files(escape)
    except proc.ProcessError as exc:
        assert "outside its run directory" in str(exc) and "x" not in str(exc).split("'")[-1]
    else:
        raise AssertionError("a secret file outside the run directory was written")


def test_jvm_options_reach_the_command_line_before_the_main_class() -> None:
    spec = proc.JvmSpec(
        component="t",
        marker="m",
        main_class="Main",
        classpath_dir="/x",
        run_dir="/r",
        properties={},
        jvm_options=("-Djava.security.auth.login.config=/r/config/rest-jaas.conf",),
    )
    cmd = proc._jvm_command(spec, "Main", [], "256m")
    assert cmd.index("-Djava.security.auth.login.config=/r/config/rest-jaas.conf") < cmd.index("Main")


def test_changed_secret_file_restarts_the_process_in_place() -> None:
    base = {"marker": "m", "run_dir": "/r", "properties": {"a": "1"}, "secret_files": {"s": "old"}}
    diff = ProcessProvider().diff("m", base, {**base, "secret_files": {"s": "new"}})
    assert diff.changes is True and diff.replaces == []
    # State written before the input existed is no change.
    old_state = {k: v for k, v in base.items() if k != "secret_files"}
    assert ProcessProvider().diff("m", old_state, {**old_state, "secret_files": {}, "jvm_options": []}).changes is False


def test_group_secrets_file_is_rewritten_owner_only_and_removed(tmp_path: Path) -> None:
    provider = SecretsFileProvider()
    path = tmp_path / "connect-mm2" / "secrets.properties"
    provider.create({"path": str(path), "content": "a=1\n"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert provider.diff(
        str(path), {"path": str(path), "content": "a=1\n"}, {"path": str(path), "content": "a=2\n"}
    ).changes
    provider.update(str(path), {}, {"path": str(path), "content": "a=2\n"})
    assert path.read_text() == "a=2\n" and stat.S_IMODE(path.stat().st_mode) == 0o600
    provider.delete(str(path), {"path": str(path)})
    assert not path.exists() and not path.parent.exists()


def test_rollout_restarts_only_when_credentials_change() -> None:
    provider = CredentialRolloutProvider()
    olds = {"flow": "a->b", "credentials": {"k": "1"}, "auth": {"username": "u", "password": "p"}}
    assert provider.diff("id", olds, dict(olds)).changes is False
    assert provider.diff("id", olds, {**olds, "credentials": {"k": "2"}}).changes is True
    # Only the REST credential changed: an update that restarts nothing (no Connect call made).
    news = {**olds, "auth": {"username": "u", "password": "q"}, "connect_url": "http://127.0.0.1:1"}
    assert provider.update("id", olds, news).outs == news


def test_rollout_restarts_into_the_declared_state_and_skips_stopped_connectors(monkeypatch: Any) -> None:
    import components.rollout as rollout
    from components.connect.client import ConnectClient
    from tests.unit.connect.fakes import FakeConnect

    fake = FakeConnect(
        connectors={n: {"connector.class": "x"} for n in ("f-source", "f-checkpoint", "f-heartbeat")},
        states={"f-source": "RUNNING", "f-checkpoint": "PAUSED", "f-heartbeat": "STOPPED"},
    )
    monkeypatch.setattr(rollout, "ConnectClient", partial(ConnectClient, transport=fake.transport()))
    olds = {"flow": "a->b", "credentials": {"k": "1"}, "auth": None}
    news = {
        **olds,
        "credentials": {"k": "2"},
        "connect_url": "http://connect.test:8083",
        "connectors": ["f-source", "f-checkpoint", "f-heartbeat"],
        "states": {"f-source": "RUNNING", "f-checkpoint": "PAUSED", "f-heartbeat": "STOPPED"},
    }
    CredentialRolloutProvider().update("id", olds, news)
    restarted = [path.split("?")[0] for path in fake.seen("POST")]
    assert restarted == ["POST /connectors/f-source/restart", "POST /connectors/f-checkpoint/restart"]
    assert fake.states == {"f-source": "RUNNING", "f-checkpoint": "PAUSED", "f-heartbeat": "STOPPED"}
