"""The stack's admin connection to a cluster, shared by the topic, user and ACL providers.

Built inside every provider call (an AdminClient cannot be pickled with a dynamic provider).
The settings carry the admin password: they arrive as a secret input and are never echoed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi.runtime import rpc

ADMIN_TIMEOUT_S = 30.0
# Refresh only reads: a cluster that does not answer within this leaves the state as it was.
READ_TIMEOUT_S = 10.0


def plain(value: Any) -> Any:
    """`value` with Pulumi's secret wrappers removed at any depth."""
    value = rpc.unwrap_rpc_secret(value)
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def admin_client(props: Mapping[str, Any]) -> Any:
    """An AdminClient for `props["bootstrap"]` authenticated with `props["client"]` (may be empty)."""
    from confluent_kafka.admin import AdminClient  # only providers need it

    client = {str(k): str(v) for k, v in (plain(props.get("client")) or {}).items()}
    # log_level 0: librdkafka would otherwise print connection errors to the engine's stderr.
    return AdminClient({"bootstrap.servers": props["bootstrap"], "log_level": 0, "socket.timeout.ms": 10000, **client})
