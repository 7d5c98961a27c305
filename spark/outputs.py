"""The stack outputs the validation reads (docs/architecture.md, "Stack outputs").

Pure: parses the JSON `pulumi stack output --json --show-secrets` prints into frozen
dataclasses, and turns a cluster's outputs into client settings. No Spark, no Kafka I/O except
:func:`load_stack_outputs`, which runs `bin/pulumi`.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SECRET_HINTS = ("password", "secret", "jaas", "token", "key.password", "keystore", "truststore.password")


class OutputsError(ValueError):
    """The stack outputs do not match the contract; the message lists every problem."""


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
class FlowSpec:
    name: str  # "primary->dr"
    source: str
    target: str
    topics: Mapping[str, str]  # source topic -> remote topic on the target
    checkpoints_topic: str
    offset_syncs_topic: str
    heartbeats_topic: str
    exactly_once: bool = False
    offset_lag_max: int = 100
    groups: tuple[str, ...] = ()
    separator: str = "."
    name_preserving: bool = False  # IdentityReplicationPolicy: remote names equal source names
    offset_syncs_cluster: str = ""  # alias of the cluster holding the offset-syncs topic

    @property
    def replicated_heartbeats_topic(self) -> str:
        # Every policy, Identity included, renames heartbeats: `<source><sep>heartbeats`.
        return f"{self.source}{self.separator}heartbeats"

    def source_topic_of(self, remote: str) -> str | None:
        for src, rem in self.topics.items():
            if rem == remote:
                return src
        return None


@dataclass(frozen=True)
class StackOutputs:
    clusters: Mapping[str, ClusterAccess]
    flows: tuple[FlowSpec, ...]


def _separator(flow_name: str, source: str, checkpoints_topic: str, explicit: Any) -> str:
    if isinstance(explicit, str) and explicit:
        return explicit
    # `<source><sep>checkpoints<sep>internal` names the separator when the outputs do not.
    rest = checkpoints_topic[len(source) :] if checkpoints_topic.startswith(source) else ""
    if rest.endswith("internal") and "checkpoints" in rest:
        sep = rest[: rest.index("checkpoints")]
        if sep:
            return sep
    return "."


def _offset_syncs_cluster(topic: str, source: str, target: str, sep: str, explicit: Any) -> str:
    if isinstance(explicit, str) and explicit:
        return explicit
    # The topic names the cluster it does NOT live on (offset-syncs.topic.location).
    return target if topic == f"mm2-offset-syncs{sep}{source}{sep}internal" else source


def parse_outputs(data: Mapping[str, Any]) -> StackOutputs:
    problems: list[str] = []
    clusters: dict[str, ClusterAccess] = {}
    raw_clusters = data.get("clusters")
    if not isinstance(raw_clusters, Mapping) or not raw_clusters:
        problems.append('"clusters" is missing or empty')
        raw_clusters = {}
    for alias, c in raw_clusters.items():
        if not isinstance(c, Mapping) or not c.get("bootstrap"):
            problems.append(f'clusters["{alias}"] has no "bootstrap"')
            continue
        client = java_client_settings({str(k): str(v) for k, v in dict(c.get("client") or {}).items()})
        sasl = c.get("sasl")
        if isinstance(sasl, Mapping):
            if sasl.get("mechanism"):
                client.setdefault("sasl.mechanism", str(sasl["mechanism"]))
            if sasl.get("jaasConfig"):
                client.setdefault("sasl.jaas.config", str(sasl["jaasConfig"]))
        clusters[alias] = ClusterAccess(
            alias=alias,
            bootstrap=str(c["bootstrap"]),
            security_protocol=str(c.get("securityProtocol") or "PLAINTEXT"),
            client=client,
        )

    flows: list[FlowSpec] = []
    raw_flows = data.get("flows")
    if not isinstance(raw_flows, Mapping):
        problems.append('"flows" is missing')
        raw_flows = {}
    for name, f in raw_flows.items():
        if not isinstance(f, Mapping):
            problems.append(f'flows["{name}"] is not an object')
            continue
        if f.get("enabled") is False:
            continue
        if str(dict(f.get("desiredStates") or {}).get("source", "RUNNING")) != "RUNNING":
            # Paused or stopped on purpose (mm2:flows.<flow>.state): it is not meant to catch up.
            continue
        missing = [
            k
            for k in ("source", "target", "topics", "checkpointsTopic", "offsetSyncsTopic", "heartbeatsTopic")
            if k not in f
        ]
        if missing:
            problems.append(f'flows["{name}"] lacks {", ".join(missing)}')
            continue
        source, target = str(f["source"]), str(f["target"])
        for alias in (source, target):
            if alias not in clusters and isinstance(raw_clusters, Mapping) and alias not in raw_clusters:
                problems.append(f'flows["{name}"] refers to cluster "{alias}", which is not in "clusters"')
        topics = {str(k): str(v) for k, v in dict(f["topics"]).items()}
        sep = _separator(name, source, str(f["checkpointsTopic"]), f.get("separator"))
        name_preserving = bool(f.get("namePreserving", bool(topics) and all(k == v for k, v in topics.items())))
        flows.append(
            FlowSpec(
                name=str(name),
                source=source,
                target=target,
                topics=topics,
                checkpoints_topic=str(f["checkpointsTopic"]),
                offset_syncs_topic=str(f["offsetSyncsTopic"]),
                heartbeats_topic=str(f["heartbeatsTopic"]),
                exactly_once=bool(f.get("exactlyOnce", False)),
                offset_lag_max=int(f.get("offsetLagMax", 100)),
                groups=tuple(str(g) for g in f.get("groups") or ()),
                separator=sep,
                name_preserving=name_preserving,
                offset_syncs_cluster=_offset_syncs_cluster(
                    str(f["offsetSyncsTopic"]), source, target, sep, f.get("offsetSyncsCluster")
                ),
            )
        )
    if problems:
        raise OutputsError(
            "stack outputs do not match the contract in docs/architecture.md:\n  - " + "\n  - ".join(problems)
        )
    return StackOutputs(clusters=clusters, flows=tuple(sorted(flows, key=lambda fl: fl.name)))


def read_outputs_file(path: str | Path) -> StackOutputs:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise OutputsError(f"cannot read stack outputs from {path}: {exc}") from exc
    return parse_outputs(data)


def load_stack_outputs(stack: str) -> StackOutputs:
    """`bin/pulumi stack output --json --show-secrets` for `stack` (secrets stay in memory)."""
    cmd = [str(ROOT / "bin" / "pulumi"), "stack", "output", "--json", "--show-secrets"]
    if stack:
        cmd += ["--stack", stack]  # otherwise the currently selected stack
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    if out.returncode != 0:
        which = f"stack {stack!r}" if stack else "the selected stack"
        raise OutputsError(f"`pulumi stack output` for {which} failed ({out.returncode}): {out.stderr.strip()[-2000:]}")
    data = json.loads(out.stdout or "{}")
    if not data:
        raise OutputsError(f"stack {stack or '(selected)'} has no outputs: run `pulumi up` first")
    return parse_outputs(data)
