"""Shared by the Kubernetes object tests: the objects of the SASL_KUBERNETES topology, and a
check that no object holds a secret literal."""

from __future__ import annotations

from typing import Any

from components.platform.kubernetes.connect_objects import ConnectObjects, connect_objects
from components.platform.kubernetes.kafka_objects import KafkaObjects, kafka_objects
from components.platform.settings import KubernetesSettings
from components.platform.topology_facts import kraft_cluster_id

from ..helpers import SASL_KUBERNETES, SECRET_VALUES, parse_properties, topology, walk

SETTINGS = KubernetesSettings(namespace="kafka")


def kafka(alias: str = "a", settings: KubernetesSettings = SETTINGS) -> KafkaObjects:
    topo = topology(SASL_KUBERNETES)
    return kafka_objects(topo.clusters[alias], settings, kraft_cluster_id("unit", alias))


def connect(settings: KubernetesSettings = SETTINGS) -> ConnectObjects:
    topo = topology(SASL_KUBERNETES)
    return connect_objects(topo.worker_groups["mm2"], topo, settings)


def container(obj: dict[str, Any]) -> dict[str, Any]:
    [main] = obj["spec"]["template"]["spec"]["containers"]
    return main


SECRET_LIKE = ("password", "jaas", "secret")


def secret_leaks(objs: tuple[dict[str, Any], ...]) -> list[str]:
    leaks = []
    for obj in objs:
        for path, leaf in walk(obj):
            text = str(leaf)
            if any(value in text for value in SECRET_VALUES.values()):
                leaks.append(f"{obj['kind']} {path}: a secret value")
        if obj["kind"] == "ConfigMap":
            for key, text in obj["data"].items():
                if not key.endswith(".properties"):
                    continue
                for k, v in parse_properties(text).items():
                    # A JAAS config naming no password (SCRAM's on a broker: the users are in
                    # the metadata log) holds no secret.
                    holds = "jaas" not in k.lower() or "password" in v.lower()
                    if any(s in k.lower() for s in SECRET_LIKE) and holds and "${file:" not in v:
                        leaks.append(f"ConfigMap {key}: {k} is not a placeholder")
        if obj["kind"] in ("StatefulSet", "Deployment"):
            pod = obj["spec"]["template"]["spec"]
            for c in pod["containers"] + pod.get("initContainers", []):
                for env in c.get("env", []):
                    if any(s in env["name"].lower() for s in SECRET_LIKE) and "value" in env:
                        leaks.append(f"{obj['kind']} env {env['name']} holds a literal")
    return leaks
