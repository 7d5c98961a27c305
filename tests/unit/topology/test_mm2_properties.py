"""components/topology/mm2_properties.py: mm2.properties syntax, import, export and round trips."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from components.ops.mm2props import run_cli, stack_yaml
from components.topology import TopologyError, flow_connectors, parse_topology
from components.topology.connectors import TUNED_SOURCE_CLIENT, flow_tasks_max
from components.topology.java_properties import parse_properties
from components.topology.mm2_properties import EXACTLY_ONCE_SOURCE, export_properties, import_properties
from components.topology.model import Flow, Topology
from tests.unit.topology.helpers import dev_config, example, example_names

ACTIVE_PASSIVE = r"""
# ── Cluster aliases
clusters = us-east, us-west
   # indented comment
us-east.bootstrap.servers = kafka-east-1:9092,kafka-east-2:9092,kafka-east-3:9092
us-west.bootstrap.servers : kafka-west-1:9092,\
    kafka-west-2:9092,kafka-west-3:9092
! bang comment
us-east.security.protocol = SASL_SSL
us-east.sasl.mechanism = SCRAM-SHA-512
us-east.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required \
  username="mm2-user" password="mm2-secret";
us-east.ssl.truststore.location = /etc/kafka/certs/east-truststore.jks
us-east.ssl.truststore.password = changeit
us-east.consumer.isolation.level = read_committed
us-west.producer.compression.type gzip
us-east->us-west.enabled = true
us-west->us-east.enabled = false
us-east->us-west.topics = .*
us-east->us-west.topics.blacklist = .*\\.internal, .*-changelog, __.*
replication.factor = 3
us-east->us-west.sync.group.offsets.enabled = true
emit.checkpoints.interval.seconds = 10
listeners = http://localhost:8080
"""


ROOT = Path(__file__).resolve().parents[3]


def test_import_active_passive() -> None:
    result = import_properties(ACTIVE_PASSIVE)
    assert result.config == {
        "defaults": {"settings": {"replication.factor": "3", "emit.checkpoints.interval.seconds": "10"}},
        "clusters": {
            "us-east": {
                "platform": "external",
                "bootstrap": "kafka-east-1:9092,kafka-east-2:9092,kafka-east-3:9092",
                "security": {
                    "protocol": "SASL_SSL",
                    "saslMechanism": "SCRAM-SHA-512",
                    "username": "mm2-user",
                    "password": {"secret": "us-east.sasl.password"},
                    "truststoreLocation": "/etc/kafka/certs/east-truststore.jks",
                    "truststorePassword": {"secret": "us-east.ssl.truststore.password"},
                },
                "client": {"consumer.isolation.level": "read_committed"},
                "brokers": 3,
            },
            "us-west": {
                "platform": "external",
                "bootstrap": "kafka-west-1:9092,kafka-west-2:9092,kafka-west-3:9092",
                "client": {"producer.compression.type": "gzip"},
                "brokers": 3,
            },
        },
        "workerGroups": {"mm2": {"cluster": "us-west", "platform": "kubernetes", "workers": 1}},
        "flows": {
            "us-east->us-west": {
                "enabled": True,
                "topics": [".*"],
                "topicsExclude": [r".*\.internal", ".*-changelog", "__.*"],
                "disasterRecovery": True,
            },
            "us-west->us-east": {"enabled": False},
        },
    }
    notes = "\n".join(result.notes)
    assert '"topics.blacklist" was removed in Kafka 4; imported as its replacement "topics.exclude"' in notes
    assert "listeners: dedicated-mode worker setting" in notes
    assert result.secret_commands == (
        "pulumi config set --secret --path 'mm2:secrets[\"us-east.sasl.password\"]' "
        "'<value of us-east.sasl.jaas.config>'",
        "pulumi config set --secret --path 'mm2:secrets[\"us-east.ssl.truststore.password\"]' "
        "'<value of us-east.ssl.truststore.password>'",
    )
    rendered = stack_yaml(result.config) + "\n".join(result.notes) + "\n".join(result.secret_commands)
    assert "mm2-secret" not in rendered and "changeit" not in rendered


def test_import_reports_unknown_keys_with_suggestions_and_inline_comments() -> None:
    text = (
        "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\n"
        "a->b.enabled = true # disabled by default\n"
        "a->b.emit.heartbeats = false\n"
        "sync.topic.configs.exclude = x\n"
    )
    with pytest.raises(TopologyError) as caught:
        import_properties(text)
    by_key = {p.key: p for p in caught.value.problems}
    assert "no end-of-line comments" in by_key["mm2.properties:a->b.enabled"].fix
    assert 'Did you mean "emit.heartbeats.enabled"' in by_key["mm2.properties:a->b.emit.heartbeats"].fix
    assert "mm2.properties:sync.topic.configs.exclude" in by_key


def test_import_whitelist_becomes_topics() -> None:
    text = (
        "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\na->b.enabled = true\n"
        "a->b.topics.whitelist = orders.*\n"
    )
    assert import_properties(text).config["flows"]["a->b"]["topics"] == ["orders.*"]


def test_import_keeps_config_provider_placeholders_as_secret_refs() -> None:
    text = (
        "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\n"
        "a.security.protocol = SASL_PLAINTEXT\na.sasl.mechanism = PLAIN\n"
        'a.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username="u" '
        'password="${file:/opt/secrets.properties:a.pw}";\n'
        "a->b.enabled = true\n"
    )
    result = import_properties(text)
    assert result.config["clusters"]["a"]["security"]["password"] == {"secret": "a.pw"}
    assert result.config["workerGroups"]["mm2"]["secretsFile"] == "/opt/secrets.properties"
    assert result.secret_commands == ()


# An example plus the flow fields dedicated MM2 has no key for (written as `#@` lines).
WITH_STACK_ONLY = "active-passive.yaml+reverseHeartbeats+connectorSettings"


def stack_config(name: str) -> dict[str, Any]:
    if name != WITH_STACK_ONLY:
        return example(name)
    config = example("active-passive.yaml")
    flow = config["flows"]["primary->dr"]
    flow["reverseHeartbeats"] = True
    insert = "org.apache.kafka.connect.transforms.InsertHeader"
    flow["connectorSettings"] = {
        "heartbeat": {"transforms": "beat", "transforms.beat.type": insert, "transforms.beat.header": "hb"},
        "source": {
            "transforms": "tag",
            "transforms.tag.type": insert,
            "transforms.tag.header": "from",
            "transforms.tag.value.literal": "primary = dc1",
        },
    }
    return config


# mm2.properties round trips of the local examples: the importer makes every cluster `external`
# (by design: it cannot know where they run), which drops a kubernetes cluster's two addresses
# (bootstrap, internalBootstrap) to one and its reverse heartbeats with a note.
LOCAL_EXAMPLES = [name for name in example_names() if name != "kube-node.yaml"]
ROUND_TRIPS = [*LOCAL_EXAMPLES, WITH_STACK_ONLY]


@pytest.mark.parametrize("name", ROUND_TRIPS)
def test_export_import_export_is_a_fixed_point(name: str) -> None:
    first = export_properties(parse_topology(stack_config(name)))
    second = export_properties(parse_topology(import_properties(first).config))
    assert second == first


def test_stack_only_fields_are_comment_lines_mm2_skips() -> None:
    text = export_properties(parse_topology(stack_config(WITH_STACK_ONLY)))
    assert "#@ primary->dr.reverseHeartbeats = true" in text.splitlines()
    assert "#@ primary->dr.connectorSettings.source.transforms.tag.value.literal = primary = dc1" in text.splitlines()
    # MM2 reads java.util.Properties: to it these are comments, so no connector gets them.
    keys = dict(parse_properties(text))
    assert not [k for k in keys if "reverseHeartbeats" in k or "connectorSettings" in k or k.startswith("transforms")]
    flow = import_properties(text).config["flows"]["primary->dr"]
    assert flow["connectorSettings"]["source"]["transforms.tag.value.literal"] == "primary = dc1"
    assert flow["reverseHeartbeats"] is True
    code, _, err = run_cli(["export", "Pulumi.x.yaml"], lambda _: stack_yaml(stack_config(WITH_STACK_ONLY)))
    assert code == 0 and "dedicated MirrorMaker 2 does not apply them" in err


def test_import_names_a_bad_stack_only_line_and_drops_reverse_heartbeats_on_sasl_sources() -> None:
    with pytest.raises(TopologyError) as bad:
        import_properties(
            "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\n#@ a->b.tasks = 3\n"
        )
    assert "a->b.tasks" in str(bad.value) and "not a stack-only flow key" in str(bad.value)
    config = dev_config()
    config["clusters"]["primary"]["security"] = {
        "protocol": "SASL_PLAINTEXT",
        "saslMechanism": "SCRAM-SHA-512",
        "username": "mm2",
        "password": {"secret": "primary.mm2.password"},
    }
    config["flows"]["primary->dr"]["reverseHeartbeats"] = True
    result = import_properties(export_properties(parse_topology(config)))
    assert "reverseHeartbeats" not in result.config["flows"]["primary->dr"]
    assert any("primary->dr.reverseHeartbeats: not imported" in n for n in result.notes)


# Keys a dedicated MM2 worker handles itself: it writes to the target as its own producer.
_WORKER_PRODUCER = ("producer.override.bootstrap.servers", "producer.override.security.", "producer.override.sasl.")


def _comparable(config: Mapping[str, str]) -> dict[str, str]:
    return {
        k: v
        for k, v in config.items()
        if not k.startswith(_WORKER_PRODUCER) and not k.startswith("producer.override.ssl.")
    }


@pytest.mark.parametrize("name", ROUND_TRIPS)
def test_stack_config_round_trip_keeps_connector_configs(name: str) -> None:
    """Stack config -> mm2.properties -> stack config: the same connectors, tuning included, except
    where the imported single worker group sits on another cluster (its producer's address)."""
    original = parse_topology(stack_config(name))
    imported = parse_topology(import_properties(export_properties(original)).config)
    assert [f.name for f in imported.flows] == [f.name for f in original.flows]
    for before, after in zip(original.flows, imported.flows, strict=True):
        for a, b in zip(flow_connectors(original, before).all(), flow_connectors(imported, after).all(), strict=True):
            assert _comparable(a.config) == _comparable(b.config), a.name


@pytest.mark.parametrize("name", ROUND_TRIPS)
def test_round_trip_gives_the_same_flows(name: str) -> None:
    """Every flow field survives export -> import; only the worker group placement is the
    importer's (one group, noted), since mm2.properties has no worker groups."""
    original = parse_topology(stack_config(name))
    imported = parse_topology(import_properties(export_properties(original)).config)
    for before, after in zip(original.flows, imported.flows, strict=True):
        assert replace(after, worker_group="", tasks_max=None) == replace(before, worker_group="", tasks_max=None)
        assert flow_tasks_max(imported, after) == flow_tasks_max(original, before)
    for alias, cluster in original.clusters.items():
        assert imported.clusters[alias].security == cluster.security
        assert imported.clusters[alias].client == cluster.client


def _dedicated_source_config(props: Mapping[str, str], topology: Topology, flow: Flow) -> dict[str, str]:
    """The source connector a dedicated MM2 builds from mm2.properties (MirrorMakerConfig's
    connectorBaseConfig): cluster keys as source.cluster.* / target.cluster.*, cluster client keys
    as source.<client>.* / target.<client>.*, the target's producer.* for its worker's producer,
    then the flow's `a->b.*` lines over everything."""
    config: dict[str, str] = {}
    for side, alias in (("source", flow.source), ("target", flow.target)):
        for key, value in props.items():
            if not key.startswith(f"{alias}."):
                continue
            rest = key[len(alias) + 1 :]
            if rest.startswith(("producer.", "consumer.", "admin.")):
                config[f"{side}.{rest}"] = value
                if side == "target" and rest.startswith("producer."):
                    config[f"producer.override.{rest[len('producer.') :]}"] = value
            elif rest != "exactly.once.source.support":
                config[f"{side}.cluster.{rest}"] = value
    config.update({"source.cluster.alias": flow.source, "target.cluster.alias": flow.target})
    prefix = f"{flow.name}."
    config.update({k[len(prefix) :]: v for k, v in props.items() if k.startswith(prefix)})
    # MM2 reads these as lists (comma-separated, items trimmed).
    for key in ("topics", "topics.exclude", "groups", "groups.exclude"):
        if key in config:
            config[key] = ",".join(item.strip() for item in config[key].split(",") if item.strip())
    return config


@pytest.mark.parametrize("name", [*LOCAL_EXAMPLES, "tuned"])
def test_export_writes_what_the_stack_deploys(name: str) -> None:
    """Each source connector a dedicated MM2 would run from the export has every key, tuned client
    defaults and exactly-once keys included, with the value the stack deploys."""
    config = example("active-passive.yaml") if name == "tuned" else example(name)
    if name == "tuned":  # every level that can replace a tuned default, and exactly-once
        config["clusters"]["dr"]["client"] = {"producer.linger.ms": "50"}
        config["clusters"]["primary"]["client"] = {"consumer.max.poll.records": "500"}
        config["flows"]["primary->dr"].setdefault("settings", {})["producer.override.compression.type"] = "zstd"
        config["flows"]["primary->dr"]["exactlyOnce"] = True
    topology = parse_topology(config)
    props = dict(parse_properties(export_properties(topology)))
    skip = {"name", "connector.class", "key.converter", "value.converter", "header.converter"}
    for flow in topology.flows:
        deployed = flow_connectors(topology, flow).source.config
        dedicated = _dedicated_source_config(props, topology, flow)
        wrong = {
            k: (v, dedicated.get(k))
            for k, v in _comparable(deployed).items()
            if k not in skip and dedicated.get(k) != v
        }
        assert wrong == {}, f"{flow.name}: key -> (deployed, exported)"
    if name == "tuned":
        assert props["primary->dr.producer.override.compression.type"] == "zstd"
        assert "primary->dr.producer.override.linger.ms" not in props  # dr.producer.linger.ms says it
        assert props["primary->dr.producer.override.batch.size"] == TUNED_SOURCE_CLIENT["producer.override.batch.size"]


def test_exactly_once_keys_are_what_the_source_connector_gets() -> None:
    config = example("active-passive.yaml")
    config["flows"]["primary->dr"]["exactlyOnce"] = True
    topology = parse_topology(config)
    source = flow_connectors(topology, topology.flows[0]).source.config
    assert {k: source[k] for k in EXACTLY_ONCE_SOURCE} == EXACTLY_ONCE_SOURCE


def test_import_drops_tuned_defaults_and_keeps_changed_tuning() -> None:
    text = (
        "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\n"
        "a->b.enabled = true\n"
        "a->b.producer.override.linger.ms = 10\n"
        "a->b.source.consumer.fetch.min.bytes = 1\n"
    )
    result = import_properties(text)
    assert result.config["flows"]["a->b"]["settings"] == {"source.consumer.fetch.min.bytes": "1"}
    assert any("tuned defaults" in n for n in result.notes)


def test_import_reads_exactly_once_flow_keys() -> None:
    base = "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\na->b.enabled = true\n"
    eos = import_properties(base + "".join(f"a->b.{k} = {v}\n" for k, v in EXACTLY_ONCE_SOURCE.items()))
    assert eos.config["flows"]["a->b"]["exactlyOnce"] is True
    with pytest.raises(TopologyError) as err:
        import_properties(base + "a->b.source.consumer.isolation.level = read_committed\n")
    assert "a->b.source.consumer.isolation.level" in str(err.value) and "exactlyOnce: true" in str(err.value)


def test_active_passive_round_trip_is_exact() -> None:
    original = parse_topology(dev_config())
    imported = parse_topology(import_properties(export_properties(original)).config)
    assert flow_connectors(imported, imported.flows[0]) == flow_connectors(original, original.flows[0])


def test_export_writes_secrets_as_placeholders() -> None:
    config = dev_config()
    config["clusters"]["primary"]["security"] = {
        "protocol": "SASL_PLAINTEXT",
        "saslMechanism": "PLAIN",
        "username": "mm2",
        "password": {"secret": "primary.mm2.password"},
    }
    text = export_properties(parse_topology(config))
    props = dict(parse_properties(text))
    assert props["config.providers"] == "file"
    assert props["primary.sasl.jaas.config"].endswith(
        'password="${file:/etc/mm2/secrets.properties:primary.mm2.password}";'
    )
    assert props["primary->dr.enabled"] == "true"
    assert props["primary->dr.tasks.max"] == "3"
