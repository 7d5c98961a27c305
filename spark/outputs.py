"""What the validation reads of the stack outputs: client access per cluster and the flows to check.

A view of the one contract (`components/outputs/contract.py`), read by the one loader
(`components/outputs/loader.py`): from a saved JSON file the stage needs neither Pulumi nor
anything else of the program. Here the exported librdkafka client settings become Java client
properties for Spark's Kafka source, and flows paused or disabled on purpose are left out.
No Spark, no Kafka I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.outputs.contract import ClusterExport, FlowExport, PairExport, StackExports
from components.outputs.loader import read_exports_file

SECRET_HINTS = ("password", "secret", "jaas", "token", "key.password", "keystore", "truststore.password")


@dataclass(frozen=True)
class ClusterAccess:
    """How the stage reaches one cluster. `client` holds the exported librdkafka settings
    (`sasl.username`, `sasl.password`, `ssl.ca.location`, ...): the one source of the credentials.
    The Java properties of Spark's Kafka source are derived from them, never the other way, so a
    password reaches both clients exactly as exported, whatever it contains. Both may hold secrets,
    so they are never printed (see `redacted`)."""

    alias: str
    bootstrap: str
    security_protocol: str = "PLAINTEXT"
    client: Mapping[str, str] = field(default_factory=dict, repr=False)
    # Hand-written outputs' Java SASL settings (`sasl.mechanism`, `sasl.jaas.config`), which win
    # over the derived ones on the Java side; the program never writes them.
    java_only: Mapping[str, str] = field(default_factory=dict, repr=False)

    def java_client_properties(self) -> dict[str, str]:
        """Properties for a Java Kafka client (Spark's Kafka source takes them prefixed `kafka.`)."""
        return {
            "bootstrap.servers": self.bootstrap,
            "security.protocol": self.security_protocol,
            **java_client_settings(self.client),
            **self.java_only,
        }

    def librdkafka_config(self) -> dict[str, Any]:
        """confluent-kafka settings: the exported ones as they are."""
        conf: dict[str, Any] = {"bootstrap.servers": self.bootstrap, "security.protocol": self.security_protocol}
        for key, value in self.client.items():
            conf["sasl.mechanisms" if key == "sasl.mechanism" else key] = value
        if "sasl.mechanisms" not in conf and "sasl.mechanism" in self.java_only:
            conf["sasl.mechanisms"] = self.java_only["sasl.mechanism"]
        if "sasl.username" not in conf and "sasl.jaas.config" in self.java_only:
            conf.update(_hand_written_credentials(self.java_only["sasl.jaas.config"]))
        return conf

    def describe(self) -> str:
        """One line for people: where the cluster is and how the stage authenticates, no secrets."""
        how = [self.security_protocol]
        java = self.java_client_properties()
        if "sasl.mechanism" in java:
            how.append(java["sasl.mechanism"])
        if "ssl.truststore.location" in java:
            how.append("stack CA")
        return f"{self.bootstrap} ({', '.join(how)})"

    def redacted(self) -> dict[str, str]:
        return {
            k: ("***" if any(h in k.lower() for h in SECRET_HINTS) else v)
            for k, v in self.java_client_properties().items()
        }


_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
# librdkafka-only keys: each becomes its Java twin below, or has none.
_LIBRDKAFKA_ONLY = ("sasl.username", "sasl.password", "sasl.mechanisms", "ssl.ca.location")


def jaas_quote(value: str) -> str:
    """A JAAS option value's quoted-string body: Kafka's JaasConfig tokenizer undoes exactly this.

    The twin of components/topology/jaas_quoting.py, which the stage may not import (the house
    rules' SPARK_MAY_IMPORT); tests/unit/spark/test_outputs.py pins that the two agree."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def java_client_settings(client: Mapping[str, str]) -> dict[str, str]:
    """Java client properties from librdkafka settings (one direction: Spark's Kafka source is a
    Java client and needs `sasl.mechanism` plus a `sasl.jaas.config`, and a PEM truststore where
    librdkafka has `ssl.ca.location`). Other keys pass through unchanged."""
    out = {k: v for k, v in client.items() if k not in _LIBRDKAFKA_ONLY}
    if client.get("ssl.ca.location"):
        # librdkafka's PEM CA file: a Java client reads it as a PEM truststore (no password).
        out["ssl.truststore.type"] = "PEM"
        out["ssl.truststore.location"] = client["ssl.ca.location"]
    mechanism = client.get("sasl.mechanism") or client.get("sasl.mechanisms")
    if mechanism:
        out["sasl.mechanism"] = mechanism
    user, password = client.get("sasl.username"), client.get("sasl.password")
    if user is not None and password is not None and "sasl.jaas.config" not in client:
        module = _LOGIN_MODULES.get((mechanism or "PLAIN").upper(), _LOGIN_MODULES["PLAIN"])
        out["sasl.jaas.config"] = f'{module} required username="{jaas_quote(user)}" password="{jaas_quote(password)}";'
    return out


# `name="quoted \"body\""` or `name=bare`, as Kafka's JaasConfig reads an option.
_JAAS_OPTION = re.compile(r'(?P<name>[\w.\-]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s;"]+))')


def _hand_written_credentials(jaas: str) -> dict[str, str]:
    """librdkafka credentials from a hand-written `sasl.jaas.config`, escapes undone. Only for
    outputs written by hand: the program's own outputs carry librdkafka settings."""
    options = {
        m["name"]: (re.sub(r"\\(.)", r"\1", m["quoted"]) if m["quoted"] is not None else m["bare"])
        for m in _JAAS_OPTION.finditer(jaas)
    }
    return {f"sasl.{name}": options[name] for name in ("username", "password") if name in options}


@dataclass(frozen=True)
class OffsetStore:
    """A worker group's offsets topic and the cluster (alias) that holds it."""

    cluster: str
    topic: str


@dataclass(frozen=True)
class ValidationScope:
    """What one validation run covers: Java client access per cluster, and the flows to check
    (enabled, source connector declared running), as the contract exports them."""

    clusters: Mapping[str, ClusterAccess]
    flows: tuple[FlowExport, ...]
    # worker group -> where it keeps its connectors' source offsets (MM2's progress, spark.progress)
    offset_stores: Mapping[str, OffsetStore] = field(default_factory=dict)
    # worker group -> its lag exporter's URL (`connect.<group>.lagUrl`; spark.expired), where it has one
    lag_urls: Mapping[str, str] = field(default_factory=dict)
    # every enabled flow, paused and stopped ones too: the topics the topology can have made (loops)
    enabled_flows: tuple[FlowExport, ...] = ()
    # cluster pairs (`failover`): what the passive side took past its standby flow's cut (spark.divergence)
    pairs: tuple[PairExport, ...] = ()


def offset_stores(exports: StackExports) -> dict[str, OffsetStore]:
    # Outputs written before the contract carried `offsetTopic`: the stack's default name
    # (`workerGroups.<name>.offsetTopic`, parse/worker_groups.py).
    return {
        name: OffsetStore(g.cluster, g.offset_topic or f"mm2-{name}-offsets")
        for name, g in exports.connect.items()
        if g.cluster
    }


def _cluster_access(c: ClusterExport) -> ClusterAccess:
    java_only = {
        java: str(c.sasl[key])
        for key, java in (("mechanism", "sasl.mechanism"), ("jaasConfig", "sasl.jaas.config"))
        if c.sasl.get(key)
    }
    return ClusterAccess(
        alias=c.alias,
        bootstrap=c.bootstrap,
        security_protocol=c.security_protocol,
        client={str(k): str(v) for k, v in c.client.items()},
        java_only=java_only,
    )


def _validated(f: FlowExport) -> bool:
    # Paused or stopped on purpose (mm2:flows.<flow>.state): it is not meant to catch up.
    return f.enabled and f.desired_states.get("source", "RUNNING") == "RUNNING"


def validation_view(exports: StackExports) -> ValidationScope:
    flows = [f for f in exports.flows.values() if _validated(f)]
    return ValidationScope(
        clusters={alias: _cluster_access(c) for alias, c in exports.clusters.items()},
        flows=tuple(sorted(flows, key=lambda fl: fl.name)),
        offset_stores=offset_stores(exports),
        lag_urls={name: g.lag_url for name, g in exports.connect.items() if g.lag_url},
        enabled_flows=tuple(sorted((f for f in exports.flows.values() if f.enabled), key=lambda fl: fl.name)),
        pairs=tuple(pair for _name, pair in sorted(exports.pairs.items())),
    )


def read_outputs_file(path: str | Path) -> ValidationScope:
    return validation_view(read_exports_file(path))
