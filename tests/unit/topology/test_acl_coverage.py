"""components/topology/acl_coverage.py: which required grants a cluster's listed ACLs lack (pure)."""

from __future__ import annotations

import pytest

from components.topology import parse_topology
from components.topology.acl_coverage import Binding, describe_grant, grant_commands, missing_grants
from components.topology.security import (
    Acl,
    AclOperation,
    AclPattern,
    AclResource,
    unmanaged_exactly_once_grants,
)
from tests.unit.topology.helpers import external_target_config, secure_config

TXN = AclResource.TRANSACTIONAL_ID
PREFIX = "mm2-mm2-a-to-b-source-"
NEED_WRITE = Acl("User:mm2", TXN, PREFIX, AclPattern.PREFIXED, AclOperation.WRITE)
NEED_DESCRIBE = Acl("User:mm2", TXN, PREFIX, AclPattern.PREFIXED, AclOperation.DESCRIBE)
# What lets the user list ACLs at all (without it, only a super user could have listed them).
CAN_LIST = Binding("User:mm2", "BROKER", "kafka-cluster", "LITERAL", "DESCRIBE", "ALLOW")


def txn(name: str, pattern: str = "PREFIXED", op: str = "WRITE", permission: str = "ALLOW", who: str = "User:mm2"):
    return Binding(who, "TRANSACTIONAL_ID", name, pattern, op, permission)


@pytest.mark.parametrize(
    ("binding", "covered"),
    [
        (txn(PREFIX), True),
        (txn("mm2-"), True),  # a shorter prefix covers every id under the longer one
        (txn("mm2-mm2-a-to-b-source-0"), False),  # a longer prefix leaves ids uncovered
        (txn(PREFIX + "0", pattern="LITERAL"), False),  # one id is not all of them
        (txn("*", pattern="LITERAL"), True),
        (txn(PREFIX, op="ALL"), True),
        (txn(PREFIX, op="READ"), False),
        (txn(PREFIX, who="User:*"), True),
        (txn(PREFIX, who="User:other"), False),
        (Binding("User:mm2", "TOPIC", PREFIX, "PREFIXED", "WRITE", "ALLOW"), False),
    ],
)
def test_an_allow_covers_a_prefixed_need_only_for_every_name_under_it(binding: Binding, covered: bool) -> None:
    assert missing_grants([NEED_WRITE], [CAN_LIST, binding]) == ([] if covered else [NEED_WRITE])


def test_write_read_and_alter_imply_describe_and_alter_configs_implies_describe_configs() -> None:
    assert missing_grants([NEED_DESCRIBE], [CAN_LIST, txn(PREFIX, op="WRITE")]) == []
    topic = Acl("User:mm2", AclResource.TOPIC, "offsets", AclPattern.LITERAL, AclOperation.DESCRIBE_CONFIGS)
    alter = Binding("User:mm2", "TOPIC", "offsets", "LITERAL", "ALTER_CONFIGS", "ALLOW")
    assert missing_grants([topic], [CAN_LIST, alter]) == []
    # ...but a DESCRIBE does not imply WRITE.
    assert missing_grants([NEED_WRITE], [CAN_LIST, txn(PREFIX, op="DESCRIBE")]) == [NEED_WRITE]


@pytest.mark.parametrize(
    "deny",
    [
        txn(PREFIX + "3", pattern="LITERAL", permission="DENY"),  # one id inside the prefix
        txn(PREFIX + "1", permission="DENY"),  # a longer prefix inside it
        txn("mm2-", op="ALL", permission="DENY"),
        txn("*", pattern="LITERAL", permission="DENY", who="User:*"),
    ],
)
def test_a_deny_on_any_name_the_need_covers_wins_over_the_allow(deny: Binding) -> None:
    assert missing_grants([NEED_WRITE], [CAN_LIST, txn(PREFIX), deny]) == [NEED_WRITE]


def test_a_deny_elsewhere_or_for_another_operation_does_not_matter() -> None:
    others = [txn("other-", permission="DENY"), txn(PREFIX, op="READ", permission="DENY")]
    assert missing_grants([NEED_WRITE], [CAN_LIST, txn(PREFIX), *others]) == []


def test_a_user_that_listed_acls_without_a_binding_to_do_so_is_a_super_user() -> None:
    # Super users hold no ACLs; nobody else may describe them without DESCRIBE on the cluster.
    assert missing_grants([NEED_WRITE, NEED_DESCRIBE], []) == []
    assert missing_grants([NEED_WRITE, NEED_DESCRIBE], [CAN_LIST]) == [NEED_DESCRIBE, NEED_WRITE]


def test_the_fix_lists_kafka_acls_lines_per_resource_and_the_grants_in_words() -> None:
    idempotent = Acl(
        "User:mm2", AclResource.CLUSTER, "kafka-cluster", AclPattern.LITERAL, AclOperation.IDEMPOTENT_WRITE
    )
    assert grant_commands([NEED_WRITE, NEED_DESCRIBE, idempotent]) == [
        "kafka-acls.sh --bootstrap-server <target> --add --allow-principal User:mm2 --operation IdempotentWrite "
        "--cluster",
        "kafka-acls.sh --bootstrap-server <target> --add --allow-principal User:mm2 --operation Describe "
        f"--operation Write --transactional-id {PREFIX} --resource-pattern-type prefixed",
    ]
    assert describe_grant(NEED_WRITE) == f"WRITE on TRANSACTIONAL_ID prefixed {PREFIX!r}"
    assert describe_grant(idempotent) == "IDEMPOTENT_WRITE on the cluster"


def test_an_exactly_once_flow_into_a_target_the_stack_does_not_grant_on_is_checked_for_kip_618_grants() -> None:
    topology = parse_topology(external_target_config())
    grants = unmanaged_exactly_once_grants(topology, topology.flows[0])
    assert {a.principal for a in grants} == {"User:replicator"}
    assert {(a.resource, a.operation) for a in grants if a.resource is TXN} == {
        (TXN, AclOperation.WRITE),
        (TXN, AclOperation.DESCRIBE),
    }
    assert sorted({a.name for a in grants if a.resource is TXN}) == [
        f"mm2-mm2-mm2-primary-to-dr-{role}-"
        for role in ("checkpoint", "heartbeat", "source")  # <group.id>-<name>-
    ]
    assert AclOperation.IDEMPOTENT_WRITE in {a.operation for a in grants}


def test_nothing_to_check_at_least_once_or_where_the_stack_grants_itself() -> None:
    topology = parse_topology(external_target_config(exactly_once=False))
    assert unmanaged_exactly_once_grants(topology, topology.flows[0]) == ()
    managed = secure_config()
    managed["flows"]["primary->dr"]["exactlyOnce"] = True
    topology = parse_topology(managed)
    assert unmanaged_exactly_once_grants(topology, topology.flows[0]) == ()
