"""ACL bindings of one cluster (type ``pulumi-python:dynamic/kafka:Acls``) over the Admin API.

The full set the stack wants on the cluster (see `components/topology/security.py`); an update
deletes the bindings no longer wanted and creates the new ones, nothing else is touched.
Refresh reads the bindings back: one deleted behind the stack's back drops out of the state, so
the next preview shows the drift and `up` creates it again. Bindings are plain data
(principals, resources, operations): no secret.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider, UpdateResult

from components.kafka.admin import ADMIN_TIMEOUT_S, READ_TIMEOUT_S, KafkaAdminError, admin_client, every_acl_binding
from components.rpc_values import plain


class AclError(KafkaAdminError):
    """ACL bindings could not be created or deleted."""


def _key(acl: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(acl[k]) for k in ("principal", "resource", "name", "pattern", "operation"))


def _acls(props: Mapping[str, Any]) -> dict[tuple[str, ...], Mapping[str, Any]]:
    return {_key(a): a for a in plain(props.get("acls")) or []}


def _binding(acl: Mapping[str, Any]) -> Any:
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    return AclBinding(
        ResourceType[acl["resource"]],
        acl["name"],
        ResourcePatternType[acl["pattern"]],
        acl["principal"],
        "*",
        AclOperation[acl["operation"]],
        AclPermissionType.ALLOW,
    )


def _exact_filter(acl: Mapping[str, Any]) -> Any:
    """The binding as the filter `delete_acls` takes (the real client refuses a plain
    AclBinding): every field set, so it matches that one binding and nothing else."""
    from confluent_kafka.admin import AclBindingFilter

    b = _binding(acl)
    return AclBindingFilter(
        b.restype, b.name, b.resource_pattern_type, b.principal, b.host, b.operation, b.permission_type
    )


def _where(props: Mapping[str, Any]) -> str:
    return f"ACLs on cluster {props.get('cluster')!r} ({props['bootstrap']})"


def _create(props: Mapping[str, Any], acls: list[Mapping[str, Any]]) -> None:
    if not acls:
        return
    admin = admin_client(props)
    failed = []
    for binding, future in admin.create_acls([_binding(a) for a in acls], request_timeout=ADMIN_TIMEOUT_S).items():
        try:
            future.result()
        except Exception as exc:
            failed.append(f"{binding}: {exc}")
    if failed:
        raise AclError(
            f"{_where(props)}: creating {len(failed)} binding(s) failed: {'; '.join(failed[:5])}. "
            "Fix: check that the brokers run an authorizer (StandardAuthorizer) and the stack's admin user "
            "is a super user, then run `pulumi up` again."
        )


def _delete(props: Mapping[str, Any], acls: list[Mapping[str, Any]]) -> None:
    if not acls:
        return
    admin = admin_client(props)
    for binding, future in admin.delete_acls([_exact_filter(a) for a in acls], request_timeout=ADMIN_TIMEOUT_S).items():
        try:
            future.result()
        except Exception as exc:
            raise AclError(f"{_where(props)}: deleting {binding} failed: {exc}. Fix: run `pulumi up` again.") from exc


def _live_keys(props: Mapping[str, Any]) -> set[tuple[str, ...]] | None:
    """The ALLOW bindings on the cluster as `_key` tuples, or None when it cannot be asked."""
    every = every_acl_binding()
    admin = admin_client(props)
    try:
        bindings = admin.describe_acls(every, request_timeout=READ_TIMEOUT_S).result()
    except Exception:  # unreachable or restarting: a refresh must not fail on it
        return None
    return {
        (b.principal, b.restype.name, b.name, b.resource_pattern_type.name, b.operation.name)
        for b in bindings
        if b.permission_type.name == "ALLOW"
    }


class AclsProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        _create(props, list(_acls(props).values()))
        return CreateResult(id_=f"{props.get('cluster', '')}/acls", outs=props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = ["bootstrap"] if olds.get("bootstrap") != news.get("bootstrap") else []
        changed = (
            bool(replaces)
            or set(_acls(olds)) != set(_acls(news))
            or plain(olds.get("client")) != plain(news.get("client"))
            # Where the cluster runs decides whether delete must remove these (see delete): keep it current.
            or any(olds.get(k) != news.get(k) for k in ("cluster", "ephemeral"))
        )
        return DiffResult(changes=changed, replaces=replaces, delete_before_replace=True)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        old, new = _acls(olds), _acls(news)
        _delete(news, [a for k, a in old.items() if k not in new])
        _create(news, [a for k, a in new.items() if k not in old])
        return UpdateResult(outs=news)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        live = _live_keys(props)
        if live is None:
            return ReadResult(id_=id_, outs=props)
        present = [a for k, a in _acls(props).items() if k in live]
        return ReadResult(id_=id_, outs={**props, "acls": present})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        if props.get("ephemeral"):
            return  # a local cluster: its ACLs go with its data directory, deleted next
        _delete(props, list(_acls(props).values()))


class Acls(Resource, module="kafka", name="Acls"):
    """Every ALLOW binding the stack wants on one cluster."""

    def __init__(
        self,
        resource_name: str,
        *,
        cluster: str,
        bootstrap: pulumi.Input[str],
        client: pulumi.Input[Mapping[str, str]],
        acls: list[dict[str, str]],
        ephemeral: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        opts = pulumi.ResourceOptions.merge(pulumi.ResourceOptions(additional_secret_outputs=["client"]), opts)
        super().__init__(
            AclsProvider(),
            resource_name,
            {
                "cluster": cluster,
                "bootstrap": bootstrap,
                "client": pulumi.Output.secret(client),
                "acls": acls,
                "ephemeral": ephemeral,
            },
            opts,
        )
