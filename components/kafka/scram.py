"""SCRAM users of one cluster (type ``pulumi-python:dynamic/kafka:ScramUsers``) over the Admin API.

Created and changed with AlterUserScramCredentials: an upsert replaces the user's credential at
once, so a rotated password is accepted by every broker as soon as the update returns (open
connections stay authenticated until they reconnect). `users` (name -> password) is a secret
input and output; errors name users, never passwords.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider, UpdateResult

from components.kafka.admin import ADMIN_TIMEOUT_S, READ_TIMEOUT_S, KafkaAdminError, admin_client, plain

ITERATIONS = 8192  # Kafka's minimum is 4096; 8192 is what kafka-configs uses by default


class ScramError(KafkaAdminError):
    """SCRAM users could not be created, changed or deleted."""


def _users(props: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in (plain(props.get("users")) or {}).items()}


def _mechanism(props: Mapping[str, Any]) -> Any:
    from confluent_kafka.admin import ScramMechanism

    return {"SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256, "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512}[
        props["mechanism"]
    ]


# Right after a roll the controller may have just moved: an upsert can time out for a while
# (seen on the Kubernetes lane once the active controller restarted). Upserts and deletions are
# idempotent, so those are sent again until this bound.
RETRY_S = 60.0
RETRY_PAUSE_S = 2.0
_RETRIABLE = ("_TIMED_OUT", "REQUEST_TIMED_OUT", "NOT_CONTROLLER", "_TRANSPORT")


def _retriable(exc: Exception) -> bool:
    error: Any = exc.args[0] if exc.args else None
    if callable(getattr(error, "retriable", None)) and error.retriable():
        return True
    return any(code in str(exc).upper() for code in _RETRIABLE)


def _attempt(
    admin: Any, props: Mapping[str, Any], upsert: Mapping[str, str], delete: list[str]
) -> dict[str, Exception]:
    """One AlterUserScramCredentials of `upsert` and `delete`: the users it failed for, with why."""
    from confluent_kafka.admin import ScramCredentialInfo, UserScramCredentialDeletion, UserScramCredentialUpsertion

    mechanism = _mechanism(props)
    changes: list[Any] = [
        UserScramCredentialUpsertion(name, ScramCredentialInfo(mechanism, ITERATIONS), password.encode())
        for name, password in sorted(upsert.items())
    ]
    changes += [UserScramCredentialDeletion(name, mechanism) for name in sorted(delete)]
    failed: dict[str, Exception] = {}
    for name, future in admin.alter_user_scram_credentials(changes, request_timeout=ADMIN_TIMEOUT_S).items():
        try:
            future.result()
        except Exception as exc:  # KafkaException: carries the broker's error, never the password
            if name in delete and "RESOURCE_NOT_FOUND" in str(exc).upper():
                continue
            failed[name] = exc
    return failed


def _alter(
    props: Mapping[str, Any],
    upsert: Mapping[str, str],
    delete: list[str],
    pause: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    if not upsert and not delete:
        return
    admin = admin_client(props)
    deadline = clock() + RETRY_S
    failed = _attempt(admin, props, upsert, delete)
    while failed and all(_retriable(exc) for exc in failed.values()) and clock() < deadline:
        pause(RETRY_PAUSE_S)
        again = {n: p for n, p in upsert.items() if n in failed}
        failed = _attempt(admin, props, again, [n for n in delete if n in failed])
    if failed:
        raise ScramError(
            f"SCRAM users on cluster {props.get('cluster')!r} ({props['bootstrap']}): "
            + "; ".join(f"{name}: {exc}" for name, exc in failed.items())
            + ". Fix: check that the brokers are up and that the stack's admin user is a super user "
            "(super.users), then run `pulumi up` again."
        )


def set_passwords(props: Mapping[str, Any], users: Mapping[str, str]) -> None:
    """Give `users` (name -> password) their SCRAM credential of `props["mechanism"]` on the cluster at
    `props["bootstrap"]`, logged in with `props["client"]`: created or replaced, retried as above."""
    _alter(props, users, [])


def _live_users(props: Mapping[str, Any]) -> set[str] | None:
    """Which of the stack's users have a credential of its mechanism on the cluster, or None
    when the cluster cannot be asked. Passwords cannot be compared: brokers keep salted hashes."""
    names = sorted(_users(props))
    if not names:
        return set()
    mechanism = _mechanism(props)
    admin = admin_client(props)
    try:
        futures = admin.describe_user_scram_credentials(names, request_timeout=READ_TIMEOUT_S)
    except Exception:
        return None
    live = set()
    for name, future in futures.items():
        try:
            description = future.result()
        except Exception as exc:
            if "RESOURCE_NOT_FOUND" in str(exc).upper():
                continue  # the user is gone
            return None  # the cluster did not answer: say nothing about the users
        if any(info.mechanism == mechanism for info in description.scram_credential_infos):
            live.add(name)
    return live


class ScramUsersProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        _alter(props, _users(props), [])
        return CreateResult(id_=f"{props.get('cluster', '')}/scram-users", outs=props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [k for k in ("bootstrap", "mechanism") if olds.get(k) != news.get(k)]
        changed = (
            bool(replaces)
            or _users(olds) != _users(news)
            or plain(olds.get("client")) != plain(news.get("client"))
            # Where the cluster runs decides whether delete must remove these (see delete): keep it current.
            or any(olds.get(k) != news.get(k) for k in ("cluster", "ephemeral"))
        )
        return DiffResult(changes=changed, replaces=replaces, delete_before_replace=True)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        old, new = _users(olds), _users(news)
        changed = {name: pw for name, pw in new.items() if old.get(name) != pw}
        _alter(news, changed, [name for name in old if name not in new])
        return UpdateResult(outs=news)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """A user deleted behind the stack's back drops out of the state, so the next preview
        shows the drift and `up` creates it again with its password."""
        live = _live_users(props)
        if live is None:
            return ReadResult(id_=id_, outs=props)
        present = {name: pw for name, pw in _users(props).items() if name in live}
        return ReadResult(id_=id_, outs={**props, "users": present})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        if props.get("ephemeral"):
            return  # a local cluster: its users go with its data directory, deleted next
        _alter(props, {}, list(_users(props)))


class ScramUsers(Resource, module="kafka", name="ScramUsers"):
    """The SCRAM users (name -> password, secret) of one cluster."""

    def __init__(
        self,
        resource_name: str,
        *,
        cluster: str,
        bootstrap: pulumi.Input[str],
        client: pulumi.Input[Mapping[str, str]],
        mechanism: str,
        users: pulumi.Input[Mapping[str, str]],
        ephemeral: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        opts = pulumi.ResourceOptions.merge(pulumi.ResourceOptions(additional_secret_outputs=["users", "client"]), opts)
        super().__init__(
            ScramUsersProvider(),
            resource_name,
            {
                "cluster": cluster,
                "bootstrap": bootstrap,
                "client": pulumi.Output.secret(client),
                "mechanism": mechanism,
                "users": pulumi.Output.secret(users),
                "ephemeral": ephemeral,
            },
            opts,
        )
