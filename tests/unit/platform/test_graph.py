"""The platform functions under Pulumi's mocks: resource types, names, parents, dependencies and
secrets as the engine would record them (no provider plugin, cluster or docker engine)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pytest
from pulumi.runtime import mocks as pmocks

from components.platform.docker import deploy_docker
from components.platform.kubernetes import deploy_connect_kubernetes, deploy_kafka_kubernetes
from components.platform.manifests import DockerSettings, KubernetesSettings, docker_settings

from .helpers import DOCKER, SASL_KUBERNETES, SECRET_VALUES, prod_settings, prod_topology, topology

SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"


@dataclass
class Registration:
    type: str
    name: str
    parent: str
    dependencies: list[str]
    provider: str
    secret_paths: list[str] = field(default_factory=list)


def _secret_paths(value: Any, path: str = "") -> list[str]:
    if isinstance(value, dict):
        if value.get("4dabf18193072939515e22adb298388d") == SECRET_SIG:
            return [path]
        return [p for k, v in value.items() for p in _secret_paths(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _secret_paths(v, f"{path}[{i}]")]
    return []


class RecordingMonitor(pmocks.MockMonitor):
    def __init__(self, mocks: pmocks.Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []

    def RegisterResource(self, request: Any) -> Any:
        from google.protobuf import json_format

        inputs = json_format.MessageToDict(request.object)
        self.registrations.append(
            Registration(
                request.type,
                request.name,
                request.parent,
                list(request.dependencies),
                request.provider,
                _secret_paths(inputs),
            )
        )
        return super().RegisterResource(request)


class EchoMocks(pmocks.Mocks):
    def new_resource(self, args: pmocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pmocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None


@pytest.fixture
def monitor() -> Iterator[RecordingMonitor]:
    mocks = EchoMocks()
    mon = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="mm2-replication", stack="unit", preview=False, monitor=mon)
    try:
        yield mon
    finally:
        pulumi.runtime.settings.reset_options()


class Parent(pulumi.ComponentResource):
    def __init__(self, type_: str, name: str) -> None:
        super().__init__(type_, name)


def regs(mon: RecordingMonitor) -> dict[str, Registration]:
    return {r.name: r for r in mon.registrations}


def urn_of(mon: RecordingMonitor, name: str) -> str:
    return next(urn for urn in mon.resources if urn.endswith(f"::{name}"))


def settle(outputs: list[pulumi.Output[Any]], resources: list[pulumi.Resource]) -> pulumi.Output[Any]:
    """The outputs' values, once every resource is registered (its id is known)."""
    return pulumi.Output.all(*outputs, *[r.id for r in resources if isinstance(r, pulumi.CustomResource)]).apply(
        lambda values: values[: len(outputs)]
    )


# ---- kubernetes ------------------------------------------------------------------------------


@pulumi.runtime.test
def test_kafka_kubernetes_graph(monitor: RecordingMonitor) -> Any:
    topo = topology(SASL_KUBERNETES)
    parent = Parent("mm2:index:KafkaCluster", "kafka-a")
    out = deploy_kafka_kubernetes(parent, "kafka-a", topo.clusters["a"], settings=KubernetesSettings(namespace="kafka"))

    def check(bootstrap: Any) -> None:
        assert bootstrap == ["a-kafka-bootstrap:9092"]
        r = regs(monitor)
        children = {n: x.type for n, x in r.items() if x.parent == urn_of(monitor, "kafka-a")}
        assert children == {
            "kafka-a-config": "kubernetes:core/v1:ConfigMap",
            "kafka-a-brokers": "kubernetes:core/v1:Service",
            "kafka-a-bootstrap": "kubernetes:core/v1:Service",
            "kafka-a-statefulset": "kubernetes:apps/v1:StatefulSet",
            "kafka-a-pdb": "kubernetes:policy/v1:PodDisruptionBudget",
            "kafka-a-netpol": "kubernetes:networking.k8s.io/v1:NetworkPolicy",
        }
        # The StatefulSet waits for its ConfigMap; no secret is created without secret values.
        assert urn_of(monitor, "kafka-a-config") in r["kafka-a-statefulset"].dependencies
        state = {u.rsplit("::", 1)[-1]: s.state for u, s in monitor.resources.items()}
        assert state["kafka-a-bootstrap"]["metadata"]["name"] == "a-kafka-bootstrap"
        assert state["kafka-a-statefulset"]["spec"]["replicas"] == 3

    return settle([out.bootstrap], out.resources).apply(check)


@pulumi.runtime.test
def test_kafka_kubernetes_creates_secret_marked_secret(monitor: RecordingMonitor) -> Any:
    topo = topology(SASL_KUBERNETES)
    parent = Parent("mm2:index:KafkaCluster", "kafka-a")
    out = deploy_kafka_kubernetes(
        parent,
        "kafka-a",
        topo.clusters["a"],
        settings=KubernetesSettings(namespace="kafka"),
        # A plain mapping on purpose: the Secret must be marked secret even so.
        secret_values=SECRET_VALUES,
    )

    def check(_: Any) -> None:
        r = regs(monitor)
        secret = r["kafka-a-secrets"]
        assert secret.type == "kubernetes:core/v1:Secret"
        assert secret.parent == urn_of(monitor, "kafka-a")
        assert secret.secret_paths == [".stringData"]
        assert urn_of(monitor, "kafka-a-secrets") in r["kafka-a-statefulset"].dependencies
        for reg in r.values():
            if reg.name != "kafka-a-secrets":
                assert reg.secret_paths == [], reg.name

    return settle([out.bootstrap], out.resources).apply(check)


@pulumi.runtime.test
def test_connect_kubernetes_graph(monitor: RecordingMonitor) -> Any:
    topo = topology(SASL_KUBERNETES)
    parent = Parent("mm2:index:ConnectWorkerGroup", "connect-mm2")
    out = deploy_connect_kubernetes(
        parent,
        "connect-mm2",
        topo.worker_groups["mm2"],
        topo,
        settings=KubernetesSettings(namespace="kafka"),
        secret_values=pulumi.Output.secret(SECRET_VALUES),
    )

    def check(url: Any) -> None:
        assert url == ["http://mm2-connect-api.kafka.svc:8083"]
        r = regs(monitor)
        children = {n: x.type for n, x in r.items() if x.parent == urn_of(monitor, "connect-mm2")}
        assert children == {
            "connect-mm2-secrets": "kubernetes:core/v1:Secret",
            "connect-mm2-rest-users": "kubernetes:core/v1:Secret",
            "connect-mm2-config": "kubernetes:core/v1:ConfigMap",
            "connect-mm2-deployment": "kubernetes:apps/v1:Deployment",
            "connect-mm2-api": "kubernetes:core/v1:Service",
            "connect-mm2-pdb": "kubernetes:policy/v1:PodDisruptionBudget",
            "connect-mm2-servicemonitor": "kubernetes:monitoring.coreos.com/v1:ServiceMonitor",
            "connect-mm2-alerts": "kubernetes:monitoring.coreos.com/v1:PrometheusRule",
        }
        deps = set(r["connect-mm2-deployment"].dependencies)
        assert {
            urn_of(monitor, n) for n in ("connect-mm2-secrets", "connect-mm2-rest-users", "connect-mm2-config")
        } <= deps
        assert r["connect-mm2-secrets"].secret_paths and r["connect-mm2-rest-users"].secret_paths
        assert r["connect-mm2-config"].secret_paths == []

    return settle([out.url], out.resources).apply(check)


@pulumi.runtime.test
def test_prod_graph_uses_a_provider_per_kube_context(monitor: RecordingMonitor) -> Any:
    topo = prod_topology()
    settings = prod_settings()
    outs = []
    everything: list[pulumi.Resource] = []
    for alias, cluster in topo.clusters.items():
        parent = Parent("mm2:index:KafkaCluster", f"kafka-{alias}")
        kafka = deploy_kafka_kubernetes(parent, f"kafka-{alias}", cluster, settings=settings, stack="prod")
        outs.append(kafka.bootstrap)
        everything += kafka.resources
    for name, group in topo.worker_groups.items():
        parent = Parent("mm2:index:ConnectWorkerGroup", f"connect-{name}")
        connect = deploy_connect_kubernetes(parent, f"connect-{name}", group, topo, settings=settings)
        outs.append(connect.url)
        everything += connect.resources

    def check(values: Any) -> None:
        assert values == [
            "eu-west-kafka-bootstrap.kafka.example.com:9094",
            "us-east-kafka-bootstrap.kafka.example.com:9094",
            "https://mm2-connect.eu-west.example.com",
            "https://mm2-connect.us-east.example.com",
        ]
        r = regs(monitor)
        providers = {n: x for n, x in r.items() if x.type == "pulumi:providers:kubernetes"}
        assert set(providers) == {
            "kafka-us-east-k8s",
            "kafka-eu-west-k8s",
            "connect-to-us-east-k8s",
            "connect-to-eu-west-k8s",
        }
        state = {u.rsplit("::", 1)[-1]: s.state for u, s in monitor.resources.items()}
        assert state["kafka-us-east-k8s"]["context"] == "prod-us-east"
        # Every kubernetes object goes through its component's provider, never the default one.
        assert r["kafka-us-east-statefulset"].provider.startswith(urn_of(monitor, "kafka-us-east-k8s"))
        assert r["connect-to-eu-west-deployment"].provider.startswith(urn_of(monitor, "connect-to-eu-west-k8s"))
        externals = [n for n in r if n.startswith("kafka-us-east-") and n.endswith("external")]
        assert sorted(externals) == ["kafka-us-east-0-external", "kafka-us-east-1-external", "kafka-us-east-2-external"]

    return settle(outs, everything).apply(check)


# ---- docker ----------------------------------------------------------------------------------


@pulumi.runtime.test
def test_docker_single_host_graph(monitor: RecordingMonitor) -> Any:
    topo = topology(DOCKER)
    parent = Parent("mm2:index:Platform", "docker")
    deployment = deploy_docker(
        parent,
        "docker",
        topo,
        stack="unit",
        settings=docker_settings({"kafkaUi": {"enabled": True}}),
        # Plain on purpose: uploads rendered from secrets must be marked secret regardless.
        secret_values=SECRET_VALUES,
    )
    assert set(deployment.clusters) == {"kafka1", "kafka2"}
    assert deployment.kafka_ui is not None

    def check(_: Any) -> None:
        r = regs(monitor)
        containers = {n: x for n, x in r.items() if x.type == "docker:index/container:Container"}
        assert set(containers) == {
            "docker-kafka1-broker-0",
            "docker-kafka2-broker-0",
            "docker-kafka2-broker-1",
            "docker-connect-connect-worker-0",
            "docker-connect-connect-worker-1",
            "docker-kafka-ui",
        }
        assert r["docker-network"].type == "docker:index/network:Network"
        for c in containers.values():
            assert c.parent == urn_of(monitor, "docker")
            # Secret files reach the containers only as uploads marked secret.
            assert c.secret_paths and all(p.startswith(".uploads") for p in c.secret_paths)
        worker_deps = set(containers["docker-connect-connect-worker-0"].dependencies)
        assert {urn_of(monitor, n) for n in ("docker-kafka1-broker-0", "docker-kafka2-broker-1")} <= worker_deps
        ui_deps = set(containers["docker-kafka-ui"].dependencies)
        assert urn_of(monitor, "docker-connect-connect-worker-1") in ui_deps
        state = {u.rsplit("::", 1)[-1]: s.state for u, s in monitor.resources.items()}
        broker = state["docker-kafka2-broker-1"]
        assert broker["ports"] == [{"internal": 9092, "external": 29194, "ip": "127.0.0.1"}]
        assert broker["networksAdvanced"][0]["aliases"] == ["mm2-unit-kafka2-1"]
        assert state["docker-connect-connect-worker-0"]["networkMode"] == "host"
        for name, s in state.items():
            for env in s.get("envs", []) or []:
                assert not any(v in env for v in SECRET_VALUES.values()), name

    everything: list[pulumi.Resource] = [deployment.network]
    for part in (*deployment.clusters.values(), *deployment.groups.values()):
        everything += part.resources
    if deployment.kafka_ui is not None:
        everything.append(deployment.kafka_ui)
    return settle([deployment.network.name], everything).apply(check)


def test_docker_specs_refuse_other_platforms() -> None:
    from components.platform.manifests import docker_broker_specs

    config = {**DOCKER, "clusters": {**DOCKER["clusters"]}}
    config["clusters"]["kafka1"] = {**DOCKER["clusters"]["kafka1"], "platform": "kubernetes"}
    config["clusters"]["kafka1"].pop("port")
    topo = topology(config)
    with pytest.raises(ValueError, match="not a docker cluster"):
        docker_broker_specs(topo.clusters["kafka1"], "unit", DockerSettings())
