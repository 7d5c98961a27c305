"""CredentialRollout: restarts a flow's connectors only when the credentials they resolve change."""

from __future__ import annotations

from functools import partial
from typing import Any

from components.rollout import CredentialRolloutProvider


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
