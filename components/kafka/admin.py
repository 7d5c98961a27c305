"""The stack's admin connection to a cluster, shared by the topic, user and ACL providers.

Built inside every provider call (an AdminClient cannot be pickled with a dynamic provider).
The settings carry the admin password: they arrive as a secret input and are never echoed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.rpc_values import plain

ADMIN_TIMEOUT_S = 30.0


class KafkaAdminError(RuntimeError):
    """Base of every error the Kafka Admin API providers (topics, ACLs, SCRAM users) raise."""


# Refresh only reads: a cluster that does not answer within this leaves the state as it was.
READ_TIMEOUT_S = 10.0


def admin_client(props: Mapping[str, Any], **settings: Any) -> Any:
    """An AdminClient for `props["bootstrap"]` authenticated with `props["client"]` (may be empty);
    `settings`: more librdkafka settings (callbacks)."""
    from confluent_kafka.admin import AdminClient  # only providers need it

    client = {str(k): str(v) for k, v in (plain(props.get("client")) or {}).items()}
    # log_level 0: librdkafka would otherwise print connection errors to the engine's stderr.
    return AdminClient(
        {"bootstrap.servers": props["bootstrap"], "log_level": 0, "socket.timeout.ms": 10000, **client, **settings}
    )


def every_acl_binding() -> Any:
    """A describe_acls filter that matches every binding of the cluster."""
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    # None matches any name, principal and host (librdkafka); confluent-kafka's stubs say str.
    anything: Any = None
    return AclBindingFilter(
        ResourceType.ANY, anything, ResourcePatternType.ANY, anything, anything, AclOperation.ANY, AclPermissionType.ANY
    )


@dataclass(frozen=True)
class Login:
    """How a login went: `accepted` True once a request answered, False when a broker refused the
    credentials, None when neither happened in time (the cluster not reached); `said`: librdkafka's
    last error event otherwise (a refused TLS handshake names the certificate there)."""

    accepted: bool | None
    said: str = ""


def login(props: Mapping[str, Any], bound_s: float = READ_TIMEOUT_S) -> Login:
    """Whether `props["client"]` logs in at `props["bootstrap"]` (librdkafka reports refused
    credentials as an error event within a second, where a request alone would only time out)."""
    from confluent_kafka import KafkaError, KafkaException

    events: list[Any] = []
    admin = admin_client(props, error_cb=events.append)
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        try:
            admin.list_topics(timeout=0.5)
            return Login(True)
        except KafkaException:
            admin.poll(0)  # serves the error events
        if any(e.code() == KafkaError._AUTHENTICATION for e in events):
            return Login(False, _said(events))
    return Login(None, _said(events))


def _said(events: list[Any]) -> str:
    return str(events[-1].str()) if events else ""


def logs_in(props: Mapping[str, Any], bound_s: float = READ_TIMEOUT_S) -> bool | None:
    """`login(...).accepted`: True, False (credentials refused) or None (not reached)."""
    return login(props, bound_s).accepted
