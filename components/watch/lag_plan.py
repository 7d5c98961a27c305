"""The lag plan: what one worker group's lag exporter reads, and the JSON file it is handed.

Built from the topology by components/platform/lag_exporter.py, written by the platforms and read
by the exporter (components/ops/lag_exporter.py). Pure and standard library only (the Kubernetes
pod ships it): no I/O here. The plan holds no
secret: each cluster's secret client settings (`sasl.password` and the like) are split off by
`split_client` into the secrets file (0600 locally, a Secret on Kubernetes) beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PLAN_VERSION = 1
SECRET_CLIENT_KEYS = frozenset({"sasl.password", "ssl.key.password", "ssl.keystore.password"})
DEFAULT_POLL_S = 10.0  # a plan document that names no interval
# What the platforms run: a reading every 5 s, so lag alerts see a paused flow within one evaluation.
POLL_S = 5.0
# Environment variable a rendered workload passes the clients' secret settings in (JSON), never a file in an image.
SECRETS_ENV = "MM2_LAG_EXPORTER_SECRETS"


@dataclass(frozen=True)
class LagFlow:
    name: str  # "primary->dr"
    source: str
    target: str
    connector: str  # the flow's MirrorSourceConnector
    topics: tuple[str, ...]  # the flow's topic patterns (regular expressions)
    topics_exclude: tuple[str, ...]
    rpo_seconds: int


@dataclass(frozen=True)
class LagPlan:
    group: str
    storage_cluster: str  # holds the group's offsets topic
    offsets_topic: str
    clusters: Mapping[str, Mapping[str, str]]  # alias -> librdkafka settings (bootstrap included, no secret)
    flows: tuple[LagFlow, ...]
    listen: str = "127.0.0.1:0"  # host:port of /metrics and /expired (0: any free port)
    poll_s: float = DEFAULT_POLL_S
    status_file: str | None = None
    state_file: str | None = None
    secrets_file: str | None = None


def split_client(settings: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(public, secret) parts of a librdkafka config."""
    public = {k: str(v) for k, v in settings.items() if k not in SECRET_CLIENT_KEYS}
    secret = {k: str(v) for k, v in settings.items() if k in SECRET_CLIENT_KEYS}
    return public, secret


def plan_document(plan: LagPlan) -> dict[str, Any]:
    return {
        "version": PLAN_VERSION,
        "group": plan.group,
        "storageCluster": plan.storage_cluster,
        "offsetsTopic": plan.offsets_topic,
        "clusters": {alias: dict(conf) for alias, conf in sorted(plan.clusters.items())},
        "flows": [
            {
                "name": f.name,
                "source": f.source,
                "target": f.target,
                "connector": f.connector,
                "topics": list(f.topics),
                "topicsExclude": list(f.topics_exclude),
                "rpoSeconds": f.rpo_seconds,
            }
            for f in plan.flows
        ],
        "listen": plan.listen,
        "pollSeconds": plan.poll_s,
        "statusFile": plan.status_file,
        "stateFile": plan.state_file,
        "secretsFile": plan.secrets_file,
    }


def plan_from_document(doc: Mapping[str, Any]) -> LagPlan:
    if doc.get("version") != PLAN_VERSION:
        raise ValueError(f"lag plan version {doc.get('version')!r}, expected {PLAN_VERSION}")
    return LagPlan(
        group=str(doc["group"]),
        storage_cluster=str(doc["storageCluster"]),
        offsets_topic=str(doc["offsetsTopic"]),
        clusters={str(a): {str(k): str(v) for k, v in c.items()} for a, c in doc["clusters"].items()},
        flows=tuple(
            LagFlow(
                name=str(f["name"]),
                source=str(f["source"]),
                target=str(f["target"]),
                connector=str(f["connector"]),
                topics=tuple(f.get("topics") or ()),
                topics_exclude=tuple(f.get("topicsExclude") or ()),
                rpo_seconds=int(f["rpoSeconds"]),
            )
            for f in doc["flows"]
        ),
        listen=str(doc.get("listen") or "127.0.0.1:0"),
        poll_s=float(doc.get("pollSeconds", DEFAULT_POLL_S)),
        status_file=doc.get("statusFile"),
        state_file=doc.get("stateFile"),
        secrets_file=doc.get("secretsFile"),
    )
