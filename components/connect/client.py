"""Kafka Connect REST client.

`ConnectClient` speaks the Connect worker group's REST API the way Strimzi's operator does:
connectors are created and updated through the idempotent `PUT /connectors/{name}/config`,
409 (rebalance in progress), 5xx and connection failures are retried with bounded exponential
backoff, a delete is done only once the status answers 404, and every error carries the method,
the path, the HTTP status and Connect's own message.

Errors are in components/connect/errors.py.

No error text ever contains the REST credentials or the value of a config key whose name
contains "password" or "secret": those values are masked wherever Connect echoes them (error
messages, validation messages, task traces).
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

from components.connect.errors import (
    ConfigProblem,
    ConnectError,
    ConnectorFailed,
    ConnectRequestError,
    ConnectTimeout,
    ConnectTlsError,
    ConnectUnavailable,
)
from components.topology.config_provider import is_placeholder

__all__ = [
    "ConnectClient",
    "is_sensitive_key",
    "mask_config",
    "mask_text",
]

MASK = "****"

# Backoff between retries: 0.5s doubling to 8s, as long as the budget lasts.
_FIRST_DELAY_S = 0.5
_MAX_DELAY_S = 8.0
# 409: the group is rebalancing or the leader is not known yet; 5xx: the worker is starting,
# forwarding to a leader that just left, or its herder request timed out. All pass on their own.
_RETRY_STATUSES = frozenset({409, 500, 502, 503, 504})
# How long after a restart request a still-FAILED instance counts as the old failure: the herder
# applies restarts on its own thread, a tick or a rebalance later.
RESTART_GRACE_S = 15.0
# Stops Connect accepted in this process: (group URL, connector) -> monotonic time. One provider
# host runs a pair's Switchover and then its flows' Connectors in the same `up`; a stop the first
# had accepted is not asked again by the second, which would wait on the herder while it stops
# tasks that hang on a lost cluster (task.shutdown.graceful.timeout.ms).
_ACCEPTED_STOPS: dict[tuple[str, str], float] = {}


def _verify(ca_pem: str | None) -> ssl.SSLContext | bool:
    """httpx's `verify`: a context trusting only `ca_pem` when given, else the system CAs."""
    if not ca_pem:
        return True
    try:
        return ssl.create_default_context(cadata=ca_pem)
    except (ssl.SSLError, ValueError) as exc:
        raise ConnectError(
            f"the CA certificate given to verify Kafka Connect's HTTPS listener is not usable PEM ({exc}); "
            "pass the CA certificate text (-----BEGIN CERTIFICATE----- ...), e.g. the stack output "
            "connect.<group>.caPem"
        ) from exc


def _is_certificate_failure(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            break
        if isinstance(seen, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def is_sensitive_key(key: str) -> bool:
    """Whether a config key's value must never appear in logs or error text."""
    lowered = key.lower()
    return "password" in lowered or "secret" in lowered


def mask_config(config: Mapping[str, str]) -> dict[str, str]:
    """A copy of config with the values of sensitive keys replaced by a mask."""
    return {k: (MASK if is_sensitive_key(k) else v) for k, v in config.items()}


def connector_path(name: str, *parts: str) -> str:
    # safe="" so "/" in a name is escaped too, instead of becoming another path segment.
    return "/".join(["/connectors", quote(name, safe=""), *parts])


def _without_userinfo(url: str) -> str:
    split = urlsplit(url)
    if split.username is None and split.password is None:
        return url
    host = split.hostname or ""
    if split.port is not None:
        host = f"{host}:{split.port}"
    return urlunsplit((split.scheme, host, split.path, split.query, split.fragment))


def _connect_message(response: httpx.Response) -> str:
    # Connect's error body is {"error_code": 409, "message": "..."}; proxies answer with HTML.
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:500]
    if isinstance(body, Mapping) and "message" in body:
        return str(body["message"])
    return str(body)[:500]


def _not_from_connect(response: httpx.Response) -> bool:
    """A 404 that no Connect resource wrote: a worker starting answers every path with a bare 404
    (an empty body or Jetty's page, or Jersey's "HTTP 404 Not Found" when no resource matches)
    until its REST resources are registered, and a worker forwarding to such a leader relays it.
    Connect's own 404s say what is missing ("Connector c1 not found"). It passes once the worker
    is up, so it is retried like a rebalance."""
    if response.status_code != 404:
        return False
    try:
        body = response.json()
    except ValueError:
        return True
    message = body.get("message") if isinstance(body, Mapping) else None
    return not message or message == "HTTP 404 Not Found"


class ConnectClient:
    """Client of one Kafka Connect worker group's REST API.

    Build one per operation and close it (it is a context manager): it owns an httpx.Client,
    which holds sockets and cannot be pickled with a Pulumi dynamic provider.
    """

    def __init__(
        self,
        url: str,
        *,
        auth: tuple[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 10.0,
        retry_budget_s: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        ca_pem: str | None = None,
        other_urls: Sequence[str] = (),
    ) -> None:
        """`ca_pem`: PEM CA certificate(s) an https:// worker group's certificate must chain to
        (the stack CA with restTls); without it, the system's CAs are trusted. `other_urls`: the
        group's other workers; a call that cannot reach one worker goes to the next at once (any
        worker forwards a request to the group leader), and the client stays with the one that
        answered."""
        self.url = _without_userinfo(url.rstrip("/"))
        self._urls = [self.url, *(_without_userinfo(u.rstrip("/")) for u in other_urls if u)]
        self.retry_budget_s = retry_budget_s
        self._sleep = sleep
        self._secrets: set[str] = set()
        if auth is not None:
            self._remember_secret(auth[1])
        # Credentials embedded in the URL would otherwise reach error text through httpx.
        split = urlsplit(url)
        if split.password:
            self._remember_secret(split.password)
        if auth is None and split.username is not None:
            auth = (split.username, split.password or "")
        self._http = httpx.Client(
            base_url=self.url,
            auth=auth,
            transport=transport,
            timeout=timeout,
            headers={"Accept": "application/json"},
            verify=_verify(ca_pem),
        )

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ConnectClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- connectors ------------------------------------------------------------------------

    def put_config(self, name: str, config: Mapping[str, str]) -> dict[str, Any]:
        """Create or update a connector; returns Connect's answer ({name, config, tasks, type})."""
        self._remember_config_secrets(config)
        response = self._call("PUT", connector_path(name, "config"), json=dict(config))
        return self._json(response)

    def get_config(self, name: str) -> dict[str, str] | None:
        """The connector's live config (Connect adds "name"), or None when it does not exist."""
        response = self._call("GET", connector_path(name, "config"), allow_404=True)
        if response.status_code == 404:
            return None
        return {str(k): str(v) for k, v in self._json(response).items()}

    def get_status(self, name: str) -> dict[str, Any] | None:
        """{name, connector: {state, worker_id}, tasks: [{id, state, worker_id, trace?}]} or None."""
        response = self._call("GET", connector_path(name, "status"), allow_404=True)
        if response.status_code == 404:
            return None
        return self._json(response)

    def delete(self, name: str, *, timeout_s: float = 60.0, poll_s: float = 1.0) -> bool:
        """Delete a connector and wait until its status answers 404.

        Returns False when it did not exist. The DELETE returns before every worker has stopped
        the tasks, so the poll is what makes the name reusable right away.
        """
        _ACCEPTED_STOPS.pop((self.url, name), None)
        response = self._call("DELETE", connector_path(name), allow_404=True)
        if response.status_code == 404:
            return False
        self._poll(
            name,
            "deleted",
            timeout_s,
            poll_s,
            lambda: self.get_status(name),
            lambda status: status is None,
        )
        return True

    def validate(self, connector_class: str, config: Mapping[str, str]) -> list[ConfigProblem]:
        """Ask the plugin to validate a config; returns one problem per rejected key."""
        self._remember_config_secrets(config)
        body = {**config, "connector.class": connector_class}
        path = "/connector-plugins/" + quote(connector_class, safe="") + "/config/validate"
        answer = self._json(self._call("PUT", path, json=body))
        problems: list[ConfigProblem] = []
        for entry in answer.get("configs") or []:
            value = entry.get("value") or {}
            errors = tuple(self._mask(str(e)) for e in value.get("errors") or [])
            if errors:
                problems.append(ConfigProblem(str(value.get("name", "?")), errors))
        return problems

    def validate_answer(self, connector_class: str, config: Mapping[str, str]) -> dict[str, Any]:
        """Connect's whole validation answer: every config definition with its value and errors
        (errors masked); `validate` keeps only the rejected keys."""
        self._remember_config_secrets(config)
        body = {**config, "connector.class": connector_class}
        path = "/connector-plugins/" + quote(connector_class, safe="") + "/config/validate"
        answer = self._json(self._call("PUT", path, json=body))
        for entry in answer.get("configs") or []:
            value = entry.get("value") or {}
            value["errors"] = [self._mask(str(e)) for e in value.get("errors") or []]
        return answer

    def list_all_plugins(self) -> list[dict[str, Any]]:
        """GET /connector-plugins?connectorsOnly=false: connectors, transformations, predicates,
        converters ({class, type, version})."""
        body = self._call("GET", "/connector-plugins", params={"connectorsOnly": "false"}).json()
        return list(body) if isinstance(body, list) else []

    def restart(self, name: str, *, include_tasks: bool = True, only_failed: bool = False) -> None:
        params = {
            "includeTasks": str(include_tasks).lower(),
            "onlyFailed": str(only_failed).lower(),
        }
        self._call("POST", connector_path(name, "restart"), params=params)

    def restart_failed(
        self, name: str, timeout_s: float, poll_s: float = 1.0, *, min_tasks: int = 1, grace_s: float = RESTART_GRACE_S
    ) -> dict[str, Any]:
        """Restart only what is FAILED (`restart?includeTasks=true&onlyFailed=true`) and wait,
        bounded, until RUNNING. The herder applies a restart on its own thread, so for `grace_s`
        (or until the status has moved on) a FAILED answer is the old failure, not a new one."""
        self.restart(name, include_tasks=True, only_failed=True)
        return self.wait_state(name, "RUNNING", timeout_s, poll_s, min_tasks=min_tasks, failed_grace_s=grace_s)

    def pause(self, name: str) -> None:
        _ACCEPTED_STOPS.pop((self.url, name), None)
        self._call("PUT", connector_path(name, "pause"))

    def resume(self, name: str) -> None:
        _ACCEPTED_STOPS.pop((self.url, name), None)
        self._call("PUT", connector_path(name, "resume"))

    def stop(self, name: str) -> None:
        self._call("PUT", connector_path(name, "stop"))
        _ACCEPTED_STOPS[(self.url, name)] = time.monotonic()

    def stop_accepted_within(self, name: str, seconds: float) -> bool:
        """Whether this process had a stop of `name` accepted by this group in the last `seconds`
        (and neither paused, resumed nor deleted it since)."""
        at = _ACCEPTED_STOPS.get((self.url, name))
        return at is not None and time.monotonic() - at <= seconds

    def alter_offsets(self, name: str, offsets: list[Mapping[str, Any]]) -> None:
        """PATCH /connectors/<name>/offsets (KIP-875): where a STOPPED connector resumes, per partition
        ([{"partition": {...}, "offset": {...}}], the connector's own partition and offset shapes)."""
        self._call("PATCH", connector_path(name, "offsets"), json={"offsets": list(offsets)})

    def create(self, name: str, config: Mapping[str, str], *, initial_state: str = "RUNNING") -> dict[str, Any]:
        """POST /connectors: create a connector that starts in `initial_state` (RUNNING, PAUSED
        or STOPPED; KIP-980), so a connector declared paused or stopped never runs a task.
        Answers 409 when the name exists."""
        self._remember_config_secrets(config)
        _ACCEPTED_STOPS.pop((self.url, name), None)
        body = {"name": name, "config": dict(config), "initial_state": initial_state}
        return self._json(self._call("POST", "/connectors", json=body))

    def set_state(self, name: str, state: str) -> None:
        """Ask for a target state: RUNNING resumes (also from STOPPED), PAUSED pauses, STOPPED stops."""
        actions = {"RUNNING": self.resume, "PAUSED": self.pause, "STOPPED": self.stop}
        if state not in actions:
            raise ValueError(f"unknown connector state {state!r}; use one of {', '.join(actions)}")
        actions[state](name)

    def list_plugins(self) -> list[dict[str, Any]]:
        response = self._call("GET", "/connector-plugins")
        body = response.json()
        return list(body) if isinstance(body, list) else []

    def server_info(self) -> dict[str, Any]:
        """GET /: {version, commit, kafka_cluster_id}."""
        return self._json(self._call("GET", "/"))

    def wait_running(self, name: str, timeout_s: float, poll_s: float = 1.0, *, min_tasks: int = 1) -> dict[str, Any]:
        """Poll until the connector and all of (at least min_tasks) its tasks are RUNNING.

        A FAILED connector or task raises ConnectorFailed at once rather than at the timeout.
        min_tasks defaults to 1 because right after a PUT the connector is RUNNING before its
        tasks exist; pass 0 for connectors that legitimately run without tasks (MM2's checkpoint
        connector when the source has no consumer group yet).
        """
        return self.wait_state(name, "RUNNING", timeout_s, poll_s, min_tasks=min_tasks)

    def wait_state(
        self,
        name: str,
        state: str,
        timeout_s: float,
        poll_s: float = 1.0,
        *,
        min_tasks: int = 1,
        failed_grace_s: float = 0.0,
    ) -> dict[str, Any]:
        """Poll until the connector reaches `state`: RUNNING as wait_running says; PAUSED with
        every task PAUSED (a connector created paused may have none); STOPPED with no task left
        (Connect removes a stopped connector's tasks). FAILED raises ConnectorFailed at once, or
        after `failed_grace_s` unless the status showed no failure in between."""
        started, polls, moved_on = time.monotonic(), [0], [False]

        def accept(status: dict[str, Any] | None) -> bool:
            # Polls are poll_s apart: counting them keeps the grace real with a fake sleep.
            elapsed = max(time.monotonic() - started, polls[0] * poll_s)
            polls[0] += 1
            if status is None:
                return False
            failure = self._failure(name, status)
            moved_on[0] = moved_on[0] or failure is None
            if failure is not None and (moved_on[0] or elapsed >= failed_grace_s):
                raise failure
            if failure is not None:
                return False
            tasks = status.get("tasks") or []
            if (status.get("connector") or {}).get("state") != state:
                return False
            if state == "STOPPED":
                return not tasks
            enough = len(tasks) >= min_tasks if state == "RUNNING" else True
            return enough and all(t.get("state") == state for t in tasks)

        status = self._poll(name, state, timeout_s, poll_s, lambda: self.get_status(name), accept)
        assert status is not None  # accept() rejects None
        return status

    # -- internals -------------------------------------------------------------------------

    def _poll(
        self,
        name: str,
        waiting_for: str,
        timeout_s: float,
        poll_s: float,
        fetch: Callable[[], dict[str, Any] | None],
        done: Callable[[dict[str, Any] | None], bool],
    ) -> dict[str, Any] | None:
        started = time.monotonic()
        slept = 0.0
        while True:
            status = fetch()
            if done(status):
                return status
            # Counting slept time as well as wall time keeps the bound real with a fake sleep.
            elapsed = max(time.monotonic() - started, slept)
            if elapsed >= timeout_s:
                raise ConnectTimeout(name, waiting_for, timeout_s, status)
            pause = min(poll_s, timeout_s - elapsed)
            self._sleep(pause)
            slept += pause

    def _failure(self, name: str, status: Mapping[str, Any]) -> ConnectorFailed | None:
        connector = status.get("connector") or {}
        if connector.get("state") == "FAILED":
            return ConnectorFailed(
                name,
                None,
                str(connector.get("worker_id", "")),
                self._mask(str(connector.get("trace", ""))),
                status,
            )
        for task in status.get("tasks") or []:
            if task.get("state") == "FAILED":
                return ConnectorFailed(
                    name,
                    int(task.get("id", -1)),
                    str(task.get("worker_id", "")),
                    self._mask(str(task.get("trace", ""))),
                    status,
                )
        return None

    def _call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, str] | None = None,
        allow_404: bool = False,
    ) -> httpx.Response:
        """One request with retries; returns the response or raises a ConnectError."""
        started = time.monotonic()
        waited = 0.0
        delay = _FIRST_DELAY_S
        attempts = 0
        tried = {self.url}  # in this round: every worker once before the next pause
        while True:
            attempts += 1
            response: httpx.Response | None = None
            cause = ""
            try:
                response = self._http.request(method, path, json=json, params=params)
            except httpx.TransportError as exc:
                cause = self._mask(f"{type(exc).__name__}: {exc}")
                if _is_certificate_failure(exc):
                    raise ConnectTlsError(self.url, method, path, cause) from None  # retrying cannot help
                if self._switch_worker(tried):
                    continue
            if response is not None:
                starting = _not_from_connect(response)
                if response.status_code < 400 or (allow_404 and response.status_code == 404 and not starting):
                    return response
                if response.status_code not in _RETRY_STATUSES and not starting:
                    raise self._request_error(method, path, response, attempts)
            elapsed = max(time.monotonic() - started, waited)
            pause = min(delay, self.retry_budget_s - elapsed)
            if pause <= 0:
                if response is not None:
                    raise self._request_error(method, path, response, attempts)
                raise ConnectUnavailable(" or ".join(self._urls), method, path, cause, attempts)
            self._sleep(pause)
            waited += pause
            delay = min(delay * 2, _MAX_DELAY_S)
            tried = {self.url}

    def _switch_worker(self, tried: set[str]) -> bool:
        """Point the client at a worker not tried in this round; False when none is left."""
        untried = [u for u in self._urls if u not in tried]
        if not untried:
            return False
        self.url = untried[0]
        self._http.base_url = httpx.URL(self.url)
        tried.add(self.url)
        return True

    def _request_error(self, method: str, path: str, response: httpx.Response, attempts: int) -> ConnectRequestError:
        query = response.request.url.query.decode() if response.request.url.query else ""
        shown = f"{path}?{query}" if query else path
        message = self._mask(_connect_message(response))
        return ConnectRequestError(method, shown, response.status_code, message, attempts=attempts)

    def _json(self, response: httpx.Response) -> dict[str, Any]:
        if response.status_code == 204 or not response.content:
            return {}
        body = response.json()
        return dict(body) if isinstance(body, Mapping) else {"value": body}

    def _remember_config_secrets(self, config: Mapping[str, str]) -> None:
        for key, value in config.items():
            if is_sensitive_key(str(key)):
                self._remember_secret(str(value))

    def _remember_secret(self, value: str) -> None:
        # Config-provider placeholders (${file:...}) are references, not secrets; masking them
        # would hide the one hint that explains a failed lookup.
        if value and not is_placeholder(value):
            self._secrets.add(value)

    def _mask(self, text: str) -> str:
        return mask_text(text, self._secrets)


def mask_text(text: str, secrets: Iterable[str]) -> str:
    """Replace every occurrence of every secret, longest first so overlaps cannot leak."""
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            text = text.replace(secret, MASK)
    return text
