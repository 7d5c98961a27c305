"""Errors of the Kafka Connect client and the Connector provider, and the text they quote.

Exceptions::

    ConnectError                     base of everything raised here
     ├── ConnectUnavailable          no HTTP answer from the worker group (refused, DNS, timeout)
     │                               after the retry budget; names the URL
     ├── ConnectTlsError             the HTTPS certificate did not verify against the trusted CA
     │                               (not retried); names the URL and the fix
     ├── ConnectRequestError         Connect answered with an error status: any 4xx, or 409/5xx
     │                               once the retry budget is spent; .method .path .status
     │                               .connect_message
     ├── ConnectorFailed             the connector or one of its tasks is FAILED; .task_id .trace
     ├── ConnectTimeout              a bounded wait (wait_running, delete) ran out; .last_status
     └── ConnectorOperationFailed    raised by the Pulumi provider: a create, update, read or
                                     delete failed; names the connector, the cause, what was
                                     cleaned up and the next step
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.topology.traces import trace_head


class ConnectError(Exception):
    """Base of every error raised by the Connect client and the Connector provider."""


class ConnectUnavailable(ConnectError):
    """The worker group's REST endpoint did not answer at all."""

    def __init__(self, url: str, method: str, path: str, cause: str, attempts: int) -> None:
        self.url = url
        self.method = method
        self.path = path
        self.cause = cause
        self.attempts = attempts
        super().__init__(
            f"cannot reach Kafka Connect at {url} ({method} {path}: {cause}; "
            f"{attempts} attempt{'s' if attempts != 1 else ''}): check that the Connect worker "
            f"group is running and that the connector's connect_url points at its REST listener"
        )


class ConnectTlsError(ConnectError):
    """The worker group's HTTPS certificate did not verify against the trusted CA."""

    def __init__(self, url: str, method: str, path: str, cause: str) -> None:
        self.url = url
        self.method = method
        self.path = path
        self.cause = cause
        super().__init__(
            f"Kafka Connect at {url} ({method} {path}) presented a certificate that does not verify: {cause}. "
            "Pass the CA that issued it (ca_pem: the stack output connect.<group>.caPem for a restTls "
            "worker group), and reach the workers by a name or address in its SANs (127.0.0.1, localhost)"
        )


class ConnectRequestError(ConnectError):
    """Connect answered with an error status."""

    def __init__(self, method: str, path: str, status: int, connect_message: str, *, attempts: int = 1) -> None:
        self.method = method
        self.path = path
        self.status = status
        self.connect_message = connect_message
        self.attempts = attempts
        text = f"{method} {path} returned HTTP {status}: {connect_message or '(no message)'}"
        if status in (401, 403):
            text += (
                " - check the Connect REST credentials (the connector's auth username and"
                " password) and the worker group's REST authentication settings"
            )
        elif status == 409:
            text += (
                f" - the worker group was still rebalancing after {attempts} attempts;"
                " check that all workers are up and agree on group.id, then retry"
            )
        elif status >= 500 and attempts > 1:
            text += f" (gave up after {attempts} attempts; see the Connect worker logs)"
        super().__init__(text)


class ConnectorFailed(ConnectError):
    """The connector (task_id None) or one of its tasks reported state FAILED."""

    def __init__(
        self,
        name: str,
        task_id: int | None,
        worker_id: str,
        trace: str,
        status: Mapping[str, Any],
    ) -> None:
        self.name = name
        self.task_id = task_id
        self.worker_id = worker_id
        self.trace = trace
        self.status = dict(status)
        what = "connector" if task_id is None else f"task {task_id}"
        super().__init__(f"connector {name!r}: {what} is FAILED on worker {worker_id or '?'}:\n{trace_head(trace)}")


class ConnectTimeout(ConnectError):
    """A bounded wait ran out; last_status is the last status Connect returned (or None)."""

    def __init__(self, name: str, waiting_for: str, timeout_s: float, last_status: Any) -> None:
        self.name = name
        self.timeout_s = timeout_s
        self.last_status = last_status
        super().__init__(
            f"connector {name!r}: still not {waiting_for} after {timeout_s:g}s; "
            f"last seen: {describe_status(last_status)}"
        )


class ConnectorOperationFailed(ConnectError):
    """A provider operation failed; the message is meant to be read by whoever runs `pulumi`."""


@dataclass(frozen=True)
class ConfigProblem:
    """One config key that Connect's validation rejected, with Connect's messages."""

    key: str
    messages: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.key}: {'; '.join(self.messages)}"


def describe_status(status: Any) -> str:
    """One line saying what state a connector and its tasks are in."""
    if not isinstance(status, Mapping):
        return "no status (GET status answered 404)"
    connector = status.get("connector") or {}
    tasks = status.get("tasks") or []
    parts = [f"connector {connector.get('state', '?')}"]
    if tasks:
        parts.extend(f"task {t.get('id', '?')} {t.get('state', '?')}" for t in tasks)
    else:
        parts.append("no tasks")
    return ", ".join(parts)
