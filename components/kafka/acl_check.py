"""Preview check: does a target cluster the stack does not grant ACLs on already hold the
transactional grants an exactly-once flow needs? (The judging is pure:
components/topology/acl_coverage.py; this module only lists the cluster's ACLs.)

Run from the source connector's `check` (components/connect/provider.py) with the target's
bootstrap and the flow's MM2 user's client settings (a secret input, never echoed). Three
outcomes: the grants that are missing (the preview fails naming them and the kafka-acls.sh lines
that add them), none, or "cannot tell" with the reason (the cluster does not answer, or the user
may not describe ACLs): then the preview says so and goes on, and a missing grant shows at the
tasks' first start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.kafka.admin import READ_TIMEOUT_S, admin_client, every_acl_binding
from components.rpc_values import plain
from components.topology.acl_coverage import Binding, describe_grant, grant_commands, missing_grants
from components.topology.security import Acl, AclOperation, AclPattern, AclResource

# librdkafka's error names for "no authorizer" and "may not describe ACLs".
_NO_AUTHORIZER = "SECURITY_DISABLED"
_NOT_ALLOWED = "CLUSTER_AUTHORIZATION_FAILED"


@dataclass(frozen=True)
class AccessVerdict:
    """`missing`: grants nothing covers (empty: all there). `unknown`: why it could not tell."""

    missing: tuple[Acl, ...] = ()
    unknown: str | None = None


def listed_bindings(props: Mapping[str, Any]) -> list[Binding] | str | None:
    """Every ACL binding of the cluster at `props["bootstrap"]`, listed as `props["client"]`;
    None when it runs no authorizer (everything is allowed); a string: why it could not list."""
    from confluent_kafka import KafkaError, KafkaException

    every = every_acl_binding()
    admin = admin_client(props)  # held until the answer is in: a collected client abandons its requests
    try:
        listed = admin.describe_acls(every, request_timeout=READ_TIMEOUT_S).result()
    except KafkaException as exc:
        error: Any = exc.args[0] if exc.args else None
        name = error.name() if isinstance(error, KafkaError) else ""
        if name == _NO_AUTHORIZER:
            return None
        if name == _NOT_ALLOWED:
            return "the flow's user may not describe the cluster's ACLs"
        return f"listing its ACLs failed: {error.str() if isinstance(error, KafkaError) else exc}"
    return [
        Binding(
            principal=b.principal,
            resource=b.restype.name,
            name=b.name,
            pattern=b.resource_pattern_type.name,
            operation=b.operation.name,
            permission=b.permission_type.name,
        )
        for b in listed
    ]


def transactional_access(access: Mapping[str, Any]) -> AccessVerdict:
    """`access`: {bootstrap, client, acls: [Acl.as_dict()]} as the source connector carries it."""
    access = plain(access)
    required = [_acl(a) for a in access.get("acls") or []]
    if not required:
        return AccessVerdict()
    listed = listed_bindings(access)
    if listed is None:
        return AccessVerdict()
    if isinstance(listed, str):
        return AccessVerdict(unknown=listed)
    return AccessVerdict(missing=tuple(missing_grants(required, listed)))


def missing_access_text(connector: str, flow: str, cluster: str, missing: tuple[Acl, ...]) -> str:
    """The preview failure: what is missing, on which cluster, and the two fixes."""
    principal = missing[0].principal
    listed = "; ".join(describe_grant(need) for need in missing)
    commands = "\n".join(f"  {line}" for line in grant_commands(missing))
    return (
        f"connector {connector!r}: flow {flow} is exactly-once, but on cluster {cluster!r} (its ACLs are not "
        f"managed by this stack) {principal} lacks: {listed}. Its tasks would fail at their first start "
        f"(TransactionalIdAuthorizationException). Fix: grant them on {cluster}, for example\n{commands}\n"
        "or set exactlyOnce: false on the flow."
    )


def unknown_access_text(flow: str, cluster: str, reason: str) -> str:
    return (
        f"flow {flow}: could not check the transactional ACLs exactly-once needs on cluster {cluster!r} "
        f"({reason}); if they are missing, its tasks fail at their first start."
    )


def _acl(entry: Mapping[str, Any]) -> Acl:
    return Acl(
        principal=str(entry["principal"]),
        resource=AclResource(str(entry["resource"])),
        name=str(entry["name"]),
        pattern=AclPattern(str(entry["pattern"])),
        operation=AclOperation(str(entry["operation"])),
    )
