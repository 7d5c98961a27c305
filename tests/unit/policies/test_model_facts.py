"""model_facts (and the rule defaults built on it) against the model they copy.

The pack runs with only its own folder on the import path, so it keeps copies of the model's facts;
these tests import both sides and fail as soon as one side changes without the other.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from dataclasses import replace
from pathlib import Path

import pytest
from durability_rules import REPLICATION_FACTOR_TOPICS
from flow_connector_rules import AGREEMENT_KEYS
from model_facts import (
    CLUSTER_TYPE,
    CONNECTOR_NAME,
    CONNECTOR_TYPE,
    DEFAULT_POLICY_CLASS,
    FLOW_TYPE,
    IDENTITY_POLICY_CLASS,
    KAFKA_DEFAULT_RETENTION_MS,
    MM2_DEFAULTS,
    SHARED_TARGET_KEYS,
    TOPIC_TYPE,
    WORKER_GROUP_TYPE,
    ConnectorKind,
    connector_name,
)
from stack_view import connector_from_props, split_list
from topic_filter_rules import DEFAULT_INTERNAL_TOPICS

from components.ops.mm2props import stack_config_from_yaml
from components.topology import ConnectorRole, Flow, Topology, connectors, model, parse_topology, settings
from components.topology.parse.mm2_settings import MM2_SETTING_DEFAULTS, MM2_TOPICS_EXCLUDE_DEFAULT

ROOT = Path(__file__).resolve().parents[3]
# Every free-form target-shared key set explicitly, so each connector that receives it shows it.
SHARED_SETTINGS = {
    "replication.policy.internal.topic.separator.enabled": "true",
    "heartbeats.topic.replication.factor": "1",
}


@pytest.fixture(scope="module")
def topology() -> Topology:
    """examples/aggregation.yaml (a->k, b->k, c->k) parsed by the model."""
    config = stack_config_from_yaml((ROOT / "examples" / "aggregation.yaml").read_text(encoding="utf-8"))
    config["defaults"].setdefault("settings", {}).update(SHARED_SETTINGS)
    return parse_topology(config)


def component_type(class_name: str) -> str:
    """The type token a class under components/ registers, wherever that class lives.

    Component resources pass it as the first argument of `super().__init__`; dynamic resources
    get it from the SDK (`pulumi-python:dynamic/<module>:<name>`), read off the imported class.
    """
    for path in sorted((ROOT / "components").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if not (isinstance(node, ast.ClassDef) and node.name == class_name):
                continue
            module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
            cls = getattr(module, class_name)
            if hasattr(cls, "_resource_type_name"):
                return f"pulumi-python:{cls._resource_type_name}"
            for call in ast.walk(ast.parse(inspect.getsource(cls))):
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "__init__"
                    and call.args
                    and isinstance(call.args[0], ast.Constant)
                ):
                    return str(call.args[0].value)
    raise AssertionError(f"no class {class_name} registering a type under components/")


# --- resource type tokens -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "class_name"),
    [
        (CONNECTOR_TYPE, "Connector"),
        (CLUSTER_TYPE, "KafkaCluster"),
        (WORKER_GROUP_TYPE, "ConnectWorkerGroup"),
        (FLOW_TYPE, "ReplicationFlow"),
        (TOPIC_TYPE, "Topic"),
    ],
)
def test_type_tokens_are_the_ones_the_components_register(token: str, class_name: str) -> None:
    assert token == component_type(class_name)


def test_kafkas_default_retention_is_the_models() -> None:
    from components.topology.objectives import KAFKA_DEFAULT_RETENTION_MS as MODEL_RETENTION_MS

    assert KAFKA_DEFAULT_RETENTION_MS == MODEL_RETENTION_MS


# --- connectors: roles, classes, names ------------------------------------------------------


def test_connector_kinds_are_the_model_roles_with_their_classes() -> None:
    assert [kind.value for kind in ConnectorKind] == [role.value for role in ConnectorRole]
    for kind in ConnectorKind:
        assert (
            connectors.CONNECTOR_CLASSES[ConnectorRole(kind.value)]
            == f"org.apache.kafka.connect.mirror.{kind.class_name}"
        )


def test_connector_names_are_the_model_names_and_parse_back(topology: Topology) -> None:
    for flow in topology.flows:
        for kind in ConnectorKind:
            name = connectors.connector_name(flow, ConnectorRole(kind.value))
            assert connector_name(flow.source, flow.target, kind) == name
            match = CONNECTOR_NAME.match(name)
            assert match is not None and match["kind"] == kind.value
            assert match["flow"] == flow.slug


def test_the_view_reads_the_model_connector_configs(topology: Topology) -> None:
    for flow in topology.flows:
        for spec in connectors.flow_connectors(topology, flow).all():
            connector = connector_from_props("urn", spec.name, {"name": spec.name, "config": dict(spec.config)})
            assert (connector.kind, connector.flow) == (ConnectorKind(spec.role), (flow.source, flow.target))


# --- target-shared settings -----------------------------------------------------------------


def test_shared_target_keys_are_the_model_target_shared_keys() -> None:
    assert list(SHARED_TARGET_KEYS) == list(settings.TARGET_SHARED)


def test_each_shared_key_is_read_from_the_connectors_the_model_gives_it(topology: Topology) -> None:
    for flow in topology.flows:
        specs = connectors.flow_connectors(topology, flow).all()
        for key, kinds in SHARED_TARGET_KEYS.items():
            assert {c.role for c in specs if key in c.config} == {k.value for k in kinds}, key


# --- MM2 defaults and known keys ------------------------------------------------------------


def test_default_policy_and_separator_are_the_model_defaults() -> None:
    assert DEFAULT_POLICY_CLASS == model.DEFAULT_POLICY_CLASS
    assert IDENTITY_POLICY_CLASS == model.IDENTITY_POLICY_CLASS
    assert MM2_DEFAULTS["replication.policy.class"] == model.DEFAULT_POLICY_CLASS
    assert MM2_DEFAULTS["replication.policy.separator"] == model.DEFAULT_SEPARATOR


def test_mm2_defaults_agree_with_the_model_defaults() -> None:
    for key, value in MM2_SETTING_DEFAULTS.items():
        assert MM2_DEFAULTS[key] == value, key
    assert tuple(split_list(MM2_DEFAULTS["topics.exclude"])) == MM2_TOPICS_EXCLUDE_DEFAULT


def test_every_key_the_rules_read_is_a_key_the_model_knows() -> None:
    known = settings.KNOWN_SETTINGS | set(settings.SETTINGS_OWNED)
    read = {*MM2_DEFAULTS, *SHARED_TARGET_KEYS, *AGREEMENT_KEYS}
    assert read - known == set()


def test_replication_factor_keys_are_the_model_ones_on_the_connectors_that_get_them() -> None:
    keys = [spec.key for specs in REPLICATION_FACTOR_TOPICS.values() for spec in specs]
    assert sorted(keys) == sorted(settings.REPLICATION_FACTOR_KEYS)
    for kind, specs in REPLICATION_FACTOR_TOPICS.items():
        for spec in specs:
            assert spec.key in settings.ROLE_SETTINGS[kind.value], spec.key


# --- internal topics ------------------------------------------------------------------------


def test_internal_topic_samples_include_the_model_names_on_the_source(topology: Topology) -> None:
    """For flow a->k, the internal topics MM2 keeps on a: those of the reverse flow k->a and a->k's syncs."""
    forward: Flow = topology.flows[0]
    reverse = replace(forward, source=forward.target, target=forward.source)
    source, target = forward.source, forward.target
    samples = {s.replace("{source}", source).replace("{target}", target) for s in DEFAULT_INTERNAL_TOPICS}
    assert connectors.offset_syncs_topic(forward) in samples  # on the source by default
    assert connectors.checkpoints_topic(reverse) in samples
    assert connectors.heartbeats_topic(reverse) in samples
    assert connectors.remote_topic(reverse, connectors.heartbeats_topic(forward)) in samples


def test_reverse_heartbeat_connector_names_end_as_the_pack_expects() -> None:
    from model_facts import REVERSE_HEARTBEAT_SUFFIX

    from tests.unit.topology.helpers import dev_config

    flow = parse_topology(dev_config()).flows[0]
    assert connectors.reverse_heartbeat_name(flow) == f"mm2-{flow.source}-to-{flow.target}{REVERSE_HEARTBEAT_SUFFIX}"
