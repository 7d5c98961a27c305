"""Kafka Connect calls over the standard library only, for the clients that cannot install httpx.

The auto-restart watcher needs two calls: a connector's status, and a restart of what failed;
the Spark stage needs one, a connector's config. They go through urllib rather than
`ConnectClient` (httpx), so the modules shipped to the watcher's Kubernetes pod import nothing
outside the standard library (the pod runs a stock Python image and installs nothing at start:
no PyPI, which an air-gapped cluster cannot reach, and no start-up delay), and the Spark stage
depends only on the outputs contract, the record codec and this module.

It knows every worker of its group: a call goes to the worker that answered last and, when that
one gives no usable answer (refused, timed out, 409 while the group rebalances, 5xx), to the
next, so the watcher keeps working while a worker restarts. Errors are Connect's
(`components/connect/errors.py`): `ConnectUnavailable` when no worker answered,
`ConnectTlsError` for a certificate that does not verify, `ConnectRequestError` for an error
answer (4xx). No error text carries the REST credentials.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import quote, urlencode

from components.connect.errors import ConnectRequestError, ConnectTlsError, ConnectUnavailable

# An answer another worker may not give: the group is rebalancing, or this worker is starting,
# stopping or forwarding to a leader that just left.
_TRY_NEXT = frozenset({409, 500, 502, 503, 504})

# (request, timeout in seconds, TLS context) -> (HTTP status, body); raises OSError when no answer.
Send = Callable[[urllib.request.Request, float, ssl.SSLContext | None], tuple[int, bytes]]


def send(request: urllib.request.Request, timeout: float, context: ssl.SSLContext | None) -> tuple[int, bytes]:
    """One HTTP exchange; an error status is an answer, not an exception."""
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as answer:
            return int(answer.status), answer.read()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read()


class StdlibConnectClient:
    """The watcher's client of one worker group: `urls` are its workers' REST URLs (or one
    Service URL on Kubernetes). Reusable across polls: it remembers which worker answered last."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        auth: tuple[str, str] | None = None,
        ca_pem: str | None = None,
        timeout: float = 10.0,
        transport: Send = send,
    ) -> None:
        if not urls:
            raise ValueError("StdlibConnectClient needs at least one worker URL")
        self.urls = [u.rstrip("/") for u in urls]
        self.timeout = timeout
        self._send = transport
        self._context = ssl.create_default_context(cadata=ca_pem) if ca_pem else None
        self._headers = {"Accept": "application/json"}
        if auth:
            token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
            self._headers["Authorization"] = f"Basic {token}"
        self._current = 0

    def __enter__(self) -> StdlibConnectClient:
        return self

    def __exit__(
        self, _type: type[BaseException] | None, _exc: BaseException | None, _tb: TracebackType | None
    ) -> None:
        return None  # nothing held between calls: urllib opens a connection per request

    def get_status(self, name: str) -> dict[str, Any] | None:
        """{name, connector: {state, worker_id}, tasks: [...]}, or None when the connector does not exist."""
        return self._get_connector(name, "status")

    def get_config(self, name: str) -> dict[str, str] | None:
        """The connector's config as Connect holds it, or None when the connector does not exist."""
        answer = self._get_connector(name, "config")
        return None if answer is None else {str(k): str(v) for k, v in answer.items()}

    def _get_connector(self, name: str, what: str) -> dict[str, Any] | None:
        path = f"/connectors/{quote(name, safe='')}/{what}"
        status, body = self._call("GET", path)
        if status == 404:
            return None
        if status != 200:
            raise ConnectRequestError("GET", path, status, _message(body))
        answer = json.loads(body or b"{}")
        return answer if isinstance(answer, dict) else {}

    def restart(self, name: str, *, include_tasks: bool = True, only_failed: bool = False) -> None:
        query = urlencode({"includeTasks": str(include_tasks).lower(), "onlyFailed": str(only_failed).lower()})
        path = f"/connectors/{quote(name, safe='')}/restart"
        status, body = self._call("POST", f"{path}?{query}")
        if status >= 300:
            raise ConnectRequestError("POST", path, status, _message(body))

    def _call(self, method: str, path: str) -> tuple[int, bytes]:
        """The first usable answer, trying the workers from the one that answered last."""
        tried: list[str] = []
        last: tuple[int, bytes] | None = None
        for step in range(len(self.urls)):
            index = (self._current + step) % len(self.urls)
            url = self.urls[index]
            request = urllib.request.Request(f"{url}{path}", method=method, headers=self._headers)
            try:
                status, body = self._send(request, self.timeout, self._context)
            except OSError as exc:
                if _certificate_failure(exc):
                    raise ConnectTlsError(url, method, path.split("?", 1)[0], str(exc)) from exc
                tried.append(f"{url}: {getattr(exc, 'reason', None) or exc}")
                continue
            if status in _TRY_NEXT:
                tried.append(f"{url}: HTTP {status}")
                last = (status, body)
                continue
            self._current = index
            return status, body
        if last is not None:
            return last  # every worker answered, none usefully: report the last answer
        raise ConnectUnavailable(" or ".join(self.urls), method, path.split("?", 1)[0], "; ".join(tried), len(tried))


def _certificate_failure(exc: BaseException) -> bool:
    reason = getattr(exc, "reason", exc)
    return isinstance(reason, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(reason)


def _message(body: bytes) -> str:
    """Connect's error message ({"error_code": ..., "message": ...}), or the start of the body."""
    try:
        answer = json.loads(body)
    except ValueError:
        return body.decode(errors="replace").strip()[:500]
    return str(answer.get("message")) if isinstance(answer, dict) and "message" in answer else str(answer)[:500]


def unanswered(urls: Sequence[str], ca_pem: str | None, timeout: float, transport: Send = send) -> dict[str, str]:
    """Why each of `urls` (workers of one or more groups) did not answer `GET /` within `timeout`
    (connect and read, one try); a worker that answers at all, any HTTP status, is left out. All
    are asked at once, so a dead group is told in one `timeout`, not in a client's retry budget."""
    from concurrent.futures import ThreadPoolExecutor

    context = ssl.create_default_context(cadata=ca_pem) if ca_pem else None

    def why(url: str) -> str | None:
        request = urllib.request.Request(f"{url.rstrip('/')}/", method="GET")
        try:
            transport(request, timeout, context if url.startswith("https") else None)
        except OSError as exc:
            return str(getattr(exc, "reason", None) or exc)
        return None

    if not urls:
        return {}
    with ThreadPoolExecutor(max_workers=len(urls)) as pool:
        reasons = list(pool.map(why, urls))
    return {url: reason for url, reason in zip(urls, reasons, strict=True) if reason is not None}
