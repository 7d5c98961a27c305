"""The pack as a whole: its policies, their levels and config, and a safe stack that passes all."""

from __future__ import annotations

import ast
from pathlib import Path

import pack
import pytest
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

from .builders import (
    UNKNOWN,
    UNKNOWN_MAP,
    cluster,
    connector,
    flow,
    replication_flow,
    resource,
    run_resource,
    run_stack,
    worker_group,
)

POLICIES_DIR = Path(pack.__file__).resolve().parent

EXPECTED = {
    "no-name-preserving-replication-on-cycles": (StackValidationPolicy, EnforcementLevel.MANDATORY),
    "replication-factor-within-broker-count": (StackValidationPolicy, EnforcementLevel.ADVISORY),
    "flow-has-all-connectors": (StackValidationPolicy, EnforcementLevel.ADVISORY),
    "flow-connectors-agree": (StackValidationPolicy, EnforcementLevel.ADVISORY),
    "disaster-recovery-syncs-group-offsets": (StackValidationPolicy, EnforcementLevel.ADVISORY),
    "internal-topics-excluded": (StackValidationPolicy, EnforcementLevel.ADVISORY),
    "cross-datacenter-flows-use-tls": (StackValidationPolicy, EnforcementLevel.ADVISORY),
    "connect-rest-requires-auth": (ResourceValidationPolicy, EnforcementLevel.MANDATORY),
    "no-plaintext-secrets-in-connector-config": (ResourceValidationPolicy, EnforcementLevel.MANDATORY),
    "source-connector-min-tasks": (ResourceValidationPolicy, EnforcementLevel.ADVISORY),
    "shared-target-settings-consistent": (StackValidationPolicy, EnforcementLevel.ADVISORY),
    "dr-retention-outlasts-outage-budget": (StackValidationPolicy, EnforcementLevel.MANDATORY),
    "retention-outlasts-outage-budget": (StackValidationPolicy, EnforcementLevel.ADVISORY),
}


def test_policies_kinds_and_default_levels() -> None:
    assert {p.name: (type(p), p.enforcement_level) for p in pack.ALL_POLICIES} == EXPECTED


def test_config_schemas_have_defaults_and_no_enforcement_level() -> None:
    for policy in pack.ALL_POLICIES:
        if policy.config_schema is None:
            continue
        for name, schema in policy.config_schema.properties.items():
            assert name != "enforcementLevel"
            assert "default" in schema and "type" in schema, (policy.name, name)


def test_main_only_builds_the_pack() -> None:
    tree = ast.parse((POLICIES_DIR / "__main__.py").read_text())
    statements = [s for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom, ast.Expr))]
    assert statements == []
    [call] = [s.value for s in tree.body if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)]
    assert isinstance(call.func, ast.Name) and call.func.id == "PolicyPack"
    keywords = {k.arg: k.value for k in call.keywords}
    assert ast.literal_eval(keywords["name"]) == "mm2-replication-safety"
    assert isinstance(keywords["policies"], ast.Name) and keywords["policies"].id == "ALL_POLICIES"


def test_pulumi_policy_yaml_uses_the_project_venv() -> None:
    text = (POLICIES_DIR / "PulumiPolicy.yaml").read_text()
    assert "name: python" in text and "virtualenv: ../.venv" in text


@pytest.mark.parametrize("stack", ["prod", "dev"])
def test_a_safe_active_active_stack_passes_every_rule(stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_STACK", stack)
    resources = [
        cluster("primary", datacenter="dc1"),
        cluster("dr", datacenter="dc2"),
        worker_group("mm2"),
        *replication_flow("primary", "dr", disaster_recovery=True),
        *replication_flow("dr", "primary"),
    ]
    for policy in pack.ALL_POLICIES:
        if isinstance(policy, StackValidationPolicy):
            assert run_stack(policy, resources) == [], policy.name
        else:
            for res in resources:
                assert run_resource(policy, res) == [], (policy.name, res.name)


# --- unknowns everywhere --------------------------------------------------------------------


def test_every_rule_survives_a_preview_full_of_unknowns(prod_stack: str) -> None:
    resources = [
        cluster(UNKNOWN, brokers=UNKNOWN, datacenter=UNKNOWN, protocol=UNKNOWN),
        cluster("b", brokers=UNKNOWN),
        resource("mm2:index:KafkaCluster", "kafka-empty", {}),
        resource("mm2:index:ReplicationFlow", "flow-unknown", {"source": UNKNOWN, "target": UNKNOWN}),
        flow("a", "b", UNKNOWN, name_preserving=UNKNOWN, disaster_recovery=UNKNOWN, sync_group_offsets=UNKNOWN),
        worker_group(rest_auth=UNKNOWN, name=UNKNOWN),
        resource(
            "pulumi-python:dynamic/connect:Connector", "mm2-a-to-b-source", {"name": UNKNOWN, "config": UNKNOWN_MAP}
        ),
        connector("a", "b", "checkpoint", config={k: UNKNOWN for k in ("connector.class", "topics", "tasks.max")}),
        connector("a", "b", "heartbeat", config={"connector.class": UNKNOWN, "source.cluster.alias": UNKNOWN}),
    ]
    for policy in pack.ALL_POLICIES:
        if isinstance(policy, StackValidationPolicy):
            assert run_stack(policy, resources) == [], policy.name
        else:
            for res in resources:
                assert run_resource(policy, res) == [], policy.name
