"""The watch plan: what one auto-restart watcher watches, and the JSON file it is handed.

Written by the platforms (components/platform/local/watcher.py, components/platform/kubernetes/
deploy.py) and read by the watcher (components/ops/watcher.py). Pure: no I/O here (reading the
file and the credentials is the watcher's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from components.watch.backoff import Backoff

PLAN_VERSION = 1


@dataclass(frozen=True)
class WorkerProcess:
    """A local worker process the watcher starts again when it dies (as Kubernetes restarts a pod)."""

    name: str  # "worker 0"
    run_dir: str  # where the stack keeps its command file (components/platform/local/process.py)
    marker: str  # the stack's process marker on its command line


@dataclass(frozen=True)
class WatchPlan:
    """What one watcher watches: a worker group's endpoint and its connectors' maxRestarts."""

    group: str
    url: str
    connectors: Mapping[str, int | None]  # connector name -> maxRestarts (None: no limit)
    auth: tuple[str, str] | None = None
    ca_pem: str | None = None
    status_file: str | None = None
    backoff: Backoff = field(default_factory=Backoff)
    poll_s: float = 2.0
    # The group's other workers, asked when `url` does not answer (a local group's workers; one
    # Service URL on Kubernetes needs none).
    other_urls: tuple[str, ...] = ()
    # Local platform only: the group's worker processes, restarted with `backoff` when one dies.
    workers: tuple[WorkerProcess, ...] = ()


def plan_document(plan_: WatchPlan, auth_file: str | None = None) -> dict[str, Any]:
    """The plan file's JSON (no secret: credentials live in `auth_file` or the environment)."""
    b = plan_.backoff
    return {
        "version": PLAN_VERSION,
        "group": plan_.group,
        "url": plan_.url,
        "otherUrls": list(plan_.other_urls),
        "caPem": plan_.ca_pem,
        "authFile": auth_file,
        "statusFile": plan_.status_file,
        "pollSeconds": plan_.poll_s,
        "backoff": {
            "firstSeconds": b.first_s,
            "unitSeconds": b.unit_s,
            "capSeconds": b.cap_s,
            "stableSeconds": b.stable_s,
        },
        "connectors": {name: {"maxRestarts": limit} for name, limit in sorted(plan_.connectors.items())},
        "workers": [{"name": w.name, "runDir": w.run_dir, "marker": w.marker} for w in plan_.workers],
    }


def plan_from_document(doc: Mapping[str, Any], auth: tuple[str, str] | None) -> WatchPlan:
    """The plan a `plan_document` describes, with the REST credentials read beside it."""
    b = doc.get("backoff") or {}
    return WatchPlan(
        group=str(doc["group"]),
        url=str(doc["url"]),
        connectors={
            str(k): (None if v.get("maxRestarts") is None else int(v["maxRestarts"]))
            for k, v in doc["connectors"].items()
        },
        auth=auth,
        ca_pem=doc.get("caPem") or None,
        status_file=doc.get("statusFile") or None,
        backoff=Backoff(
            first_s=float(b.get("firstSeconds", Backoff.first_s)),
            unit_s=float(b.get("unitSeconds", Backoff.unit_s)),
            cap_s=float(b.get("capSeconds", Backoff.cap_s)),
            stable_s=float(b.get("stableSeconds", Backoff.stable_s)),
        ),
        poll_s=float(doc.get("pollSeconds", 2.0)),
        other_urls=tuple(str(u) for u in doc.get("otherUrls") or ()),
        workers=tuple(
            WorkerProcess(str(w["name"]), str(w["runDir"]), str(w["marker"])) for w in doc.get("workers") or ()
        ),
    )
