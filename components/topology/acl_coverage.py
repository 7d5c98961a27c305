"""Whether a cluster's ACLs already grant what a principal needs: Kafka's authorizer rules, pure.

The stack creates the ACLs of the clusters it manages (components/topology/security.py). On the
others (`external`, or a Kubernetes/Docker cluster whose authorizer the stack does not feed) an
exactly-once flow needs its transactional grants to exist already, or its tasks fail at their
first start. The preview reads the target's ACLs (components/kafka/acl_check.py) and asks this
module which required grants nothing covers.

Kafka's StandardAuthorizer rules, as used here:
- a binding applies to the principal itself or to `User:*`; hosts are not judged (the workers'
  addresses are not known at preview);
- ALLOW with operation ALL grants every operation; READ, WRITE, DELETE or ALTER also grant
  DESCRIBE, and ALTER_CONFIGS grants DESCRIBE_CONFIGS;
- a LITERAL `*` binding matches every name, a PREFIXED one every name it starts;
- a DENY that matches the operation (or ALL) on any name the requirement covers wins over any ALLOW.

Super users hold no ACLs. A principal that may describe ACLs holds DESCRIBE on the cluster: by a
binding the listing shows, or as a super user. So when the listing shows no binding of the
principal (or `User:*`) on the cluster, it is a super user and needs nothing (`is_super_user`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from components.topology.security import CLUSTER_RESOURCE_NAME, Acl, AclOperation, AclPattern, AclResource

ALLOW = "ALLOW"
DENY = "DENY"
ALL = "ALL"
ANY_USER = "User:*"
# ALLOW on the key operation also grants the operations listed (Kafka's implied operations).
_IMPLIED_BY = {
    AclOperation.DESCRIBE.value: {"READ", "WRITE", "DELETE", "ALTER"},
    AclOperation.DESCRIBE_CONFIGS.value: {"ALTER_CONFIGS"},
}


@dataclass(frozen=True)
class Binding:
    """One ACL binding as a cluster lists it (`describe_acls`), in Kafka's enum names."""

    principal: str
    resource: str  # TOPIC, GROUP, BROKER (the cluster), TRANSACTIONAL_ID
    name: str
    pattern: str  # LITERAL, PREFIXED
    operation: str  # READ, WRITE, ..., ALL
    permission: str  # ALLOW, DENY


def _for(binding: Binding, principal: str, resource: str) -> bool:
    return binding.principal in (principal, ANY_USER) and binding.resource == resource


def _covers(binding: Binding, need: Acl) -> bool:
    """Every name `need` stands for matches `binding`'s resource pattern."""
    if binding.pattern == AclPattern.LITERAL.value and binding.name == "*":
        return True
    if need.pattern is AclPattern.LITERAL:
        if binding.pattern == AclPattern.LITERAL.value:
            return binding.name == need.name
        return binding.pattern == AclPattern.PREFIXED.value and need.name.startswith(binding.name)
    return binding.pattern == AclPattern.PREFIXED.value and need.name.startswith(binding.name)


def _overlaps(binding: Binding, need: Acl) -> bool:
    """Some name `need` stands for matches `binding`'s resource pattern."""
    if _covers(binding, need):
        return True
    if need.pattern is AclPattern.PREFIXED:
        return binding.name.startswith(need.name)  # a literal or a longer prefix inside it
    return False


def _grants(binding: Binding, operation: str) -> bool:
    return binding.operation in (operation, ALL) or binding.operation in _IMPLIED_BY.get(operation, set())


def _denies(binding: Binding, operation: str) -> bool:
    return binding.operation in (operation, ALL)


def is_granted(need: Acl, bindings: Iterable[Binding]) -> bool:
    """`need` (an ALLOW the principal requires) holds for every name it covers."""
    relevant = [b for b in bindings if _for(b, need.principal, need.resource.value)]
    op = need.operation.value
    if any(b.permission == DENY and _denies(b, op) and _overlaps(b, need) for b in relevant):
        return False
    return any(b.permission == ALLOW and _grants(b, op) and _covers(b, need) for b in relevant)


def is_super_user(principal: str, bindings: Iterable[Binding]) -> bool:
    """The listing came back, yet no binding gives `principal` DESCRIBE on the cluster: only a
    super user may then have listed it (see the module docstring)."""
    cluster = Acl(principal, AclResource.CLUSTER, CLUSTER_RESOURCE_NAME, AclPattern.LITERAL, AclOperation.DESCRIBE)
    return not is_granted(cluster, bindings)


def missing_grants(required: Iterable[Acl], bindings: Iterable[Binding]) -> list[Acl]:
    """The required grants the listed bindings do not give, sorted; none for a super user."""
    listed = list(bindings)
    needs = sorted(set(required))
    principals = {need.principal for need in needs}
    supers = {p for p in principals if is_super_user(p, listed)}
    return [need for need in needs if need.principal not in supers and not is_granted(need, listed)]


def _acls_option(need: Acl) -> str:
    if need.resource is AclResource.CLUSTER:
        return "--cluster"
    option = {
        AclResource.TOPIC: "--topic",
        AclResource.GROUP: "--group",
        AclResource.TRANSACTIONAL_ID: "--transactional-id",
    }[need.resource]
    pattern = " --resource-pattern-type prefixed" if need.pattern is AclPattern.PREFIXED else ""
    return f"{option} {need.name}{pattern}"


def _camel(operation: str) -> str:
    """IDEMPOTENT_WRITE -> IdempotentWrite, as kafka-acls.sh's --operation spells it."""
    return "".join(word.capitalize() for word in operation.split("_"))


def grant_commands(missing: Iterable[Acl]) -> list[str]:
    """`kafka-acls.sh` lines that add the missing grants, one per principal and resource."""
    by_resource: dict[tuple[str, str], list[str]] = {}
    for need in sorted(missing):
        by_resource.setdefault((need.principal, _acls_option(need)), []).append(need.operation.value)
    lines = []
    for (principal, option), operations in by_resource.items():
        ops = " ".join(f"--operation {_camel(op)}" for op in operations)
        lines.append(f"kafka-acls.sh --bootstrap-server <target> --add --allow-principal {principal} {ops} {option}")
    return lines


def describe_grant(need: Acl) -> str:
    """e.g. "WRITE on TRANSACTIONAL_ID prefixed 'mm2-mm2-a-to-b-source-'"."""
    resource = "the cluster" if need.resource is AclResource.CLUSTER else f"{need.resource.value}"
    if need.resource is AclResource.CLUSTER:
        return f"{need.operation.value} on {resource}"
    return f"{need.operation.value} on {resource} {need.pattern.value.lower()} {need.name!r}"
