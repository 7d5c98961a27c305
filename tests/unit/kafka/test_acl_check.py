"""components/kafka/acl_check.py and the source connector's preview check of an exactly-once
flow's grants on a target the stack does not grant on (a fake AdminClient, a fake Connect)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

from components.connect.provider import ConnectorProvider
from components.kafka import acl_check
from components.topology.security import Acl, AclPattern, AclResource
from components.topology.security import AclOperation as Operation
from tests.unit.connect.fakes import FakeConnect, FakeSleep
from tests.unit.connect.test_provider import props

from .fakes import BOOTSTRAP, FakeAdmin, kafka_error, secret

PREFIX = "mm2-mm2-mm2-primary-to-dr-source-"
NEEDS = [
    Acl("User:mm2", AclResource.TRANSACTIONAL_ID, PREFIX, AclPattern.PREFIXED, Operation.WRITE),
    Acl("User:mm2", AclResource.CLUSTER, "kafka-cluster", AclPattern.LITERAL, Operation.IDEMPOTENT_WRITE),
]
PASSWORD = "s3cret-password"


def binding(restype: ResourceType, name: str, op: AclOperation, pattern: Any = ResourcePatternType.LITERAL) -> Any:
    return AclBinding(restype, name, pattern, "User:mm2", "*", op, AclPermissionType.ALLOW)


CAN_LIST = binding(ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE)
TXN_WRITE = binding(ResourceType.TRANSACTIONAL_ID, PREFIX, AclOperation.WRITE, ResourcePatternType.PREFIXED)
IDEMPOTENT = binding(ResourceType.BROKER, "kafka-cluster", AclOperation.IDEMPOTENT_WRITE)


def access() -> dict[str, Any]:
    client = {"security.protocol": "SASL_PLAINTEXT", "sasl.username": "mm2", "sasl.password": PASSWORD}
    return {"flow": "primary->dr", "cluster": "dr", "bootstrap": BOOTSTRAP, "client": client,
            "acls": [a.as_dict() for a in NEEDS]}  # fmt: skip


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeAdmin:
    admin = FakeAdmin()
    monkeypatch.setattr(acl_check, "admin_client", admin.factory)
    return admin


def test_the_grants_the_listing_lacks_are_missing(fake: FakeAdmin) -> None:
    fake.acls = {CAN_LIST, TXN_WRITE}
    verdict = acl_check.transactional_access(access())
    assert verdict.missing == (NEEDS[1],) and verdict.unknown is None
    assert fake.clients[0]["bootstrap"] == BOOTSTRAP  # listed on the target, as the flow's user
    fake.acls = {CAN_LIST, TXN_WRITE, IDEMPOTENT}
    assert acl_check.transactional_access(access()) == acl_check.AccessVerdict()


def test_no_authorizer_allows_everything_and_a_refused_listing_cannot_tell(fake: FakeAdmin) -> None:
    fake.failures["describe_acls"] = kafka_error(KafkaError.SECURITY_DISABLED)
    assert acl_check.transactional_access(access()) == acl_check.AccessVerdict()
    fake.failures["describe_acls"] = kafka_error(KafkaError.CLUSTER_AUTHORIZATION_FAILED)
    assert acl_check.transactional_access(access()).unknown == "the flow's user may not describe the cluster's ACLs"
    fake.failures["describe_acls"] = kafka_error(KafkaError._TIMED_OUT)
    assert "listing its ACLs failed" in str(acl_check.transactional_access(access()).unknown)


def _check(fake_connect: FakeConnect, inputs: dict[str, Any]) -> Any:
    return ConnectorProvider(transport_factory=fake_connect.factory(), sleep=FakeSleep()).check({}, inputs)


def test_the_preview_fails_naming_what_is_missing_and_the_fix_without_the_password(fake: FakeAdmin) -> None:
    fake.acls = {CAN_LIST}
    result = _check(FakeConnect(), {**props(), "access_check": secret(access())})
    (failure,) = result.failures
    assert failure.property == ""  # the reason alone, not the whole input echoed
    reason = failure.reason
    assert "flow primary->dr is exactly-once, but on cluster 'dr'" in reason
    assert f"User:mm2 lacks: IDEMPOTENT_WRITE on the cluster; WRITE on TRANSACTIONAL_ID prefixed {PREFIX!r}" in reason
    assert "--operation IdempotentWrite --cluster" in reason and "or set exactlyOnce: false" in reason
    assert PASSWORD not in reason


def test_a_target_that_cannot_be_checked_is_a_warning_not_a_failure(
    fake: FakeAdmin, caplog: pytest.LogCaptureFixture
) -> None:
    fake.failures["describe_acls"] = kafka_error(KafkaError.CLUSTER_AUTHORIZATION_FAILED)
    with caplog.at_level(logging.WARNING, logger="dynamic_provider"):
        result = _check(FakeConnect(), {**props(), "access_check": access()})
    assert result.failures == []
    assert [r.getMessage() for r in caplog.records] == [
        "flow primary->dr: could not check the transactional ACLs exactly-once needs on cluster 'dr' (the flow's "
        "user may not describe the cluster's ACLs); if they are missing, its tasks fail at their first start."
    ]
