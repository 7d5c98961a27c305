"""The component graph the real program (`components.program`) registers under Pulumi's mocks:
which resources, their names, parents and dependencies."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
from pulumi.runtime import rpc

from components.platform.secret_files import container_secret_keys
from components.program import failover_export, group_export, program
from components.rpc_values import plain
from components.topology import Topology, parse_topology
from tests.unit.mocks import RecordingMonitor, Registration, mocked
from tests.unit.topology.helpers import external_target_config

from .program_harness import ROOT, namespace, settled, stack_config, yaml_config


@pytest.fixture
def monitor() -> Iterator[RecordingMonitor]:
    with mocked() as mon:
        yield mon


def dev_config() -> dict[str, Any]:
    return yaml_config(ROOT / "Pulumi.dev.yaml")


def example_config(name: str) -> dict[str, Any]:
    return yaml_config(ROOT / "examples" / f"{name}.yaml")


def build(
    config: dict[str, Any], project: Path, mm2: dict[str, Any] | None = None, given: dict[str, str] | None = None
) -> pulumi.Output[Any]:
    """What `pulumi up` builds from the stack file `config` (or its `mm2` sections replaced)."""
    return settled(stack_config(config, project, mm2=mm2, given=given))


def topology_of(config: dict[str, Any]) -> Topology:
    return parse_topology(namespace(config, "mm2"))


def by_name(mon: RecordingMonitor) -> dict[str, Registration]:
    return {r.name: r for r in mon.registrations}


def urn_of(mon: RecordingMonitor, name: str) -> str:
    return next(urn for urn in mon.resources if urn.endswith(f"::{name}"))


@pulumi.runtime.test
def test_dev_stack_graph(monitor: RecordingMonitor, tmp_path: Path) -> Any:
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
            # every local group has a watcher: it restarts dead workers (autoRestart or not)
            "connect-mm2-watcher": "pulumi-python:dynamic/local:Watcher",
            # and, with flows to run, a lag exporter: lag per partition and the data-loss sentinel
            "connect-mm2-lag-exporter": "pulumi-python:dynamic/local:LagExporter",
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
        # ... and go with their cluster: destroying it never asks its brokers to delete each topic.
        [topic] = [r for r in monitor.requests if r.name == "kafka-primary-topic-orders"]
        assert topic.deletedWith == urn_of(monitor, "kafka-primary")
        assert urn_of(monitor, "kafka-dr-broker-0") in regs["connect-mm2-worker-0"].dependencies
        assert urn_of(monitor, "kafka-primary-broker-0") not in regs["connect-mm2-worker-0"].dependencies
        # Users and ACLs exist before the workers start; the secrets file before any worker;
        # the rollout runs after the connectors.
        for needed in ("kafka-dr-scram-users", "kafka-dr-acls", "connect-mm2-secrets"):
            assert urn_of(monitor, needed) in regs["connect-mm2-worker-0"].dependencies, needed
        assert urn_of(monitor, "kafka-dr-broker-0") in regs["kafka-dr-acls"].dependencies
        rollout = regs["flow-primary-to-dr-rollout"].dependencies
        assert urn_of(monitor, "mm2-primary-to-dr-source") in rollout

    return build(dev_config(), tmp_path).apply(check)


@pulumi.runtime.test
def test_connector_inputs_carry_mm2_config(monitor: RecordingMonitor, tmp_path: Path) -> Any:
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

    return build(dev_config(), tmp_path).apply(check)


@pulumi.runtime.test
def test_declared_connector_states_reach_the_connectors_and_the_flow_summary(
    monitor: RecordingMonitor, tmp_path: Path
) -> Any:
    mm2 = copy.deepcopy(namespace(dev_config(), "mm2"))
    declared_states = {"source": "STOPPED", "checkpoint": "PAUSED"}
    mm2["flows"]["primary->dr"]["connectorStates"] = declared_states

    def check(values: list[Any]) -> None:
        state = {urn.rsplit("::", 1)[-1]: reg.state for urn, reg in monitor.resources.items()}
        declared = {role: state[f"mm2-primary-to-dr-{role}"]["desired_state"] for role in declared_states}
        assert declared == declared_states
        assert state["mm2-primary-to-dr-heartbeat"]["desired_state"] == "RUNNING"
        assert values[0]["desiredStates"] == {"source": "STOPPED", "checkpoint": "PAUSED", "heartbeat": "RUNNING"}

    return build(dev_config(), tmp_path, mm2=mm2).apply(check)


@pulumi.runtime.test
def test_a_loss_acknowledgement_reaches_the_flow_summary(monitor: RecordingMonitor, tmp_path: Path) -> Any:
    mm2 = copy.deepcopy(namespace(dev_config(), "mm2"))
    mm2["flows"]["primary->dr"]["lossAcknowledged"] = "2026-11-18T12:06:40+01:00"

    def check(values: list[Any]) -> None:
        assert values[0]["lossAcknowledgedAt"] == "2026-11-18T11:06:40Z"  # the same instant, in UTC

    return build(dev_config(), tmp_path, mm2=mm2).apply(check)


EXAMPLES = ["active-passive", "active-active", "fan-out", "aggregation", "six-cluster-mesh", "active-passive-tls"]


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_topologies_build_their_graph(example: str, monitor: RecordingMonitor, tmp_path: Path) -> None:
    config = example_config(example)
    topology = topology_of(config)

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

        return build(config, tmp_path).apply(check)

    run()


@pulumi.runtime.test
def test_prod_stack_builds_kubernetes_clusters_and_groups(monitor: RecordingMonitor, tmp_path: Path) -> Any:
    # The `mm2-platform:kubernetes` settings come from the stack file too, as `pulumi up` reads them.
    config = yaml_config(ROOT / "Pulumi.prod.yaml")
    topology = topology_of(config)
    # prod generates nothing: every password its pods mount is given (`mm2:secrets`).
    given = {key: f"given-{key}" for key in container_secret_keys(topology)}

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
        # Each group with flows runs its lag exporter: objects under the group, no local process.
        assert "pulumi-python:dynamic/local:LagExporter" not in types
        named = by_name(monitor)
        for group in topology.worker_groups:
            exporter = {
                suffix: named[f"connect-{group}-lag-exporter{suffix}"].type
                for suffix in ("", "-config", "-state", "-clients", "-svc", "-servicemonitor")
            }
            assert exporter == {
                "": "kubernetes:apps/v1:Deployment",
                "-config": "kubernetes:core/v1:ConfigMap",
                "-state": "kubernetes:core/v1:PersistentVolumeClaim",
                "-clients": "kubernetes:core/v1:Secret",
                "-svc": "kubernetes:core/v1:Service",
                "-servicemonitor": "kubernetes:monitoring.coreos.com/v1:ServiceMonitor",
            }
            assert named[f"connect-{group}-lag-exporter"].parent == urn_of(monitor, f"connect-{group}")
        # Each region's workers reach their own cluster in-cluster and the other region's at its
        # public bootstrap (Pulumi.prod.yaml gives both an internalBootstrap; contexts differ).
        state = {urn.rsplit("::", 1)[-1]: reg.state for urn, reg in monitor.resources.items()}
        source = state["mm2-eu-west-to-us-east-source"]["config"]
        assert source["source.cluster.bootstrap.servers"] == "eu-west-kafka-bootstrap.kafka.example.com:9094"
        assert source["target.cluster.bootstrap.servers"] == "us-east-kafka-bootstrap.mm2.svc:9092"
        workers = state["connect-to-us-east-config"]["data"]["connect-distributed.properties"]
        assert "bootstrap.servers=us-east-kafka-bootstrap.mm2.svc:9092" in workers.splitlines()

    return build(config, tmp_path, given=given).apply(check)


@pulumi.runtime.test
def test_prod_exports_each_groups_in_cluster_lag_url(monitor: RecordingMonitor, tmp_path: Path) -> Any:
    config = yaml_config(ROOT / "Pulumi.prod.yaml")
    given = {key: f"given-{key}" for key in container_secret_keys(topology_of(config))}
    deployed = program(stack_config(config, tmp_path, given=given))
    lag_urls = {name: group_export(name, deployed).to_json()["lagUrl"] for name in deployed.groups}
    # The exporter's Service, even for groups whose workers are reached through an ingress `url`.
    assert lag_urls == {
        "to-eu-west": "http://to-eu-west-lag-exporter.mm2.svc:9404",
        "to-us-east": "http://to-us-east-lag-exporter.mm2.svc:9404",
    }
    # Where its workers run as pods, so bin/status reads their metrics through the API server.
    assert group_export("to-eu-west", deployed).to_json()["pods"] == {
        "context": "prod-eu-west",
        "namespace": "mm2",
        "selector": "app.kubernetes.io/instance=to-eu-west,app.kubernetes.io/name=kafka-connect",
        "port": "9404",
    }
    return pulumi.Output.all(*[g.url for g in deployed.groups.values()])


def test_tls_example_issues_certificates_and_restarts_processes_on_renewal(
    monitor: RecordingMonitor, tmp_path: Path
) -> None:
    config = example_config("active-passive-tls")

    @pulumi.runtime.test
    def run() -> Any:
        def check(_: Any) -> None:
            state = {urn.rsplit("::", 1)[-1]: reg.state for urn, reg in monitor.resources.items()}
            material = [r for r in monitor.registrations if r.type == "pulumi-python:dynamic/local:TlsMaterial"]
            assert [r.name for r in material] == ["tls"], "one CA per stack"
            assert [leaf["name"] for leaf in state["tls"]["leaves"]] == ["cluster-dr", "cluster-primary", "rest-mm2"]
            assert state["tls"]["root"] == f"{tmp_path}/.mm2/run/unit/tls"
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

        return build(config, tmp_path).apply(check)

    run()


@pulumi.runtime.test
def test_only_the_source_connector_of_an_exactly_once_flow_into_an_unmanaged_target_checks_its_grants(
    monitor: RecordingMonitor, tmp_path: Path
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

    return build({}, tmp_path, mm2=external_target_config()).apply(check)


def pair_mm2(**pair: Any) -> dict[str, Any]:
    """The dev stack's `mm2` namespace with the way back dr->primary and the pair primary<->dr, active dr."""
    mm2 = copy.deepcopy(namespace(dev_config(), "mm2"))
    mm2["flows"]["dr->primary"] = copy.deepcopy(mm2["flows"]["primary->dr"])
    mm2["failover"] = {"primary<->dr": {"active": "dr", "principals": ["app"], **pair}}
    return mm2


@pulumi.runtime.test
def test_a_cluster_pair_registers_its_switchover_before_both_flows(monitor: RecordingMonitor, tmp_path: Path) -> Any:
    mm2 = pair_mm2()

    def check(_: Any) -> None:
        regs = by_name(monitor)
        switchover = regs["failover-primary-dr"]
        assert switchover.type == "pulumi-python:dynamic/failover:Switchover"
        # Depending on a component is depending on its children: the clusters' and the group's resources.
        assert {"KafkaCluster", "ConnectWorkerGroup"} <= {
            kind for d in switchover.dependencies for kind in ("KafkaCluster", "ConnectWorkerGroup") if kind in d
        }
        inputs = monitor.resources[urn_of(monitor, "failover-primary-dr")].state
        assert (inputs["pair"]["active"], inputs["pair"]["principals"]) == ("dr", ["User:app"])
        assert set(inputs["patterns"]) == {"primary->dr", "dr->primary"}
        # Every connector of both flows waits for it: it stops one flow and the other starts after it.
        for flow in ("primary-to-dr", "dr-to-primary"):
            for role in ("source", "checkpoint", "heartbeat"):
                assert urn_of(monitor, "failover-primary-dr") in regs[f"mm2-{flow}-{role}"].dependencies
        state = {urn.rsplit("::", 1)[-1]: reg.state for urn, reg in monitor.resources.items()}
        assert state["mm2-primary-to-dr-source"]["desired_state"] == "STOPPED"
        assert state["mm2-dr-to-primary-source"]["desired_state"] == "RUNNING"
        assert not any("wait_for_state" in s for s in state.values()), "a planned pair's connectors wait"

    return build(dev_config(), tmp_path, mm2=mm2).apply(check)


@pulumi.runtime.test
def test_an_unplanned_pairs_connectors_do_not_wait_on_the_lost_cluster(
    monitor: RecordingMonitor, tmp_path: Path
) -> Any:
    mm2 = pair_mm2(unplanned=True)

    def check(_: Any) -> None:
        state = {urn.rsplit("::", 1)[-1]: reg.state for urn, reg in monitor.resources.items()}
        for flow in ("primary-to-dr", "dr-to-primary"):
            for role in ("source", "checkpoint", "heartbeat"):
                connector = state[f"mm2-{flow}-{role}"]
                assert (connector["desired_state"], connector["wait_for_state"]) == ("STOPPED", False), flow

    return build(dev_config(), tmp_path, mm2=mm2).apply(check)


@pulumi.runtime.test
def test_a_pairs_export_names_its_active_side_and_what_its_fence_holds(
    monitor: RecordingMonitor, tmp_path: Path
) -> Any:
    mm2 = pair_mm2()
    mm2["flows"]["dr->primary"]["topicsExclude"] = ["tmp.*"]
    deployed = program(stack_config(dev_config(), tmp_path, mm2=mm2))

    def check(doc: dict[str, Any]) -> None:
        assert (doc["active"], doc["principals"], doc["unplanned"], doc["last"]) == ("dr", ["User:app"], False, None)
        topics = list(mm2["flows"]["dr->primary"]["topics"])
        assert doc["patterns"]["dr->primary"] == {"topics": topics, "topicsExclude": ["tmp.*"]}

    return failover_export(deployed.switchovers["primary<->dr"]).apply(check)
