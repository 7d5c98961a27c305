"""Pulumi.prod.yaml: it parses, says what issue 8 asks for, and passes every policy of the pack.

The stack's resources are built as the components register them (types and props from
docs/architecture.md) from the parsed topology, and run through every rule of the pack as the
policy host would during `pulumi preview --stack prod --policy-pack policies`.
"""

from __future__ import annotations

import pack
import pytest
from pulumi_policy import PolicyResource, ResourceValidationPolicy, StackValidationPolicy

from components.platform.secret_files import container_secret_keys
from components.topology import DEFAULT_POLICY_CLASS, Platform, SecurityProtocol, Topology, flow_connectors
from tests.unit.policies.builders import resource, run_resource, run_stack

from .helpers import prod_topology


def stack_resources(topo: Topology, connect_url: dict[str, str] | None = None) -> list[PolicyResource]:
    out: list[PolicyResource] = []
    for alias, c in topo.clusters.items():
        out.append(
            resource(
                "mm2:index:KafkaCluster",
                f"kafka-{alias}",
                {
                    "alias": alias,
                    "platform": c.platform.value,
                    "brokers": c.brokers,
                    "datacenter": c.datacenter,
                    "securityProtocol": c.security.protocol.value,
                },
            )
        )
    for name, g in topo.worker_groups.items():
        out.append(
            resource(
                "mm2:index:ConnectWorkerGroup",
                f"connect-{name}",
                {"name": name, "cluster": g.cluster, "workers": g.workers, "restAuth": g.rest_auth, "restTls": False},
            )
        )
    for flow in topo.enabled_flows():
        policy = flow.replication_policy
        component = resource(
            "mm2:index:ReplicationFlow",
            f"flow-{flow.slug}",
            {
                "source": flow.source,
                "target": flow.target,
                "enabled": flow.enabled,
                "replicationPolicy": policy.class_name,
                "separator": policy.separator,
                "namePreserving": policy.preserves_names,
                "disasterRecovery": flow.disaster_recovery,
                "syncGroupOffsets": flow.settings.get("sync.group.offsets.enabled") == "true",
                "workerGroup": flow.worker_group,
            },
        )
        out.append(component)
        url = (connect_url or {}).get(flow.worker_group) or topo.worker_groups[flow.worker_group].url or ""
        for spec in flow_connectors(topo, flow).all():
            out.append(
                resource(
                    "pulumi-python:dynamic/connect:Connector",
                    spec.name,
                    {
                        "connect_url": url,
                        "name": spec.name,
                        "config": dict(spec.config),
                        "auth": {"username": "mm2-admin", "password": "[secret]"},
                        "timeout_seconds": 180,
                    },
                    component,
                )
            )
    return out


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
    from .conftest import stack_config

    config = stack_config("prod")
    assert "mm2:secrets" not in config
    assert "us-east.mm2.password" in container_secret_keys(prod_topology())


def test_prod_passes_every_policy(prod_stack: str) -> None:
    assert violations(stack_resources(prod_topology())) == {}


def test_policies_can_fail_on_a_broken_prod(prod_stack: str) -> None:
    import dataclasses

    topo = prod_topology()
    groups = {n: dataclasses.replace(g, rest_auth=False) for n, g in topo.worker_groups.items()}
    broken = dataclasses.replace(topo, worker_groups=groups)
    found = violations(stack_resources(broken))
    assert set(found) == {"connect-rest-requires-auth"}


@pytest.fixture
def prod_stack(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("PULUMI_STACK", "prod")
    return "prod"
