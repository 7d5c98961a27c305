"""Stack configs shared by the topology tests, built fresh for each use."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from components.ops.mm2props import stack_config_from_yaml
from components.topology import Problem, Topology, TopologyError, parse_topology
from components.topology.tls import TlsLayout, with_local_tls

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

_DEV: dict[str, Any] = {
    "defaults": {"settings": {"refresh.topics.interval.seconds": "5"}},
    "clusters": {
        "primary": {
            "platform": "local",
            "brokers": 1,
            "port": 19092,
            "datacenter": "dc1",
            "security": {"protocol": "PLAINTEXT"},
            "topics": {"orders": {"partitions": 3}, "payments": {"partitions": 3}},
        },
        "dr": {
            "platform": "local",
            "brokers": 1,
            "port": 19192,
            "datacenter": "dc1",
            "security": {"protocol": "PLAINTEXT"},
        },
    },
    "workerGroups": {"mm2": {"cluster": "dr", "workers": 2, "restPort": 18083}},
    "flows": {
        "primary->dr": {
            "workerGroup": "mm2",
            "topics": ["orders", "payments"],
            "groups": [".*"],
            "replicationPolicy": {"class": "default"},
            "disasterRecovery": True,
            "tasksMax": 3,
        }
    },
}


def dev_config() -> dict[str, Any]:
    """The dev stack's shape (Pulumi.dev.yaml): primary->dr, workers on dr."""
    return copy.deepcopy(_DEV)


def problems(config: dict[str, Any]) -> tuple[Problem, ...]:
    try:
        parse_topology(config)
    except TopologyError as err:
        return err.problems
    raise AssertionError("expected a TopologyError")


def problem_at(config: dict[str, Any], key: str) -> Problem:
    found = problems(config)
    for problem in found:
        if problem.key == key:
            return problem
    raise AssertionError(f"no problem at {key}; got {[p.key for p in found]}")


def example(name: str) -> dict[str, Any]:
    return stack_config_from_yaml((EXAMPLES / name).read_text(encoding="utf-8"))


def example_names() -> list[str]:
    return sorted(p.name for p in EXAMPLES.glob("*.yaml"))


def load_yaml(text: str) -> Any:
    return yaml.safe_load(text)


FLOW = "mm2:flows.primary->dr"
# The stack's TLS material and the worker group's secrets file in the TLS configs below.
LAYOUT = TlsLayout("/run/unit/tls")
SECRETS = "/run/unit/connect-mm2/secrets.properties"


def secure_config() -> dict:
    """The dev topology with both clusters on the secure default (no `security` block)."""
    config = dev_config()
    for cluster in config["clusters"].values():
        cluster.pop("security", None)
    config["workerGroups"]["mm2"]["restAuth"] = True
    config["flows"]["primary->dr"]["settings"] = {"sync.group.offsets.enabled": "true"}
    return config


def tls_config(primary: str = "SASL_SSL", dr: str = "SSL", rest_tls: bool = True) -> dict[str, Any]:
    config = dev_config()
    config["clusters"]["primary"]["security"] = {"protocol": primary}
    config["clusters"]["dr"]["security"] = {"protocol": dr}
    config["workerGroups"]["mm2"].update({"restAuth": True, "restTls": rest_tls, "secretsFile": SECRETS})
    return config


def tls_topology(**kwargs: Any) -> Any:
    return with_local_tls(parse_topology(tls_config(**kwargs)), LAYOUT)


def external_target_config(exactly_once: bool = True) -> dict[str, Any]:
    """secure_config with `dr` adopted (external, SCRAM user `replicator`) and the worker group an
    existing Connect: a target whose ACLs the stack does not manage."""
    config = secure_config()
    config["clusters"]["dr"] = {
        "platform": "external",
        "bootstrap": "dr.example:9092",
        "brokers": 3,
        "security": {
            "protocol": "SASL_SSL",
            "saslMechanism": "SCRAM-SHA-512",
            "username": "replicator",
            "password": {"secret": "dr.mm2.password"},
        },
    }
    config["workerGroups"]["mm2"] = {"url": "http://connect.example:8083", "cluster": "dr"}
    config["flows"]["primary->dr"]["exactlyOnce"] = exactly_once
    return config


# The BDP of wan_config's link, as the derived settings' reasons write it.
BDP = "BDP of dc1<->dc2 (200Mbit x 50ms = 1250000 bytes)"


def wan_config(workers_in: str = "dc2", **link: Any) -> dict[str, Any]:
    """primary (dc1) -> dr (dc2) over dc1<->dc2 (50ms, 200Mbit unless given), the flow's workers
    stored on a cluster in `workers_in` (dc2: dr, dc1: primary, else a third cluster there)."""
    config = dev_config()
    config["clusters"]["dr"]["datacenter"] = "dc2"
    config["links"] = {"dc1<->dc2": {"rtt": "50ms", "bandwidth": "200Mbit", **link}}
    home = {"dc1": "primary", "dc2": "dr"}.get(workers_in)
    if home is None:
        home = "ops"
        config["clusters"]["ops"] = {
            "platform": "local",
            "port": 19292,
            "datacenter": workers_in,
            "security": {"protocol": "PLAINTEXT"},
        }
    config["workerGroups"]["mm2"]["cluster"] = home
    return config


def wan(workers_in: str = "dc2", **link: Any) -> Topology:
    return parse_topology(wan_config(workers_in, **link))


def external_cluster(datacenter: str, host: str = "example.com") -> dict[str, Any]:
    """An adopted (external) cluster's config in `datacenter`."""
    return {"platform": "external", "bootstrap": f"{host}:9092", "brokers": 3, "datacenter": datacenter}
