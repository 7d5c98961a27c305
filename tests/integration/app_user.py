"""An application's own SCRAM user and its grants on a cluster the stack runs, made through the
Admin API as the stack's admin, behind the stack's back as a team would: the stack neither owns
nor removes them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tests.integration.harness import kafka_conf

# (resource type, name, pattern type, operation): confluent-kafka's enum member names, e.g.
# ("TOPIC", "orders", "LITERAL", "WRITE") or ("GROUP", "stream-", "PREFIXED", "READ").
Grant = tuple[str, str, str, str]


def add_scram_user(
    outputs: dict[str, Any], alias: str, user: str, password: str, grants: Sequence[Grant], iterations: int = 8192
) -> None:
    """`user` with `password` (SCRAM-SHA-512) on cluster `alias`, allowed `grants` from any host."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient(kafka_conf(outputs, alias))
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, iterations)
    for future in admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion(user, info, password.encode())]
    ).values():
        future.result(30)
    bindings = [
        AclBinding(
            ResourceType[kind],
            name,
            ResourcePatternType[pattern],
            f"User:{user}",
            "*",
            AclOperation[operation],
            AclPermissionType.ALLOW,
        )
        for kind, name, pattern, operation in grants
    ]
    for future in admin.create_acls(bindings).values():
        future.result(30)
