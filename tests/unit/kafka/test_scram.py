"""ScramUsersProvider against an in-memory Admin client: diffs, upserts, drift and deletes."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import ScramMechanism

from components.kafka import scram
from components.kafka.scram import ITERATIONS, ScramError, ScramUsersProvider, _alter

from .fakes import BOOTSTRAP, FakeAdmin, failed, kafka_error, secret

SHA512 = ScramMechanism.SCRAM_SHA_512
SHA256 = ScramMechanism.SCRAM_SHA_256
USERS = {"mm2": "pw-mm2", "connect": "pw-connect"}


def props(users: dict[str, str] | None = None, **over: Any) -> dict[str, Any]:
    return {
        "cluster": "primary",
        "bootstrap": BOOTSTRAP,
        "client": {"sasl.username": "admin", "sasl.password": "s3cret"},
        "mechanism": "SCRAM-SHA-512",
        "users": dict(USERS if users is None else users),
        "ephemeral": False,
        **over,
    }


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeAdmin:
    admin = FakeAdmin()
    monkeypatch.setattr(scram, "admin_client", admin.factory)
    return admin


def on_cluster(fake: FakeAdmin, users: dict[str, str], mechanism: ScramMechanism = SHA512) -> None:
    for name, password in users.items():
        fake.users.setdefault(name, {})[mechanism] = password.encode()


# -- diff ----------------------------------------------------------------------------------------


def test_diff_of_identical_props_has_no_changes_even_with_secret_wrapping() -> None:
    news = {**props(), "users": secret(USERS), "client": secret(props()["client"])}
    result = ScramUsersProvider().diff("primary/scram-users", props(), news)
    assert (result.changes, result.replaces) == (False, [])


@pytest.mark.parametrize(
    "news",
    [
        props({"mm2": "rotated", "connect": "pw-connect"}),
        props({**USERS, "reader": "pw-reader"}),
        props({"mm2": "pw-mm2"}),
        props(client={"sasl.username": "admin", "sasl.password": "rotated"}),
        props(ephemeral=True),
    ],
    ids=["password-rotated", "user-added", "user-removed", "client-rotated", "now-ephemeral"],
)
def test_diff_of_users_or_client_is_an_in_place_update(news: dict[str, Any]) -> None:
    result = ScramUsersProvider().diff("primary/scram-users", props(), news)
    assert (result.changes, result.replaces) == (True, [])


@pytest.mark.parametrize("change", [{"bootstrap": "primary-1:9092"}, {"mechanism": "SCRAM-SHA-256"}])
def test_diff_of_bootstrap_or_mechanism_replaces_deleting_first(change: dict[str, Any]) -> None:
    result = ScramUsersProvider().diff("primary/scram-users", props(), props(**change))
    assert (result.changes, result.replaces, result.delete_before_replace) == (True, list(change), True)


# -- create --------------------------------------------------------------------------------------


def test_create_upserts_every_user_with_its_password_and_the_mechanism(fake: FakeAdmin) -> None:
    result = ScramUsersProvider().create(props())
    assert fake.users == {"connect": {SHA512: b"pw-connect"}, "mm2": {SHA512: b"pw-mm2"}}
    assert fake.calls == [("upsert", "connect"), ("upsert", "mm2")]
    assert (result.id, result.outs) == ("primary/scram-users", props())


def test_create_uses_the_configured_iterations_and_sha256_when_asked(
    fake: FakeAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Any] = []
    real = fake.alter_user_scram_credentials

    def recording(changes: list[Any], request_timeout: float) -> Any:
        seen.extend(changes)
        return real(changes, request_timeout)

    monkeypatch.setattr(fake, "alter_user_scram_credentials", recording)
    ScramUsersProvider().create(props({"mm2": "pw-mm2"}, mechanism="SCRAM-SHA-256"))
    info = seen[0].scram_credential_info
    assert (info.mechanism, info.iterations, seen[0].password) == (SHA256, ITERATIONS, b"pw-mm2")
    assert ITERATIONS >= 4096  # Kafka refuses fewer


def test_create_without_users_does_not_reach_the_cluster(fake: FakeAdmin) -> None:
    ScramUsersProvider().create(props({}))
    assert (fake.clients, fake.calls) == ([], [])


def test_a_refused_upsert_is_a_scram_error_naming_cluster_and_user_never_the_password(fake: FakeAdmin) -> None:
    fake.failures["alter_user_scram_credentials"] = kafka_error(KafkaError.CLUSTER_AUTHORIZATION_FAILED)
    with pytest.raises(ScramError) as info:
        ScramUsersProvider().create(props({"mm2": "pw-mm2"}))
    message = str(info.value)
    assert f"SCRAM users on cluster 'primary' ({BOOTSTRAP}): mm2: " in message
    assert "CLUSTER_AUTHORIZATION_FAILED" in message
    assert "pw-mm2" not in message


def test_a_user_not_found_is_tolerated_only_when_deleting_it(fake: FakeAdmin) -> None:
    fake.failures["alter_user_scram_credentials"] = kafka_error(KafkaError.RESOURCE_NOT_FOUND)
    with pytest.raises(ScramError, match=r"mm2: .*RESOURCE_NOT_FOUND"):
        ScramUsersProvider().create(props({"mm2": "pw-mm2"}))


# -- update --------------------------------------------------------------------------------------


def test_update_upserts_only_changed_users_and_deletes_only_removed_ones(fake: FakeAdmin) -> None:
    olds = props({**USERS, "retired": "pw-retired"})
    on_cluster(fake, olds["users"])
    news = props({"mm2": "pw-mm2", "connect": "rotated", "reader": "pw-reader"}, client={"sasl.password": "new"})
    assert ScramUsersProvider().update("primary/scram-users", olds, news).outs == news
    assert [c["client"] for c in fake.clients] == [{"sasl.password": "new"}]  # the admin's rotated password
    assert fake.calls == [("upsert", "connect"), ("upsert", "reader"), ("delete", "retired")]
    assert fake.users["connect"] == {SHA512: b"rotated"}
    assert fake.users["mm2"] == {SHA512: b"pw-mm2"}
    assert fake.users["retired"] == {}


def test_update_removing_a_user_already_gone_succeeds(fake: FakeAdmin) -> None:
    on_cluster(fake, {"mm2": "pw-mm2"})
    ScramUsersProvider().update("primary/scram-users", props(), props({"mm2": "pw-mm2"}))
    assert fake.calls == [("delete", "connect")]


def test_update_of_the_client_alone_does_not_reach_the_cluster(fake: FakeAdmin) -> None:
    news = props(client={"sasl.username": "admin", "sasl.password": "rotated"})
    assert ScramUsersProvider().update("primary/scram-users", props(), news).outs == news
    assert (fake.clients, fake.calls) == ([], [])


# -- read ----------------------------------------------------------------------------------------


def test_read_of_users_all_present_reports_the_state_unchanged(fake: FakeAdmin) -> None:
    on_cluster(fake, USERS)
    result = ScramUsersProvider().read("primary/scram-users", props())
    assert (result.id, result.outs) == ("primary/scram-users", props())


def test_read_drops_a_user_deleted_by_hand_so_the_next_diff_shows_drift(fake: FakeAdmin) -> None:
    on_cluster(fake, {"connect": "pw-connect"})
    result = ScramUsersProvider().read("primary/scram-users", props())
    assert (result.id, result.outs) == ("primary/scram-users", props({"connect": "pw-connect"}))
    assert ScramUsersProvider().diff("primary/scram-users", result.outs, props()).changes is True


def test_read_drops_a_user_who_has_only_another_mechanisms_credential(fake: FakeAdmin) -> None:
    on_cluster(fake, {"connect": "pw-connect"})
    on_cluster(fake, {"mm2": "pw-mm2"}, SHA256)
    assert ScramUsersProvider().read("primary/scram-users", props()).outs["users"] == {"connect": "pw-connect"}


@pytest.mark.parametrize("how", ["call-raises", "future-fails"])
def test_read_leaves_the_state_as_it_was_when_the_cluster_does_not_answer(fake: FakeAdmin, how: str) -> None:
    on_cluster(fake, {"connect": "pw-connect"})  # mm2 looks deleted, but the answer is not to be trusted
    if how == "call-raises":
        fake.unreachable.add("describe_user_scram_credentials")
    else:
        fake.failures["describe_user_scram_credentials"] = kafka_error(KafkaError._TIMED_OUT)
    result = ScramUsersProvider().read("primary/scram-users", props())
    assert (result.id, result.outs) == ("primary/scram-users", props())


def test_read_without_users_does_not_reach_the_cluster(fake: FakeAdmin) -> None:
    assert ScramUsersProvider().read("primary/scram-users", props({})).outs == props({})
    assert fake.clients == []


# -- delete --------------------------------------------------------------------------------------


def test_delete_removes_every_user_tolerating_those_already_gone(fake: FakeAdmin) -> None:
    on_cluster(fake, {"mm2": "pw-mm2"})
    ScramUsersProvider().delete("primary/scram-users", props())
    assert sorted(fake.calls) == [("delete", "connect"), ("delete", "mm2")]
    assert fake.users == {"mm2": {}}


def test_delete_of_an_ephemeral_cluster_leaves_it_alone(fake: FakeAdmin) -> None:
    on_cluster(fake, USERS)
    ScramUsersProvider().delete("primary/scram-users", props(ephemeral=True))
    assert (fake.clients, fake.calls) == ([], [])


def test_an_upsert_that_times_out_while_the_controller_moves_is_sent_again(
    fake: FakeAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, tries = fake.alter_user_scram_credentials, []

    def slow_at_first(changes: list[Any], request_timeout: float) -> Any:
        tries.append([c.user for c in changes])
        if len(tries) == 1:
            return {c.user: failed(kafka_error(KafkaError._TIMED_OUT)) for c in changes}
        return real(changes, request_timeout)

    monkeypatch.setattr(fake, "alter_user_scram_credentials", slow_at_first)
    pauses: list[float] = []
    _alter(props({"mm2": "pw-mm2"}), {"mm2": "pw-mm2"}, [], pause=pauses.append, clock=lambda: 0.0)
    assert tries == [["mm2"], ["mm2"]] and pauses == [2.0]
    assert fake.users == {"mm2": {SHA512: b"pw-mm2"}}


def test_a_timeout_that_lasts_past_the_bound_is_a_scram_error(fake: FakeAdmin) -> None:
    fake.failures["alter_user_scram_credentials"] = kafka_error(KafkaError._TIMED_OUT)
    now = iter([0.0, 10.0, 70.0])
    pauses: list[float] = []
    with pytest.raises(ScramError, match=r"mm2: .*_TIMED_OUT"):
        _alter(props({"mm2": "pw-mm2"}), {"mm2": "pw-mm2"}, [], pause=pauses.append, clock=lambda: next(now))
    assert pauses == [2.0]  # one more try inside the bound, none after it
