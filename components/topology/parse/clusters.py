"""`mm2:clusters.<alias>`: where a cluster runs, its brokers, topics and client overrides."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from components.topology import settings as known
from components.topology.config_provider import is_placeholder
from components.topology.model import Cluster, Platform, TopicSpec, frozen_map
from components.topology.parse.cluster_security import parse_security
from components.topology.parse.metrics import parse_metrics_port
from components.topology.parse.mm2_settings import parse_settings
from components.topology.parse.problems import Problems, path, quoted
from components.topology.parse.values import (
    SAFE_NAME,
    as_int,
    as_mapping,
    as_str,
    check_owned,
    check_secret_literals,
    platform_field,
    string_map,
    unknown_fields,
)

CLUSTER_FIELDS = (
    "platform",
    "brokers",
    "port",
    "bootstrap",
    "internalBootstrap",
    "datacenter",
    "security",
    "topics",
    "brokerConfig",
    "client",
    "settings",
    "metricsPort",
)
TOPIC_FIELDS = ("partitions", "replicationFactor", "config")
# KRaft's controller refuses a CreateTopics request for more partitions than this
# (ReplicationControlManager.MAX_PARTITIONS_PER_BATCH, Kafka 3.6 to 4.3).
MAX_TOPIC_PARTITIONS = 10_000
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


def parse_cluster(problems: Problems, alias: str, raw: Any) -> Cluster | None:
    where = path("clusters", alias)
    ok = True
    if not SAFE_NAME.match(alias):
        problems.add(
            where,
            f'cluster alias "{alias}" is not usable in MM2 property keys and topic names.',
            'Use letters, digits, "-" and "_" only '
            '(no dots: DefaultReplicationPolicy splits remote topic names on ".").',
        )
        ok = False
    mapping = as_mapping(problems, raw, where)
    if mapping is None:
        return None
    unknown_fields(problems, mapping, CLUSTER_FIELDS, where)
    given, valid = platform_field(problems, mapping, where)
    platform = given or Platform.LOCAL
    ok = ok and valid
    brokers = _brokers(problems, mapping, where, platform)
    port, port_ok = _port(problems, mapping, where, platform, brokers)
    bootstrap, bootstrap_ok = _bootstrap(problems, mapping, where, platform)
    internal_bootstrap = _internal_bootstrap(problems, mapping, where, platform)
    ok = ok and port_ok and bootstrap_ok
    datacenter = as_str(problems, mapping["datacenter"], f"{where}.datacenter") if "datacenter" in mapping else None
    security = parse_security(problems, mapping.get("security"), f"{where}.security", alias, platform)
    topics = parse_topics(problems, mapping.get("topics"), f"{where}.topics", brokers or 1)
    broker_config = string_map(problems, mapping.get("brokerConfig"), f"{where}.brokerConfig")
    check_owned(problems, broker_config, f"{where}.brokerConfig", known.BROKER_OWNED, known.BROKER_OWNED_PREFIXES)
    check_secret_literals(problems, broker_config, f"{where}.brokerConfig")
    check_min_isr(problems, broker_config, f"{where}.brokerConfig", brokers or 1, "the cluster's brokers")
    client = string_map(problems, mapping.get("client"), f"{where}.client")
    check_client(problems, client, f"{where}.client")
    cluster_settings = parse_settings(problems, mapping.get("settings"), f"{where}.settings")
    metrics_port = parse_metrics_port(problems, mapping, where, platform, brokers)
    if not ok or brokers is None or security is None:
        return None
    return Cluster(
        alias=alias,
        platform=platform,
        brokers=brokers,
        port=port,
        bootstrap=bootstrap,
        internal_bootstrap=internal_bootstrap,
        datacenter=datacenter,
        security=security,
        topics=topics,
        broker_config=frozen_map(broker_config),
        client=frozen_map(client),
        settings=frozen_map(cluster_settings),
        metrics_port=metrics_port,
    )


def _brokers(problems: Problems, mapping: Mapping[str, Any], where: str, platform: Platform) -> int | None:
    default_brokers = {Platform.LOCAL: 1, Platform.DOCKER: 1, Platform.KUBERNETES: 3}.get(platform)
    if "brokers" in mapping:
        return as_int(problems, mapping["brokers"], f"{where}.brokers", minimum=1, maximum=64)
    if default_brokers is None:
        problems.add(
            f"{where}.brokers",
            "an external cluster needs its broker count.",
            "Set brokers to the number of brokers; it bounds replication factors MM2 may use there.",
        )
        return None
    return default_brokers


def _port(
    problems: Problems, mapping: Mapping[str, Any], where: str, platform: Platform, brokers: int | None
) -> tuple[int | None, bool]:
    """(broker 0's client port, whether the cluster may still be built)."""
    if "port" in mapping:
        port = as_int(problems, mapping["port"], f"{where}.port", minimum=1024, maximum=65535)
        if port is not None and brokers is not None and port + 2 * brokers - 1 > 65535:
            problems.add(
                f"{where}.port", f"ports {port}..{port + 2 * brokers - 1} run past 65535.", "Pick a lower port."
            )
        return port, True
    if platform in (Platform.LOCAL, Platform.DOCKER):
        problems.add(
            f"{where}.port",
            f"a {platform.value} cluster needs a port.",
            "Set port (broker i listens on port+2i, its controller on port+2i+1), e.g. port: 19092.",
        )
        return None, False
    return None, True


def _bootstrap(
    problems: Problems, mapping: Mapping[str, Any], where: str, platform: Platform
) -> tuple[str | None, bool]:
    """(the configured bootstrap address, whether the cluster may still be built)."""
    if "bootstrap" in mapping:
        bootstrap = as_str(problems, mapping["bootstrap"], f"{where}.bootstrap")
        if platform in (Platform.LOCAL, Platform.DOCKER):
            problems.add(
                f"{where}.bootstrap",
                f"a {platform.value} cluster's address follows from its port.",
                "Remove bootstrap, or use platform: external for a cluster you do not deploy.",
            )
        return bootstrap, True
    if platform is Platform.EXTERNAL:
        problems.add(
            f"{where}.bootstrap",
            "an external cluster needs its bootstrap address.",
            'Set bootstrap, e.g. "kafka-1.example.com:9092,kafka-2.example.com:9092".',
        )
        return None, False
    return None, True


def _internal_bootstrap(problems: Problems, mapping: Mapping[str, Any], where: str, platform: Platform) -> str | None:
    if "internalBootstrap" not in mapping:
        return None
    address = as_str(problems, mapping["internalBootstrap"], f"{where}.internalBootstrap")
    if platform in (Platform.LOCAL, Platform.DOCKER):
        problems.add(
            f"{where}.internalBootstrap",
            f"a {platform.value} cluster has one address, on this machine's loopback.",
            "Remove internalBootstrap.",
        )
    elif "bootstrap" not in mapping:
        problems.add(
            f"{where}.internalBootstrap",
            "it is the address for the stack's pods beside `bootstrap`, the one for everything else.",
            "Set bootstrap too (the address reachable from where pulumi up runs), or remove internalBootstrap.",
        )
    return address


def check_client(problems: Problems, client: Mapping[str, str], where: str) -> None:
    for k in client:
        item = f"{where}{quoted(k)}"
        prefix = next((p for p in known.CLIENT_PREFIXES if k.startswith(p)), None)
        if prefix is None:
            hint = known.suggest(k, [p + k for p in known.CLIENT_PREFIXES])
            did = f' e.g. "{hint}"' if hint else ""
            problems.add(
                item,
                f'client override "{k}" does not say which client it is for.',
                f"Prefix it with producer., consumer. or admin.{did}.",
            )
            continue
        reason = known.owned_reason(k[len(prefix) :], known.CLIENT_OWNED, known.CLIENT_OWNED_PREFIXES)
        if reason is not None:
            problems.add(item, f'"{k}" is owned by a typed field.', f"Remove it; set {reason}.")
        elif known.looks_secret(k) and not is_placeholder(client[k]):
            problems.add(
                item,
                "a secret is given in plain text in client overrides.",
                "Credentials belong in `security` as {secret: ...} references.",
            )


def parse_topics(problems: Problems, raw: Any, where: str, brokers: int) -> tuple[TopicSpec, ...]:
    if raw is None:
        return ()
    specs: list[TopicSpec] = []
    entries: list[tuple[str, Any, str]]
    if isinstance(raw, Mapping):
        entries = [(str(name), value, f"{where}.{name}") for name, value in raw.items()]
    elif isinstance(raw, Sequence) and not isinstance(raw, str):
        entries = [(str(name), None, f"{where}[{i}]") for i, name in enumerate(raw)]
    else:
        problems.add(
            where,
            f"expected a map of topic name to settings, got {raw!r}.",
            "Write e.g. topics: {orders: {partitions: 3}}.",
        )
        return ()
    for name, value, key in entries:
        if not _TOPIC_NAME.match(name) or name in (".", ".."):
            problems.add(
                key,
                f"{name!r} is not a legal Kafka topic name.",
                'Use letters, digits, ".", "_" and "-" (at most 249).',
            )
            continue
        spec = as_mapping(problems, value, key) or {}
        unknown_fields(problems, spec, TOPIC_FIELDS, key)
        partitions = as_int(problems, spec.get("partitions", 1), f"{key}.partitions", minimum=1)
        if partitions is not None and partitions > MAX_TOPIC_PARTITIONS:
            problems.add(
                f"{key}.partitions",
                f"{partitions} partitions is above the {MAX_TOPIC_PARTITIONS} Kafka creates in one request "
                "(the controller refuses more as an excessively large number of partitions per request).",
                f"Use at most {MAX_TOPIC_PARTITIONS}; a few per consumer of the topic is usual.",
            )
            partitions = None
        rf = as_int(problems, spec.get("replicationFactor", min(3, brokers)), f"{key}.replicationFactor", minimum=1)
        if rf is not None and rf > brokers:
            problems.add(
                f"{key}.replicationFactor",
                f"replication factor {rf} is above the cluster's {brokers} broker(s).",
                f"Use at most {brokers}, or add brokers.",
            )
            rf = None
        config = string_map(problems, spec.get("config"), f"{key}.config")
        if rf is not None:
            check_min_isr(problems, config, f"{key}.config", rf, "the topic's replicas")
        if partitions is not None and rf is not None:
            specs.append(TopicSpec(name=name, partitions=partitions, replication_factor=rf, config=frozen_map(config)))
    return tuple(sorted(specs, key=lambda s: s.name))


def check_min_isr(problems: Problems, config: Mapping[str, str], where: str, replicas: int, what: str) -> None:
    """`min.insync.replicas` must leave one replica to spare: at `replicas` (more than one) a single
    broker down, for a restart, a roll or a lost node, stops every `acks=all` write, and a roll
    could never start (it waits for no partition to be at its minimum)."""
    raw = config.get("min.insync.replicas")
    if raw is None:
        return
    key = f"{where}.min.insync.replicas"
    try:
        value = int(raw)
    except ValueError:
        problems.add(key, f"{raw!r} is not a whole number.", 'Write a number of replicas, e.g. "2".')
        return
    if value < 1 or value > replicas or (value == replicas and replicas > 1):
        usual = "2 with 3 replicas is usual" if replicas >= 3 else "or add brokers"
        problems.add(
            key,
            f"min.insync.replicas {value} with {replicas} of {what}: "
            + (
                "no write could ever be acknowledged."
                if value > replicas or value < 1
                else "one broker down (a restart, a roll, a lost node) stops every acks=all write."
            ),
            f"Use at most {max(replicas - 1, 1)} ({usual}).",
        )
