"""The component graph under Pulumi's mocks: which resources, their names, parents and dependencies."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from pulumi.runtime import mocks as pmocks
from pulumi.runtime import rpc

from components.connect_group import ConnectWorkerGroup
from components.credentials import Credentials
from components.kafka_cluster import KafkaCluster
from components.platform.contract import ContainerPlatforms
from components.platform.local.layout import LocalPlatform
from components.platform.local.tls import stack_tls, tls_layout
from components.replication_flow import ReplicationFlow
from components.rpc_values import plain
from components.topology import ConnectorState, Topology, parse_topology, with_secrets_file
from components.topology.security import (
    cluster_acls,
    cluster_users,
    generated_secret_keys,
    required_secret_keys,
)
from components.topology.tls import with_local_tls
from tests.unit.topology.helpers import external_target_config

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class Registration:
    type: str
    name: str
    parent: str
    dependencies: list[str]
    inputs: dict[str, Any] = field(default_factory=dict)


class RecordingMonitor(pmocks.MockMonitor):
    """MockMonitor that also keeps parent and dependency URNs of every registration."""

    def __init__(self, mocks: pmocks.Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []

    def RegisterResource(self, request: Any) -> Any:
        self.registrations.append(Registration(request.type, request.name, request.parent, list(request.dependencies)))
        return super().RegisterResource(request)


class EchoMocks(pmocks.Mocks):
    def new_resource(self, args: pmocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        outs = dict(args.inputs)
        if args.typ == "pulumi-python:dynamic/connect:Connector":
            outs.setdefault("state", "RUNNING")
        if args.typ == "pulumi-python:dynamic/security:Credentials":
            keys = [*args.inputs.get("generated", []), *args.inputs.get("required", [])]
            outs["values"] = {k: f"pw-{k}" for k in keys}
        return f"{args.name}-id", outs

    def call(self, args: pmocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None


@pytest.fixture
def monitor() -> Iterator[RecordingMonitor]:
    mon = RecordingMonitor(EchoMocks())
    pulumi.runtime.set_mocks(EchoMocks(), project="mm2-replication", stack="unit", preview=False, monitor=mon)
    try:
        yield mon
    finally:
        pulumi.runtime.settings.reset_options()


LOCAL = LocalPlatform(stack="unit", run_root="/tmp/mm2-unit", kafka_libs="/tmp/libs")


def build(topology: Topology, platforms: ContainerPlatforms | None = None) -> pulumi.Output[Any]:
    """The graph `__main__` builds: credentials, clusters with users and ACLs, groups, flows."""
    topology = with_local_tls(local_secrets_files(topology, LOCAL), tls_layout(LOCAL.run_root))
    credentials = Credentials(
        "credentials",
        generated=list(generated_secret_keys(topology)),
        required=list(required_secret_keys(topology)),
        given={},
    )
    secrets = credentials.values
    tls = stack_tls(LOCAL.stack, topology, LOCAL.run_root, secrets)
    clusters = {
        a: KafkaCluster(
            f"kafka-{a}",
            c,
            LOCAL,
            credentials=secrets,
            users=cluster_users(topology, a),
            acls=cluster_acls(topology, a),
            platforms=platforms,
            tls=tls,
        )
        for a, c in topology.clusters.items()
    }
    groups = {
        n: ConnectWorkerGroup(
            f"connect-{n}", g, topology, clusters, LOCAL, credentials=secrets, platforms=platforms, tls=tls
        )
        for n, g in topology.worker_groups.items()
    }
    flows = [
        ReplicationFlow(f"flow-{f.slug}", f, topology, groups[f.worker_group], clusters, credentials=secrets)
        for f in topology.enabled_flows()
    ]
    # Await every resource registered last, so the monitor has seen them all when checks run.
    rollouts = [f.rollout.urn for f in flows if f.rollout is not None]
    return pulumi.Output.all(*[f.summary for f in flows], *[g.url for g in groups.values()], *rollouts)


def local_secrets_files(topology: Topology, local: LocalPlatform) -> Topology:
    # What __main__.local_secrets_files does (the program module runs main() on import).
    for name, group in topology.worker_groups.items():
        if group.platform.value == "local" and not group.url:
            topology = with_secrets_file(topology, name, local.group_secrets_file(name))
    return topology


def dev_topology() -> Topology:
    cfg = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    return parse_topology({k.split(":", 1)[1]: v for k, v in cfg.items() if k.startswith("mm2:")})


def by_name(mon: RecordingMonitor) -> dict[str, Registration]:
    return {r.name: r for r in mon.registrations}


def urn_of(mon: RecordingMonitor, name: str) -> str:
    return next(urn for urn in mon.resources if urn.endswith(f"::{name}"))


@pulumi.runtime.test
def test_dev_stack_graph(monitor: RecordingMonitor) -> Any:
    def check(_: Any) -> None:
        regs = by_name(monitor)
        types = {name: r.type for name, r in regs.items() if r.type != "pulumi:pulumi:Stack"}
        assert types == {
            "credentials": "pulumi-python:dynamic/security:Credentials",
            "kafka-primary": "mm2:index:KafkaCluster",
            "kafka-primary-broker-0": "pulumi-python:dynamic/local:Process",
            "kafka-primary-scram-users": "pulumi-python:dynamic/kafka:ScramUsers",
            "kafka-primary-acls": "pulumi-python:dynamic/kafka:Acls",
            "kafka-primary-topic-orders": "pulumi-python:dynamic/kafka:Topic",
            "kafka-primary-topic-payments": "pulumi-python:dynamic/kafka:Topic",
            "kafka-dr": "mm2:index:KafkaCluster",
            "kafka-dr-broker-0": "pulumi-python:dynamic/local:Process",
            "kafka-dr-scram-users": "pulumi-python:dynamic/kafka:ScramUsers",
            "kafka-dr-acls": "pulumi-python:dynamic/kafka:Acls",
            "connect-mm2": "mm2:index:ConnectWorkerGroup",
            "connect-mm2-secrets": "pulumi-python:dynamic/local:SecretsFile",
            "connect-mm2-worker-0": "pulumi-python:dynamic/local:Process",
            "connect-mm2-worker-1": "pulumi-python:dynamic/local:Process",
            "flow-primary-to-dr": "mm2:index:ReplicationFlow",
            "mm2-primary-to-dr-source": "pulumi-python:dynamic/connect:Connector",
            "mm2-primary-to-dr-checkpoint": "pulumi-python:dynamic/connect:Connector",
            "mm2-primary-to-dr-heartbeat": "pulumi-python:dynamic/connect:Connector",
            "flow-primary-to-dr-rollout": "pulumi-python:dynamic/connect:CredentialRollout",
        }
        # Parents: every child hangs under its component.
        assert regs["kafka-primary-broker-0"].parent == urn_of(monitor, "kafka-primary")
        assert regs["kafka-primary-topic-orders"].parent == urn_of(monitor, "kafka-primary")
        assert regs["connect-mm2-worker-1"].parent == urn_of(monitor, "connect-mm2")
        # What the preview's blast radius counts ("all 2 together"), given to the pure diff.
        state = {
            name: monitor.resources[urn_of(monitor, name)].state
            for name in ("connect-mm2-worker-1", "kafka-primary-broker-0")
        }
        assert state["connect-mm2-worker-1"]["group_size"] == 2
        assert state["kafka-primary-broker-0"]["group_size"] == 1
        for role in ("source", "checkpoint", "heartbeat"):
            connector = regs[f"mm2-primary-to-dr-{role}"]
            assert connector.parent == urn_of(monitor, "flow-primary-to-dr")
            # A connector waits for its worker group and both clusters of the flow (depending on a
            # component means depending on its children: workers, brokers, topics).
            needed = {
                "connect-mm2-worker-0",
                "connect-mm2-worker-1",
                "kafka-primary-broker-0",
                "kafka-primary-topic-orders",
                "kafka-dr-broker-0",
            }
            assert {urn_of(monitor, n) for n in needed} <= set(connector.dependencies)
        # Topics wait for the brokers; workers wait for their storage cluster.
        assert urn_of(monitor, "kafka-primary-broker-0") in regs["kafka-primary-topic-orders"].dependencies
        assert urn_of(monitor, "kafka-dr-broker-0") in regs["connect-mm2-worker-0"].dependencies
        assert urn_of(monitor, "kafka-primary-broker-0") not in regs["connect-mm2-worker-0"].dependencies
        # Users and ACLs exist before the workers start; the secrets file before any worker;
        # the rollout runs after the connectors.
        for needed in ("kafka-dr-scram-users", "kafka-dr-acls", "connect-mm2-secrets"):
            assert urn_of(monitor, needed) in regs["connect-mm2-worker-0"].dependencies, needed
        assert urn_of(monitor, "kafka-dr-broker-0") in regs["kafka-dr-acls"].dependencies
        rollout = regs["flow-primary-to-dr-rollout"].dependencies
        assert urn_of(monitor, "mm2-primary-to-dr-source") in rollout

    return build(dev_topology()).apply(check)


@pulumi.runtime.test
def test_connector_inputs_carry_mm2_config(monitor: RecordingMonitor) -> Any:
    def check(_: Any) -> None:
        state = {urn.rsplit("::", 1)[-1]: reg.state for urn, reg in monitor.resources.items()}
        source = state["mm2-primary-to-dr-source"]
        assert source["connect_url"] == "http://127.0.0.1:18083"
        assert source["other_urls"] == ["http://127.0.0.1:18084"]  # where calls go when the first is down
        config = source["config"]
        assert config["connector.class"] == "org.apache.kafka.connect.mirror.MirrorSourceConnector"
        assert config["source.cluster.alias"] == "primary"
        assert config["target.cluster.alias"] == "dr"
        assert config["source.cluster.bootstrap.servers"] == "127.0.0.1:19092"
        assert config["target.cluster.bootstrap.servers"] == "127.0.0.1:19192"
        broker = state["kafka-dr-broker-0"]
        assert broker["ports"] == [19192, 19193]
        assert broker["marker"] == "unit/dr/broker-0"

    return build(dev_topology()).apply(check)


@pulumi.runtime.test
def test_declared_connector_states_reach_the_connectors_and_the_flow_summary(monitor: RecordingMonitor) -> Any:
    topology = dev_topology()
    flow = replace(
        topology.flows[0],
        connector_states={"source": ConnectorState.STOPPED, "checkpoint": ConnectorState.PAUSED},
    )
    topology = replace(topology, flows=(flow,))

    def check(values: list[Any]) -> None:
        state = {urn.rsplit("::", 1)[-1]: reg.state for urn, reg in monitor.resources.items()}
        declared = {role: state[f"mm2-primary-to-dr-{role}"]["desired_state"] for role in flow.connector_states}
        assert declared == {"source": "STOPPED", "checkpoint": "PAUSED"}
        assert state["mm2-primary-to-dr-heartbeat"]["desired_state"] == "RUNNING"
        assert values[0]["desiredStates"] == {"source": "STOPPED", "checkpoint": "PAUSED", "heartbeat": "RUNNING"}

    return build(topology).apply(check)


def example_topology(name: str) -> Topology:
    cfg = yaml.safe_load((ROOT / "examples" / f"{name}.yaml").read_text())["config"]
    return parse_topology({k.split(":", 1)[1]: v for k, v in cfg.items() if k.startswith("mm2:")})


EXAMPLES = ["active-passive", "active-active", "fan-out", "aggregation", "six-cluster-mesh", "active-passive-tls"]


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_topologies_build_their_graph(example: str, monitor: RecordingMonitor) -> None:
    topology = example_topology(example)

    @pulumi.runtime.test
    def run() -> Any:
        def check(_: Any) -> None:
            regs = [r for r in monitor.registrations if r.type != "pulumi:pulumi:Stack"]

            def count(type_token: str) -> int:
                return sum(1 for r in regs if r.type == type_token)

            assert count("mm2:index:KafkaCluster") == len(topology.clusters)
            assert count("mm2:index:ConnectWorkerGroup") == len(topology.worker_groups)
            assert count("mm2:index:ReplicationFlow") == len(topology.enabled_flows())
            assert count("pulumi-python:dynamic/connect:Connector") == 3 * len(topology.enabled_flows())
            local_brokers = sum(c.brokers for c in topology.clusters.values() if c.platform.value == "local")
            workers = sum(g.workers for g in topology.worker_groups.values() if g.url is None)
            assert count("pulumi-python:dynamic/local:Process") == local_brokers + workers
            names = [r.name for r in regs]
            assert len(names) == len(set(names)), "resource names must be unique across the stack"
            # Every connector hangs under the flow it belongs to, named after that flow.
            flows = {r.name: r for r in regs if r.type == "mm2:index:ReplicationFlow"}
            for r in regs:
                if r.type == "pulumi-python:dynamic/connect:Connector":
                    slug = r.name.removeprefix("mm2-").rsplit("-", 1)[0]
                    assert r.parent == urn_of(monitor, f"flow-{slug}"), (r.name, r.parent)
                    assert f"flow-{slug}" in flows

        return build(topology).apply(check)

    run()


@pulumi.runtime.test
def test_prod_stack_builds_kubernetes_clusters_and_groups(monitor: RecordingMonitor) -> Any:
    from components.platform.settings import kubernetes_settings

    raw = yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())["config"]
    topology = parse_topology({k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith("mm2:")})
    platforms = ContainerPlatforms(kubernetes=kubernetes_settings(raw["mm2-platform:kubernetes"]))

    def check(_: Any) -> None:
        regs = [r for r in monitor.registrations if r.type != "pulumi:pulumi:Stack"]
        types = [r.type for r in regs]
        assert "pulumi-python:dynamic/local:Process" not in types, "prod must not start local JVMs"
        assert types.count("kubernetes:apps/v1:StatefulSet") == len(topology.clusters)
        assert types.count("kubernetes:policy/v1:PodDisruptionBudget") >= len(topology.clusters)
        assert types.count("pulumi-python:dynamic/connect:Connector") == 3 * len(topology.enabled_flows())
        # Kubernetes children hang under their components.
        for alias in topology.clusters:
            sts = next(r for r in regs if r.type == "kubernetes:apps/v1:StatefulSet" and alias in r.name)
            assert sts.parent == urn_of(monitor, f"kafka-{alias}")

    return build(topology, platforms).apply(check)


def test_tls_example_issues_certificates_and_restarts_processes_on_renewal(monitor: RecordingMonitor) -> None:
    topology = example_topology("active-passive-tls")

    @pulumi.runtime.test
    def run() -> Any:
        def check(_: Any) -> None:
            state = {urn.rsplit("::", 1)[-1]: reg.state for urn, reg in monitor.resources.items()}
            material = [r for r in monitor.registrations if r.type == "pulumi-python:dynamic/local:TlsMaterial"]
            assert [r.name for r in material] == ["tls"], "one CA per stack"
            assert [leaf["name"] for leaf in state["tls"]["leaves"]] == ["cluster-dr", "cluster-primary", "rest-mm2"]
            assert state["tls"]["root"] == f"{LOCAL.run_root}/tls"
            broker = state["kafka-primary-broker-0"]
            assert broker["properties"]["listener.name.client.ssl.keystore.location"].endswith("/cluster-primary.p12")
            assert set(broker["restart_on"]) == {"ca", "cluster-primary"}
            assert set(state["connect-mm2-worker-0"]["restart_on"]) == {"ca", "rest-mm2"}
            assert state["connect-mm2-worker-0"]["properties"]["listeners"].startswith("https://")
            # The brokers and workers depend on the TLS material: their keystores exist before they start.
            tls_urn = urn_of(monitor, "tls")
            for name in ("kafka-primary-broker-0", "connect-mm2-worker-0"):
                reg = next(r for r in monitor.registrations if r.name == name)
                assert tls_urn in reg.dependencies, name
            connector = state["mm2-primary-to-dr-source"]
            assert connector["connect_url"].startswith("https://127.0.0.1:")
            assert connector["config"]["source.cluster.ssl.truststore.password"].startswith("${file:")
            group = next(r for r in monitor.registrations if r.type == "mm2:index:ConnectWorkerGroup")
            assert state[group.name]["restTls"] is True

        return build(topology).apply(check)

    run()


@pulumi.runtime.test
def test_only_the_source_connector_of_an_exactly_once_flow_into_an_unmanaged_target_checks_its_grants(
    monitor: RecordingMonitor,
) -> Any:
    def check(_: Any) -> None:
        state = {urn.rsplit("::", 1)[-1]: reg.state for urn, reg in monitor.resources.items()}
        raw = state["mm2-primary-to-dr-source"]["access_check"]
        assert raw.get(rpc._special_sig_key) == rpc._special_secret_sig  # a secret: it holds the password
        access = plain(raw)
        assert (access["cluster"], access["flow"], access["bootstrap"]) == ("dr", "primary->dr", "dr.example:9092")
        assert access["client"]["sasl.username"] == "replicator"
        assert {a["principal"] for a in access["acls"]} == {"User:replicator"}
        assert "access_check" not in state["mm2-primary-to-dr-checkpoint"]
        assert "access_check" not in state["mm2-primary-to-dr-heartbeat"]

    return build(parse_topology(external_target_config())).apply(check)
