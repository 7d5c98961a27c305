"""Small topologies and walkers over manifest dicts."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from components.platform.settings import KubernetesSettings, kubernetes_settings
from components.topology import Topology, parse_topology

from .conftest import namespace, stack_config

SASL_KUBERNETES: dict[str, Any] = {
    "clusters": {
        "a": {
            "platform": "kubernetes",
            "brokers": 3,
            "datacenter": "dc-a",
            "security": {
                "protocol": "SASL_SSL",
                "saslMechanism": "SCRAM-SHA-512",
                "username": "mm2",
                "password": {"secret": "a.mm2.password"},
                "truststoreLocation": "/etc/mm2/tls/a/truststore.p12",
                "truststorePassword": {"secret": "a.ssl.truststore.password"},
            },
            "topics": {"orders": {"partitions": 4}},
        },
        "b": {
            "platform": "kubernetes",
            "brokers": 3,
            "datacenter": "dc-b",
            "security": {
                "protocol": "SASL_SSL",
                "saslMechanism": "SCRAM-SHA-512",
                "username": "mm2",
                "password": {"secret": "b.mm2.password"},
                "truststoreLocation": "/etc/mm2/tls/b/truststore.p12",
                "truststorePassword": {"secret": "b.ssl.truststore.password"},
            },
        },
    },
    "workerGroups": {"mm2": {"cluster": "b", "workers": 3, "restAuth": True}},
    "flows": {
        "a->b": {"workerGroup": "mm2", "topics": ["orders"], "tasksMax": 4},
        "b->a": {"workerGroup": "mm2", "topics": ["orders"], "tasksMax": 4},
    },
}

DOCKER: dict[str, Any] = {
    "clusters": {
        "kafka1": {
            "platform": "docker",
            "brokers": 1,
            "port": 29092,
            "security": {
                "protocol": "SASL_PLAINTEXT",
                "saslMechanism": "PLAIN",
                "username": "mm2",
                "password": {"secret": "kafka1.mm2.password"},
            },
            "topics": {"test": {"partitions": 2}},
        },
        "kafka2": {
            "platform": "docker",
            "brokers": 2,
            "port": 29192,
            "security": {
                "protocol": "SASL_PLAINTEXT",
                "saslMechanism": "PLAIN",
                "username": "mm2",
                "password": {"secret": "kafka2.mm2.password"},
            },
        },
    },
    "workerGroups": {"connect": {"cluster": "kafka2", "workers": 2, "restPort": 28083, "restAuth": True}},
    "flows": {"kafka1->kafka2": {"topics": ["test"]}},
}

SECRET_VALUES = {
    "a.mm2.password": "pw-a-Zq81",
    "b.mm2.password": "pw-b-Zq82",
    "a.ssl.truststore.password": "ts-a-Zq83",
    "b.ssl.truststore.password": "ts-b-Zq84",
    "a.broker.tls.password": "tls-a-Zq85",
    "b.broker.tls.password": "tls-b-Zq86",
    "mm2.rest.password": "rest-Zq87",
    "kafka1.mm2.password": "k1-Zq88",
    "kafka2.mm2.password": "k2-Zq89",
    "connect.rest.password": "rest-Zq90",
    # The stack's own users on the kubernetes clusters (generated when not given).
    "a.admin.password": "adm-a-Zq91",
    "b.admin.password": "adm-b-Zq92",
    "mm2.worker.password": "wk-Zq93",
}


def topology(config: dict[str, Any]) -> Topology:
    return parse_topology(copy.deepcopy(config))


def prod_topology() -> Topology:
    return parse_topology(namespace(stack_config("prod"), "mm2"))


def prod_settings() -> KubernetesSettings:
    return kubernetes_settings(namespace(stack_config("prod"), "mm2-platform")["kubernetes"])


def walk(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every (path, leaf) of a nested manifest."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from walk(v, f"{path}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from walk(v, f"{path}[{i}]")
    else:
        yield path, value


def parse_properties(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))
