"""Every Kubernetes object validates against the API schemas (kubernetes-validate, strict mode).

Uses the `kubernetes-validate` package (requirements.lock pins it, so it is imported like any
other). The monitoring.coreos.com custom resources have no schema in that package and are left out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate as kv
import pytest

from components.platform.kubernetes.connect_objects import connect_objects
from components.platform.kubernetes.kafka_objects import kafka_objects
from components.platform.kubernetes.lag_exporter_objects import LAG_EXPORTER_SOURCES, lag_exporter_objects
from components.platform.settings import KubernetesSettings
from components.platform.topology_facts import kraft_cluster_id

from ..helpers import SASL_KUBERNETES, prod_settings, prod_topology, topology

KUBERNETES_VERSION = "1.33.0"
ROOT = Path(__file__).resolve().parents[4]


def objects() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    topo, settings = prod_topology(), prod_settings()
    for alias, cluster in topo.clusters.items():
        out += kafka_objects(cluster, settings, kraft_cluster_id("prod", alias)).all()
    sources = {p: (ROOT / p).read_text() for p in LAG_EXPORTER_SOURCES}
    for group in topo.worker_groups.values():
        out += connect_objects(group, topo, settings).all()
        out += lag_exporter_objects(group, topo, settings, sources).all()
    small = topology(SASL_KUBERNETES)
    for cluster in small.clusters.values():
        out += kafka_objects(cluster, KubernetesSettings(), "id").all()
    out += connect_objects(small.worker_groups["mm2"], small, KubernetesSettings()).all()
    out += lag_exporter_objects(small.worker_groups["mm2"], small, KubernetesSettings(), sources).all()
    return [o for o in out if not o["apiVersion"].startswith("monitoring.coreos.com/")]


@pytest.mark.parametrize("obj", objects(), ids=lambda o: f"{o['kind']}/{o['metadata']['name']}")
def test_object_matches_kubernetes_schema(obj: dict[str, Any]) -> None:
    kv.validate(obj, KUBERNETES_VERSION, strict=True)


def test_schema_check_can_fail() -> None:
    sts = next(o for o in objects() if o["kind"] == "StatefulSet")
    bad = {**sts, "spec": {**sts["spec"], "replica": 3}}
    with pytest.raises(kv.ValidationError):
        kv.validate(bad, KUBERNETES_VERSION, strict=True)
