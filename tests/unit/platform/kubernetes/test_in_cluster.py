"""components/platform/kubernetes/in_cluster.py: in-cluster clients sent out through a public listener."""

from __future__ import annotations

import copy
from typing import Any

from components.platform.kubernetes.in_cluster import public_bootstrap_notes
from components.platform.settings import kubernetes_settings

from ..helpers import SASL_KUBERNETES, topology


def config(**clusters: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(SASL_KUBERNETES)
    for alias, fields in clusters.items():
        out["clusters"][alias].update(fields)
    return out


def test_a_public_bootstrap_used_by_groups_beside_it_names_the_service_to_set() -> None:
    topo = topology(config(b={"bootstrap": "b.example.com:9094"}))
    (note,) = public_bootstrap_notes(topo, kubernetes_settings({"namespace": "kafka"}))
    assert note.startswith("mm2:clusters.b.internalBootstrap is unset, so the workers of mm2")
    assert note.endswith("Set internalBootstrap: b-kafka-bootstrap.kafka.svc:9092.")


def test_no_note_with_an_internal_bootstrap_or_a_group_in_another_kubernetes_cluster() -> None:
    given = topology(config(b={"bootstrap": "b.example.com:9094", "internalBootstrap": "b-kafka-bootstrap:9092"}))
    assert public_bootstrap_notes(given, kubernetes_settings({})) == []
    elsewhere = kubernetes_settings(
        {"clusters": {"b": {"context": "east"}}, "workerGroups": {"mm2": {"context": "west"}}}
    )
    assert public_bootstrap_notes(topology(config(b={"bootstrap": "b.example.com:9094"})), elsewhere) == []
