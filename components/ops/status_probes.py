"""What `bin/status` asks over HTTP, every address at once, each within its timeout: whether a
worker group's workers answer at all, what its lag exporter found, and what its workers' metrics
agents serve (MM2's byte-rate). Why an address did not answer is kept, never raised.

On Kubernetes the lag exporter and the workers' metrics answer inside the cluster only: they are
read through the API server's proxy as the kubeconfig's user (components/platform/kubernetes/proxy.py)."""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.request
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TypeVar

from components.ops.status_view import (
    LAG_EXPORTER_TIMEOUT_S,
    WORKER_PROBE_TIMEOUT_S,
    ExporterReading,
    in_cluster_service,
)
from components.outputs.contract import StackExports

T = TypeVar("T")
U = TypeVar("U")


def _all_at_once(ask: Callable[[T], U], asked: Sequence[T]) -> list[U]:
    """`ask` of every item, on one thread each, in the order asked."""
    if not asked:
        return []
    with ThreadPoolExecutor(max_workers=len(asked)) as pool:
        return list(pool.map(ask, asked))


def _answers(url: str, ca_pem: str | None) -> str | None:
    """None when the worker at `url` answers `GET /` at all (any HTTP status: a 401 is a live
    worker); else why not. One try, WORKER_PROBE_TIMEOUT_S for connect and read."""
    from components.connect.stdlib_client import send

    context = ssl.create_default_context(cadata=ca_pem) if ca_pem and url.startswith("https") else None
    try:
        send(urllib.request.Request(f"{url.rstrip('/')}/", method="GET"), WORKER_PROBE_TIMEOUT_S, context)
    except OSError as exc:
        return str(getattr(exc, "reason", None) or exc)
    return None


def dead_groups(outputs: StackExports, groups: Sequence[str]) -> dict[str, dict[str, str]]:
    """The groups none of whose workers answered, each with why per worker URL. Every worker of
    every group is asked at once, so this takes one probe timeout however many there are."""
    asked = [
        (group, url, outputs.connect[group].ca_pem)
        for group in groups
        if group in outputs.connect
        for url in outputs.connect[group].probe_urls
    ]
    answers = _all_at_once(lambda a: _answers(a[1], a[2]), asked)
    why: dict[str, dict[str, str]] = {}
    answered = set()
    for (group, url, _ca), reason in zip(asked, answers, strict=True):
        if reason is None:
            answered.add(group)
        else:
            why.setdefault(group, {})[url] = reason
    return {group: urls for group, urls in why.items() if group not in answered}


def _get(url: str) -> bytes:
    """The body of a 200 answer to `GET url` within LAG_EXPORTER_TIMEOUT_S; OSError otherwise."""
    from components.connect.stdlib_client import send

    status, body = send(urllib.request.Request(url, method="GET"), LAG_EXPORTER_TIMEOUT_S, None)
    if status != 200:
        raise OSError(f"HTTP {status} from {url}")
    return body


def read_exporter(url: str, get: Callable[[str], bytes] | None = None) -> ExporterReading:
    """A lag exporter's /expired and /metrics; why not, when /expired does not answer. /metrics
    is asked only once /expired answered (a silent exporter costs one timeout, not two). `get`:
    how a path is read (default: GET at `url`)."""
    base = url.rstrip("/")
    read = get or (lambda path: _get(f"{base}{path}"))
    try:
        expired = json.loads(read("/expired"))
    except (OSError, ValueError, http.client.HTTPException) as exc:  # refused, timed out, not HTTP, not JSON
        return ExporterReading(url, error=str(getattr(exc, "reason", None) or exc))
    if not isinstance(expired, dict):
        return ExporterReading(url, error="/expired is not a JSON object")
    try:
        metrics: str | None = read("/metrics").decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        metrics = None  # the lag is then shown as unknown; the expiries stand
    return ExporterReading(url, expired, metrics)


def exporter_readings(
    outputs: StackExports, groups: Sequence[str], given: Collection[str] = ()
) -> dict[str, ExporterReading]:
    """Each of `groups` that exports a lagUrl: what its exporter answered, all asked at once;
    `given`: the groups whose lagUrl came from --lag-url."""
    asked = [(g, outputs.connect[g].lag_url) for g in groups if g in outputs.connect and outputs.connect[g].lag_url]

    def read(group: str, url: str) -> ExporterReading:
        return read_exporter(url, None if group in given else _through_api_server(outputs.connect[group].pods, url))

    readings = dict(zip((g for g, _ in asked), _all_at_once(lambda a: read(*a), asked), strict=True))
    return {g: replace(r, given=True) if g in given else r for g, r in readings.items()}


def _through_api_server(pods: Mapping[str, str], url: str) -> Callable[[str], bytes] | None:
    """How to read an in-cluster Service URL of a group whose workers run as `pods`: through the
    API server of their context; None for any other URL."""
    service = in_cluster_service(url)
    if not pods or service is None or service.namespace == "<namespace>":
        return None
    from components.platform.kubernetes.proxy import service_get

    context = pods.get("context", "")
    return lambda path: service_get(context, service.namespace, service.service, service.port, path)


def _metrics_text(url: str) -> str | None:
    """A worker's /metrics text; None when it does not answer within LAG_EXPORTER_TIMEOUT_S."""
    try:
        return _get(url).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        return None


def worker_metrics(outputs: StackExports, groups: Sequence[str]) -> dict[str, list[str | None]]:
    """Each of `groups` that exports its workers' metrics URLs: every worker's /metrics text (None
    for one that did not answer), all asked at once."""
    asked = [(g, url) for g in groups if g in outputs.connect for url in outputs.connect[g].metrics_urls]
    texts: dict[str, list[str | None]] = {}
    for (group, _url), text in zip(asked, _all_at_once(lambda a: _metrics_text(a[1]), asked), strict=True):
        texts.setdefault(group, []).append(text)
    in_pods = [g for g in groups if g in outputs.connect and outputs.connect[g].pods.get("port")]
    if in_pods:
        from components.platform.kubernetes.proxy import pod_texts

        for group, found in zip(
            in_pods, _all_at_once(lambda g: pod_texts(outputs.connect[g].pods, "/metrics"), in_pods), strict=True
        ):
            texts[group] = list(found) or [None]  # no pod listed: said as no worker answering
    return texts
