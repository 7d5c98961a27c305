"""The inputs of one Connector, parsed and checked: what the provider's operations work from.

Pure: no pulumi calls and no I/O. `ConnectorInputs` is the known, plain form of a connector's
properties (engine values unwrapped through `components.rpc_values`); `input_failures` is the
local check run before Connect is asked anything. Not to be confused with
`components.topology.connectors.ConnectorSpec`, which says what a flow's connector is.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pulumi.dynamic import CheckFailure

from components.rpc_values import is_unknown, plain

from .errors import ConnectorOperationFailed

__all__ = [
    "DEFAULT_STATE",
    "DEFAULT_TIMEOUT_S",
    "DESIRED_STATES",
    "ConnectorInputs",
    "input_failures",
    "normalize_state",
    "state_outputs",
]

DEFAULT_TIMEOUT_S = 180
# The states a connector can be asked to be in, as Connect's REST API names them.
DESIRED_STATES = ("RUNNING", "PAUSED", "STOPPED")
DEFAULT_STATE = "RUNNING"

# Connectors that are healthy with zero tasks: MM2's checkpoint connector creates tasks only
# for consumer groups that exist on the source, and a fresh source has none.
_MAY_RUN_WITHOUT_TASKS = frozenset({"MirrorCheckpointConnector"})


@dataclass(frozen=True)
class ConnectorInputs:
    """The known, validated inputs of one connector, as the provider's operations use them."""

    connect_url: str
    name: str
    config: Mapping[str, str]
    auth: Mapping[str, str] | None = None
    timeout_seconds: int = DEFAULT_TIMEOUT_S
    desired_state: str = DEFAULT_STATE
    ca_pem: str | None = None
    # The group's other workers: where a call goes when connect_url does not answer.
    other_urls: tuple[str, ...] = ()
    # False: create and update ask for desired_state and do not wait for it (a flow whose
    # source cluster is lost: its connector's stop waits on that cluster, up to a minute).
    wait_for_state: bool = True

    @classmethod
    def from_props(cls, props: Mapping[str, Any], id_: str = "") -> ConnectorInputs:
        url = plain(props.get("connect_url"))
        if not isinstance(url, str) or not url:
            raise ConnectorOperationFailed(
                f"connector {id_ or props.get('name')!r} has no connect_url in its state: "
                "Connector resources cannot be imported; declare them in the program instead"
            )
        config = plain(props.get("config")) or {}
        auth = plain(props.get("auth"))
        return cls(
            connect_url=url,
            name=str(plain(props.get("name")) or id_),
            config={str(k): str(v) for k, v in config.items()},
            auth={str(k): str(v) for k, v in auth.items()} if auth else None,
            timeout_seconds=int(plain(props.get("timeout_seconds")) or DEFAULT_TIMEOUT_S),
            desired_state=normalize_state(props.get("desired_state")),
            ca_pem=plain(props.get("ca_pem")) or None,
            other_urls=tuple(str(u) for u in plain(props.get("other_urls")) or ()),
            wait_for_state=plain(props.get("wait_for_state")) is not False,
        )

    @property
    def credentials(self) -> tuple[str, str] | None:
        if not self.auth:
            return None
        return (self.auth.get("username", ""), self.auth.get("password", ""))

    @property
    def min_tasks(self) -> int:
        connector_class = self.config.get("connector.class", "")
        return 0 if connector_class.rsplit(".", 1)[-1] in _MAY_RUN_WITHOUT_TASKS else 1

    def inputs(self) -> dict[str, Any]:
        props: dict[str, Any] = {
            "connect_url": self.connect_url,
            "name": self.name,
            "config": dict(self.config),
            "timeout_seconds": self.timeout_seconds,
            "desired_state": self.desired_state,
        }
        if self.auth is not None:
            props["auth"] = dict(self.auth)
        if self.ca_pem is not None:
            props["ca_pem"] = self.ca_pem
        if self.other_urls:
            props["other_urls"] = list(self.other_urls)
        if not self.wait_for_state:
            props["wait_for_state"] = False
        return props

    def outputs(self, status: Mapping[str, Any] | None) -> dict[str, Any]:
        return {**self.inputs(), **state_outputs(status)}


def state_outputs(status: Mapping[str, Any] | None) -> dict[str, Any]:
    if status is None:
        return {"state": "UNKNOWN", "tasks": []}
    return {
        "state": str((status.get("connector") or {}).get("state", "UNKNOWN")),
        "tasks": [
            {
                "id": int(task.get("id", -1)),
                "state": str(task.get("state", "UNKNOWN")),
                "worker_id": str(task.get("worker_id", "")),
            }
            for task in status.get("tasks") or []
        ],
    }


def input_failures(inputs: Mapping[str, Any]) -> list[CheckFailure]:
    """Local checks of the inputs; unknown (preview) values are skipped."""
    failures: list[CheckFailure] = []

    url = inputs.get("connect_url")
    if not is_unknown(url):
        split = urlsplit(url) if isinstance(url, str) else None
        if split is None or split.scheme not in ("http", "https") or not split.netloc:
            failures.append(
                CheckFailure(
                    "connect_url",
                    f"connect_url must be an http:// or https:// URL of the Connect REST listener, got {url!r}",
                )
            )

    name = inputs.get("name")
    if not is_unknown(name) and not _valid_name(name):
        failures.append(
            CheckFailure(
                "name",
                f"name must be a non-empty string without control characters or surrounding spaces, got {name!r}",
            )
        )

    config = plain(inputs.get("config"))
    if not is_unknown(config):
        failures.extend(_config_failures(config, name))

    auth = plain(inputs.get("auth"))
    if auth is not None and not is_unknown(auth) and not _valid_auth(auth):
        # Never echo the value: it holds the password.
        failures.append(CheckFailure("auth", "auth must be a map with non-empty username and password"))

    state = plain(inputs.get("desired_state"))
    if not is_unknown(state) and state is not None and normalize_state(state) not in DESIRED_STATES:
        failures.append(
            CheckFailure(
                "desired_state",
                f"desired_state must be one of {', '.join(DESIRED_STATES)}, got {state!r}",
            )
        )

    timeout = plain(inputs.get("timeout_seconds"))
    if not is_unknown(timeout) and not (
        isinstance(timeout, (int, float))
        and not isinstance(timeout, bool)
        and timeout > 0
        and float(timeout).is_integer()
    ):
        failures.append(CheckFailure("timeout_seconds", f"timeout_seconds must be a positive integer, got {timeout!r}"))
    return failures


def _config_failures(config: Any, name: Any) -> list[CheckFailure]:
    if not isinstance(config, Mapping):
        return [CheckFailure("config", "config must be a map of string to string")]
    failures = [
        CheckFailure(
            "config",
            f"config key {key!r} must be a string, got {type(value).__name__}; "
            "Connect config values are strings (quote numbers and booleans)",
        )
        for key, value in config.items()
        if not is_unknown(value) and not isinstance(value, str)
    ]
    connector_class = config.get("connector.class")
    if connector_class is None or connector_class == "":
        failures.append(CheckFailure("config", "config must set connector.class"))
    if "name" in config and not is_unknown(config["name"]) and not is_unknown(name) and config["name"] != name:
        failures.append(
            CheckFailure(
                "config",
                f"config key 'name' is {config['name']!r} but the connector is named {name!r}; "
                "drop it from config (the name input sets it)",
            )
        )
    return failures


def normalize_state(value: Any) -> str:
    """RUNNING for a missing value (states written before desired_state existed)."""
    value = plain(value)
    return str(value).strip().upper() if value else DEFAULT_STATE


def _valid_auth(auth: Any) -> bool:
    return isinstance(auth, Mapping) and all(
        is_unknown(auth.get(k)) or (isinstance(auth.get(k), str) and bool(auth.get(k)))
        for k in ("username", "password")
    )


def _valid_name(name: Any) -> bool:
    return (
        isinstance(name, str)
        and bool(name)
        and name == name.strip()
        and not any(unicodedata.category(c) == "Cc" for c in name)
    )
