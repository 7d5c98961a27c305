"""Pulumi.prod.yaml: it parses, says what issue 8 asks for, and passes every policy of the pack.

The stack's resources are what the real program (`components.program`) registers under Pulumi's
mocks from the stack file, run through every rule of the pack as the policy host would during
`pulumi preview --stack prod --policy-pack policies`.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pack
import pulumi
import pytest
from pulumi_policy import PolicyResource, ResourceValidationPolicy, StackValidationPolicy

from components.platform.secret_files import container_secret_keys
from components.program import program
from components.rpc_values import plain
from components.topology import DEFAULT_POLICY_CLASS, Platform, SecurityProtocol, parse_topology
from tests.unit.components.program_harness import stack_config as program_config
from tests.unit.mocks import RecordingMonitor, mocked
from tests.unit.policies.builders import resource, run_resource, run_stack

from .conftest import namespace, stack_config
from .helpers import prod_topology


def stack_resources(monitor: RecordingMonitor) -> list[PolicyResource]:
    """What the program registered, as the policy host hands it to the rules: every resource with
    its inputs (secrets as their values) and its parent."""
    by_urn: dict[str, PolicyResource] = {}
    out: list[PolicyResource] = []
    for urn, registration in monitor.resources.items():
        type_ = urn.split("::")[2].rsplit("$", 1)[-1]
        if type_ == "pulumi:pulumi:Stack":
            continue
        parent = next((r.parent for r in monitor.registrations if urn.endswith(f"{r.type}::{r.name}")), "")
        props = plain(registration.state) or {}
        made = resource(type_, urn.rsplit("::", 1)[-1], props, by_urn.get(parent))
        by_urn[urn] = made
        out.append(made)
    return out


def program_resources(mm2: dict[str, Any], tmp_path: Path) -> list[PolicyResource]:
    """Run the real program on the prod stack file (its `mm2` sections replaced by `mm2`)."""
    raw = stack_config("prod")
    given = {key: f"given-{key}" for key in container_secret_keys(parse_topology(copy.deepcopy(mm2)))}
    with mocked(stack="prod") as monitor:
        pulumi.runtime.test(lambda: program(program_config(raw, tmp_path, stack="prod", mm2=mm2, given=given)))()
        return stack_resources(monitor)


def violations(resources: list[PolicyResource]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for policy in pack.ALL_POLICIES:
        if isinstance(policy, StackValidationPolicy):
            messages = [m for m, _ in run_stack(policy, resources)]
        else:
            assert isinstance(policy, ResourceValidationPolicy)
            messages = [m for r in resources for m in run_resource(policy, r)]
        if messages:
            found[policy.name] = messages
    return found


def test_prod_parses_to_two_regions_active_active() -> None:
    topo = prod_topology()
    assert set(topo.clusters) == {"us-east", "eu-west"}
    for cluster in topo.clusters.values():
        assert cluster.platform is Platform.KUBERNETES
        assert cluster.brokers == 3
        assert cluster.security.protocol is SecurityProtocol.SASL_SSL
        assert cluster.datacenter == cluster.alias
    assert {f.name for f in topo.enabled_flows()} == {"us-east->eu-west", "eu-west->us-east"}
    for flow in topo.enabled_flows():
        assert flow.replication_policy.class_name == DEFAULT_POLICY_CLASS
        group = topo.worker_groups[flow.worker_group]
        assert group.cluster == flow.target and group.workers == 3
        assert group.platform is Platform.KUBERNETES and group.rest_auth
        partitions = sum(t.partitions for t in topo.clusters[flow.source].topics if t.name in flow.topics)
        assert flow.tasks_max == partitions


def test_prod_references_secrets_and_gives_none() -> None:
    config = stack_config("prod")
    assert "mm2:secrets" not in config
    assert "us-east.mm2.password" in container_secret_keys(prod_topology())


def test_prod_passes_every_policy(prod_stack: str, tmp_path: Path) -> None:
    resources = program_resources(namespace(stack_config("prod"), "mm2"), tmp_path)
    types = {r.resource_type for r in resources}
    assert {"mm2:index:KafkaCluster", "mm2:index:ReplicationFlow", "pulumi-python:dynamic/connect:Connector"} <= types
    assert violations(resources) == {}


def test_policies_can_fail_on_a_broken_prod(prod_stack: str, tmp_path: Path) -> None:
    mm2 = copy.deepcopy(namespace(stack_config("prod"), "mm2"))
    for group in mm2["workerGroups"].values():
        group["restAuth"] = False
    found = violations(program_resources(mm2, tmp_path))
    assert set(found) == {"connect-rest-requires-auth"}


@pytest.fixture
def prod_stack(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("PULUMI_STACK", "prod")
    return "prod"
