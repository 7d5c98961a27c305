"""Readiness of a broker or a Connect worker, as the platforms that start them (local processes,
docker containers) wait for it: a metadata request as the stack's admin, or a worker that answers
/health and lists its group's connectors (it has joined the group and read the config topic).
Each probe returns None when ready, else why not."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from components.platform.errors import PlatformError
from components.rpc_values import plain


def kafka_probe(bootstrap: str, client: Mapping[str, str]) -> dict[str, Any]:
    """A broker's readiness probe, as a resource input: a metadata request as the stack's admin."""
    return {"kind": "kafka", "bootstrap": bootstrap, "client": dict(client)}


def connect_probe(url: str, auth: Mapping[str, str] | None, ca_pem: str | None = None) -> dict[str, Any]:
    """A worker's readiness probe, as a resource input: /health and /connectors, authenticated
    when restAuth is on, over HTTPS verified against the stack CA when `ca_pem` is given."""
    probe: dict[str, Any] = {"kind": "connect", "url": url, "auth": dict(auth) if auth else None}
    if ca_pem:
        probe["ca_pem"] = ca_pem
    return probe


def kafka_answers(bootstrap: str, client: Mapping[str, str]) -> str | None:
    from confluent_kafka.admin import AdminClient  # imported here: only the provider needs it

    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 3000, "log_level": 0, **client}
    try:
        md = AdminClient(conf).list_topics(timeout=3)
    except Exception as exc:
        return f"metadata request to {bootstrap} failed: {exc}"
    if not md.brokers:
        return f"{bootstrap} answered with no brokers"
    return None


def connect_answers(url: str, auth: tuple[str, str] | None, ca_pem: str | None = None) -> str | None:
    import ssl

    import httpx

    # HTTPS workers (restTls) present a certificate from the stack CA, verified against it.
    verify: ssl.SSLContext | bool = ssl.create_default_context(cadata=ca_pem) if ca_pem else True
    try:
        with httpx.Client(timeout=3, auth=auth, verify=verify) as http:
            health = http.get(f"{url}/health")
            if health.status_code != 200:
                return f"GET {url}/health answered {health.status_code}: {health.text[:200]}"
            # /connectors only answers once the worker has joined the group and read the config topic.
            listing = http.get(f"{url}/connectors")
            if listing.status_code != 200:
                return f"GET {url}/connectors answered {listing.status_code}: {listing.text[:200]}"
    except httpx.HTTPError as exc:
        return f"{url} not answering: {exc}"
    return None


def readiness_probe(props: Mapping[str, Any]) -> Callable[[], str | None]:
    """The probe a process's or container's `ready` input names: None once it is ready, else why not."""
    ready = plain(props["ready"])
    if ready["kind"] == "kafka":
        return lambda: kafka_answers(ready["bootstrap"], dict(ready.get("client") or {}))
    if ready["kind"] == "connect":
        auth = ready.get("auth")
        creds = (auth["username"], auth["password"]) if auth else None
        return lambda: connect_answers(ready["url"], creds, ready.get("ca_pem") or None)
    raise PlatformError(f"{props['component']}: unknown readiness probe {ready['kind']!r}")
