"""Kafka Connect over REST: the client and the Connector dynamic resource (EFFECTS layer)."""

from __future__ import annotations

from .client import ConnectClient
from .errors import (
    ConfigProblem,
    ConnectError,
    ConnectorFailed,
    ConnectorOperationFailed,
    ConnectRequestError,
    ConnectTimeout,
    ConnectUnavailable,
)
from .provider import TYPE_TOKEN, Connector, ConnectorArgs, ConnectorProvider

__all__ = [
    "TYPE_TOKEN",
    "ConfigProblem",
    "ConnectClient",
    "ConnectError",
    "ConnectRequestError",
    "ConnectTimeout",
    "ConnectUnavailable",
    "Connector",
    "ConnectorArgs",
    "ConnectorFailed",
    "ConnectorOperationFailed",
    "ConnectorProvider",
]
