"""AclsProvider against an in-memory Admin client: diffs, and creates, updates, refreshes and deletes."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

from components.kafka import acl
from components.kafka.acl import AclError, AclsProvider

from .fakes import BOOTSTRAP, FakeAdmin, kafka_error, secret

READ_ORDERS = {
    "principal": "User:mm2",
    "resource": "TOPIC",
    "name": "orders",
    "pattern": "LITERAL",
    "operation": "READ",
}
DESCRIBE_ORDERS = {**READ_ORDERS, "operation": "DESCRIBE"}
GROUP = {"principal": "User:mm2", "resource": "GROUP", "name": "mm2-", "pattern": "PREFIXED", "operation": "READ"}
CLUSTER = {"principal": "User:mm2", "resource": "BROKER", "name": "kafka-cluster", "pattern": "LITERAL"}
DESCRIBE_CLUSTER = {**CLUSTER, "operation": "DESCRIBE"}


def props(*acls: dict[str, str], **over: Any) -> dict[str, Any]:
    return {
        "cluster": "primary",
        "bootstrap": BOOTSTRAP,
        "client": {"sasl.username": "admin", "sasl.password": "s3cret"},
        "acls": list(acls or (READ_ORDERS, DESCRIBE_ORDERS, GROUP)),
        "ephemeral": False,
        **over,
    }


def binding(a: dict[str, str], permission: AclPermissionType = AclPermissionType.ALLOW) -> AclBinding:
    return AclBinding(
        ResourceType[a["resource"]],
        a["name"],
        ResourcePatternType[a["pattern"]],
        a["principal"],
        "*",
        AclOperation[a["operation"]],
        permission,
    )


# Someone else's grant on the same cluster: the stack must never touch it.
FOREIGN = binding({**READ_ORDERS, "principal": "User:analytics"})


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeAdmin:
    admin = FakeAdmin()
    monkeypatch.setattr(acl, "admin_client", admin.factory)
    return admin


def on_cluster(fake: FakeAdmin, *acls: dict[str, str]) -> None:
    fake.acls |= {binding(a) for a in acls} | {FOREIGN}


def calls(fake: FakeAdmin, method: str) -> list[Any]:
    return [arg for m, arg in fake.calls if m == method]


# -- diff ----------------------------------------------------------------------------------------


def test_diff_ignores_the_order_of_bindings_and_secret_wrapping() -> None:
    news = props(DESCRIBE_ORDERS, GROUP, READ_ORDERS)
    news = {**news, "client": secret(news["client"]), "acls": secret(news["acls"])}
    result = AclsProvider().diff("primary/acls", props(), news)
    assert (result.changes, result.replaces) == (False, [])


@pytest.mark.parametrize(
    "news",
    [
        props(READ_ORDERS, DESCRIBE_ORDERS),
        props(READ_ORDERS, DESCRIBE_ORDERS, GROUP, DESCRIBE_CLUSTER),
        props(READ_ORDERS, DESCRIBE_ORDERS, {**GROUP, "pattern": "LITERAL"}),
        props(client={"sasl.username": "admin", "sasl.password": "rotated"}),
        props(ephemeral=True),
    ],
    ids=["binding-removed", "binding-added", "binding-changed", "client-rotated", "now-ephemeral"],
)
def test_diff_of_bindings_or_client_is_an_in_place_update(news: dict[str, Any]) -> None:
    result = AclsProvider().diff("primary/acls", props(), news)
    assert (result.changes, result.replaces) == (True, [])


def test_diff_of_bootstrap_replaces_deleting_first() -> None:
    result = AclsProvider().diff("primary/acls", props(), props(bootstrap="primary-1:9092"))
    assert (result.changes, result.replaces, result.delete_before_replace) == (True, ["bootstrap"], True)


# -- create --------------------------------------------------------------------------------------


def test_create_grants_every_binding_to_any_host(fake: FakeAdmin) -> None:
    result = AclsProvider().create(props())
    assert fake.acls == {binding(READ_ORDERS), binding(DESCRIBE_ORDERS), binding(GROUP)}
    assert {(b.host, b.permission_type) for b in fake.acls} == {("*", AclPermissionType.ALLOW)}
    assert (result.id, result.outs) == ("primary/acls", props())


def test_create_without_bindings_does_not_reach_the_cluster(fake: FakeAdmin) -> None:
    AclsProvider().create({**props(), "acls": []})
    assert (fake.clients, fake.calls) == ([], [])


def test_a_refused_create_is_an_acl_error_naming_cluster_and_binding(fake: FakeAdmin) -> None:
    fake.failures["create_acls"] = kafka_error(KafkaError.SECURITY_DISABLED)
    with pytest.raises(AclError) as info:
        AclsProvider().create(props(READ_ORDERS))
    message = str(info.value)
    assert f"ACLs on cluster 'primary' ({BOOTSTRAP})" in message
    assert "creating 1 binding(s) failed" in message
    assert str(binding(READ_ORDERS)) in message
    assert "SECURITY_DISABLED" in message


# -- update --------------------------------------------------------------------------------------


def test_update_deletes_only_removed_bindings_and_creates_only_new_ones(fake: FakeAdmin) -> None:
    on_cluster(fake, READ_ORDERS, DESCRIBE_ORDERS, GROUP)
    news = props(READ_ORDERS, GROUP, DESCRIBE_CLUSTER)
    assert AclsProvider().update("primary/acls", props(), news).outs == news
    assert calls(fake, "delete_acls") == [binding(DESCRIBE_ORDERS)]
    assert calls(fake, "create_acls") == [binding(DESCRIBE_CLUSTER)]
    assert fake.acls == {binding(READ_ORDERS), binding(GROUP), binding(DESCRIBE_CLUSTER), FOREIGN}


def test_update_uses_the_new_credentials(fake: FakeAdmin) -> None:
    news = props(READ_ORDERS, client={"sasl.username": "admin", "sasl.password": "rotated"})
    AclsProvider().update("primary/acls", props(), news)
    assert [c["client"]["sasl.password"] for c in fake.clients] == ["rotated"]


def test_update_with_the_same_bindings_does_not_reach_the_cluster(fake: FakeAdmin) -> None:
    news = props(client={"sasl.username": "admin", "sasl.password": "rotated"})
    AclsProvider().update("primary/acls", props(), news)
    assert fake.calls == []


def test_a_refused_delete_is_an_acl_error_naming_cluster_and_binding(fake: FakeAdmin) -> None:
    fake.failures["delete_acls"] = kafka_error(KafkaError.CLUSTER_AUTHORIZATION_FAILED)
    with pytest.raises(AclError, match=r"ACLs on cluster 'primary'.*deleting .*User:mm2.*CLUSTER_AUTHORIZATION"):
        AclsProvider().update("primary/acls", props(), props(READ_ORDERS))
    assert calls(fake, "create_acls") == []


# -- read ----------------------------------------------------------------------------------------


def test_read_of_bindings_all_present_reports_the_state_unchanged(fake: FakeAdmin) -> None:
    on_cluster(fake, READ_ORDERS, DESCRIBE_ORDERS, GROUP)
    result = AclsProvider().read("primary/acls", props())
    assert (result.id, result.outs) == ("primary/acls", props())


def test_read_drops_a_binding_deleted_by_hand_so_the_next_diff_shows_drift(fake: FakeAdmin) -> None:
    on_cluster(fake, DESCRIBE_ORDERS, GROUP)
    # A DENY with the same principal, resource and operation is not the stack's ALLOW binding.
    fake.acls.add(binding(READ_ORDERS, AclPermissionType.DENY))
    result = AclsProvider().read("primary/acls", props())
    assert (result.id, result.outs) == ("primary/acls", props(DESCRIBE_ORDERS, GROUP))
    assert AclsProvider().diff("primary/acls", result.outs, props()).changes is True


def test_read_of_a_cluster_binding_matches_on_the_broker_resource_type(fake: FakeAdmin) -> None:
    on_cluster(fake, DESCRIBE_CLUSTER)
    assert AclsProvider().read("primary/acls", props(DESCRIBE_CLUSTER)).outs == props(DESCRIBE_CLUSTER)


def test_read_leaves_the_state_as_it_was_when_the_cluster_does_not_answer(fake: FakeAdmin) -> None:
    fake.failures["describe_acls"] = kafka_error(KafkaError._TIMED_OUT)
    result = AclsProvider().read("primary/acls", props())
    assert (result.id, result.outs) == ("primary/acls", props())


# -- delete --------------------------------------------------------------------------------------


def test_delete_removes_the_stacks_bindings_and_nothing_else(fake: FakeAdmin) -> None:
    on_cluster(fake, READ_ORDERS, DESCRIBE_ORDERS, GROUP)
    AclsProvider().delete("primary/acls", props())
    assert fake.acls == {FOREIGN}


def test_delete_of_an_ephemeral_cluster_leaves_it_alone(fake: FakeAdmin) -> None:
    on_cluster(fake, READ_ORDERS, DESCRIBE_ORDERS, GROUP)
    AclsProvider().delete("primary/acls", props(ephemeral=True))
    assert (fake.clients, fake.calls) == ([], [])
    assert len(fake.acls) == 4
