"""What the validation reads of the stack outputs: client access per cluster and the flows to check.

A view of the one contract (`components/outputs/contract.py`), read by the one loader
(`components/outputs/loader.py`): from a saved JSON file the stage needs neither Pulumi nor
anything else of the program. Here the exported librdkafka client settings become Java client
properties for Spark's Kafka source, and flows paused or disabled on purpose are left out.
No Spark, no Kafka I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.outputs.contract import ClusterExport, FlowExport, StackExports
from components.outputs.loader import read_exports_file

SECRET_HINTS = ("password", "secret", "jaas", "token", "key.password", "keystore", "truststore.password")


@dataclass(frozen=True)
class ClusterAccess:
    alias: str
    bootstrap: str
    security_protocol: str = "PLAINTEXT"
    # Java client property names (`sasl.mechanism`, `ssl.truststore.location`, ...) from optional
    # `client`/`sasl`/`ssl` output maps; may hold secrets, so never printed (see `redacted`).
    client: Mapping[str, str] = field(default_factory=dict)

    def java_client_properties(self) -> dict[str, str]:
        """Properties for a Java Kafka client (Spark's Kafka source takes them prefixed `kafka.`)."""
        return {"bootstrap.servers": self.bootstrap, "security.protocol": self.security_protocol, **self.client}

    def librdkafka_config(self) -> dict[str, Any]:
        """confluent-kafka settings. Java-only keys (JAAS, keystores) have no librdkafka twin."""
        conf: dict[str, Any] = {"bootstrap.servers": self.bootstrap, "security.protocol": self.security_protocol}
        for key, value in self.client.items():
            if key in _JAVA_TO_LIBRDKAFKA:
                conf[_JAVA_TO_LIBRDKAFKA[key]] = value
            elif key == "sasl.jaas.config":
                user, password = _jaas_credentials(value)
                if user is not None:
                    conf["sasl.username"], conf["sasl.password"] = user, password
        return conf

    def describe(self) -> str:
        """One line for people: where the cluster is and how the stage authenticates, no secrets."""
        how = [self.security_protocol]
        if "sasl.mechanism" in self.client:
            how.append(self.client["sasl.mechanism"])
        if "ssl.truststore.location" in self.client:
            how.append("stack CA")
        return f"{self.bootstrap} ({', '.join(how)})"

    def redacted(self) -> dict[str, str]:
        return {
            k: ("***" if any(h in k.lower() for h in SECRET_HINTS) else v)
            for k, v in self.java_client_properties().items()
        }


_JAVA_TO_LIBRDKAFKA = {
    "sasl.mechanism": "sasl.mechanisms",
    "ssl.truststore.location": "ssl.ca.location",  # PEM expected by librdkafka; see docs
    "ssl.endpoint.identification.algorithm": "ssl.endpoint.identification.algorithm",
}


_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def java_client_settings(client: Mapping[str, str]) -> dict[str, str]:
    """The stack exports librdkafka settings (`sasl.username`, `sasl.password`, `sasl.mechanism(s)`);
    Spark's Kafka source is a Java client and needs `sasl.mechanism` plus a `sasl.jaas.config`.
    Java-style maps pass through unchanged."""
    out = {
        k: v
        for k, v in client.items()
        if k not in ("sasl.username", "sasl.password", "sasl.mechanisms", "ssl.ca.location")
    }
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

        def quote(value: str) -> str:
            return value.replace("\\", "\\\\").replace('"', '\\"')

        out["sasl.jaas.config"] = f'{module} required username="{quote(user)}" password="{quote(password)}";'
    return out


def _jaas_credentials(jaas: str) -> tuple[str | None, str | None]:
    import re

    user = re.search(r'username="([^"]*)"', jaas)
    password = re.search(r'password="([^"]*)"', jaas)
    return (user.group(1) if user else None, password.group(1) if password else None)


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


def offset_stores(exports: StackExports) -> dict[str, OffsetStore]:
    # Outputs written before the contract carried `offsetTopic`: the stack's default name
    # (`workerGroups.<name>.offsetTopic`, parse/worker_groups.py).
    return {
        name: OffsetStore(g.cluster, g.offset_topic or f"mm2-{name}-offsets")
        for name, g in exports.connect.items()
        if g.cluster
    }


def _cluster_access(c: ClusterExport) -> ClusterAccess:
    client = java_client_settings({str(k): str(v) for k, v in c.client.items()})
    if c.sasl.get("mechanism"):
        client.setdefault("sasl.mechanism", c.sasl["mechanism"])
    if c.sasl.get("jaasConfig"):
        client.setdefault("sasl.jaas.config", c.sasl["jaasConfig"])
    return ClusterAccess(alias=c.alias, bootstrap=c.bootstrap, security_protocol=c.security_protocol, client=client)


def _validated(f: FlowExport) -> bool:
    # Paused or stopped on purpose (mm2:flows.<flow>.state): it is not meant to catch up.
    return f.enabled and f.desired_states.get("source", "RUNNING") == "RUNNING"


def validation_view(exports: StackExports) -> ValidationScope:
    flows = [f for f in exports.flows.values() if _validated(f)]
    return ValidationScope(
        clusters={alias: _cluster_access(c) for alias, c in exports.clusters.items()},
        flows=tuple(sorted(flows, key=lambda fl: fl.name)),
        offset_stores=offset_stores(exports),
    )


def read_outputs_file(path: str | Path) -> ValidationScope:
    return validation_view(read_exports_file(path))
