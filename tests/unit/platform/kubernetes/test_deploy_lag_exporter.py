"""The kubernetes platform under Pulumi's mocks: the lag exporter a worker group's backend registers."""

from __future__ import annotations

import copy
import json
from typing import Any

import pulumi

from components.platform.contract import WorkerRequest
from components.platform.kubernetes.backend import KubernetesBackend
from components.platform.secret_files import container_secret_keys
from components.platform.settings import KubernetesSettings
from components.rpc_values import plain
from tests.unit.mocks import RecordingMonitor

from ..helpers import SASL_KUBERNETES, SECRET_VALUES, prod_settings, prod_topology, topology
from ..mocks import Parent, regs, settle, states, urn_of


def request(config: dict[str, Any], group: str = "mm2") -> WorkerRequest:
    topo = topology(config)
    storage = Parent("mm2:index:KafkaCluster", f"kafka-{topo.worker_groups[group].cluster}")
    return WorkerRequest(topo.worker_groups[group], topo, pulumi.Output.secret(SECRET_VALUES), storage)


@pulumi.runtime.test
def test_the_workers_come_with_their_lag_exporter_and_its_in_cluster_url(monitor: RecordingMonitor) -> Any:
    backend = KubernetesBackend(KubernetesSettings(namespace="kafka"), "unit", pulumi.Output.secret(SECRET_VALUES))
    parent = Parent("mm2:index:ConnectWorkerGroup", "connect-mm2")
    deployed = backend.deploy_workers(parent, "connect-mm2", request(SASL_KUBERNETES))

    def check(values: Any) -> None:
        assert values[0] == "http://mm2-lag-exporter.kafka.svc:9404"
        r = regs(monitor)
        exporter = {n: x.type for n, x in r.items() if "lag-exporter" in n}
        assert exporter == {
            "connect-mm2-lag-exporter-clients": "kubernetes:core/v1:Secret",
            "connect-mm2-lag-exporter-config": "kubernetes:core/v1:ConfigMap",
            "connect-mm2-lag-exporter-state": "kubernetes:core/v1:PersistentVolumeClaim",
            "connect-mm2-lag-exporter": "kubernetes:apps/v1:Deployment",
            "connect-mm2-lag-exporter-pods-started": "pulumi-python:dynamic/kubernetes:PodsStarted",
            "connect-mm2-lag-exporter-svc": "kubernetes:core/v1:Service",
            "connect-mm2-lag-exporter-servicemonitor": "kubernetes:monitoring.coreos.com/v1:ServiceMonitor",
        }
        assert all(r[n].parent == urn_of(monitor, "connect-mm2") for n in exporter)
        # The passwords only in the Secret, stored as a secret; nothing else holds one.
        assert r["connect-mm2-lag-exporter-clients"].secret_paths == [".stringData"]
        for name in exporter:
            if name == "connect-mm2-lag-exporter-pods-started":
                # A dynamic resource keeps its serialized provider as a secret; nothing else is one.
                assert r[name].secret_paths == [".__provider"], r[name].secret_paths
            elif name != "connect-mm2-lag-exporter-clients":
                assert r[name].secret_paths == [], name
        # The pod starts after what it mounts, and after the workers (they create the offsets topic).
        deps = set(r["connect-mm2-lag-exporter"].dependencies)
        wanted = ("config", "state", "clients")
        assert {urn_of(monitor, f"connect-mm2-lag-exporter-{n}") for n in wanted} <= deps
        assert urn_of(monitor, "connect-mm2-deployment") in deps
        # Its Service once the watch has seen its pod Ready (pulumi-kubernetes waits for neither).
        watched = urn_of(monitor, "connect-mm2-lag-exporter-pods-started")
        assert watched in r["connect-mm2-lag-exporter-svc"].dependencies
        assert states(monitor)["connect-mm2-lag-exporter-pods-started"]["until"] == "ready"
        assert "pulumi.com/waitFor" in states(monitor)["connect-mm2-lag-exporter"]["metadata"]["annotations"]
        state = states(monitor)
        clients = json.loads(plain(state["connect-mm2-lag-exporter-clients"]["stringData"])["clients.json"])
        assert clients == {"a": {"sasl.password": "pw-a-Zq81"}, "b": {"sasl.password": "pw-b-Zq82"}}

    return settle([pulumi.Output.from_input(deployed.lag_url)], list(deployed.resources)).apply(check)


@pulumi.runtime.test
def test_without_secret_values_the_clients_secret_is_referenced_only(monitor: RecordingMonitor) -> Any:
    backend = KubernetesBackend(KubernetesSettings(namespace="kafka"), "unit")
    parent = Parent("mm2:index:ConnectWorkerGroup", "connect-mm2")
    deployed = backend.deploy_workers(parent, "connect-mm2", request(SASL_KUBERNETES))

    def check(_: Any) -> None:
        r = regs(monitor)
        assert "connect-mm2-lag-exporter-clients" not in r
        state = states(monitor)
        (container,) = state["connect-mm2-lag-exporter"]["spec"]["template"]["spec"]["containers"]
        refs = [e["valueFrom"]["secretKeyRef"]["name"] for e in container["env"] if "valueFrom" in e]
        assert refs == ["mm2-lag-exporter-clients"]

    return settle([], list(deployed.resources)).apply(check)


@pulumi.runtime.test
def test_a_group_without_enabled_flows_has_no_exporter(monitor: RecordingMonitor) -> Any:
    config = copy.deepcopy(SASL_KUBERNETES)
    for flow in config["flows"].values():
        flow["enabled"] = False
    backend = KubernetesBackend(KubernetesSettings(namespace="kafka"), "unit", SECRET_VALUES)
    deployed = backend.deploy_workers(
        Parent("mm2:index:ConnectWorkerGroup", "connect-mm2"), "connect-mm2", request(config)
    )
    assert deployed.lag_url is None

    def check(_: Any) -> None:
        assert not [n for n in regs(monitor) if "lag-exporter" in n]

    return settle([], list(deployed.resources)).apply(check)


@pulumi.runtime.test
def test_prod_exporters_go_through_their_groups_kube_context(monitor: RecordingMonitor) -> Any:
    topo, settings = prod_topology(), prod_settings()
    backend = KubernetesBackend(settings, "prod", {key: f"given-{key}" for key in container_secret_keys(topo)})
    resources: list[pulumi.Resource] = []
    urls = []
    for name, group in topo.worker_groups.items():
        parent = Parent("mm2:index:ConnectWorkerGroup", f"connect-{name}")
        storage = Parent("mm2:index:KafkaCluster", f"kafka-{group.cluster}")
        deployed = backend.deploy_workers(
            parent, f"connect-{name}", WorkerRequest(group, topo, pulumi.Output.secret({}), storage)
        )
        resources += deployed.resources
        urls.append(pulumi.Output.from_input(deployed.lag_url))

    def check(values: Any) -> None:
        # In-cluster, even where the workers have an ingress `url`: the exporter has none.
        assert values == ["http://to-eu-west-lag-exporter.mm2.svc:9404", "http://to-us-east-lag-exporter.mm2.svc:9404"]
        r = regs(monitor)
        # One provider per group and context: the exporter shares the workers'.
        providers = {n for n, x in r.items() if x.type == "pulumi:providers:kubernetes"}
        assert providers == {"connect-to-eu-west-k8s", "connect-to-us-east-k8s"}
        assert r["connect-to-eu-west-lag-exporter"].provider.startswith(urn_of(monitor, "connect-to-eu-west-k8s"))
        assert r["connect-to-us-east-lag-exporter-state"].provider.startswith(urn_of(monitor, "connect-to-us-east-k8s"))
        # The digest of the group's client TLS Secret (read at each preview) is stamped on the
        # workers' and the exporter's pod templates: a renewed store rolls both.
        state = states(monitor)
        stamps = [
            state[f"connect-to-eu-west-{w}"]["spec"]["template"]["metadata"]["annotations"]["mm2-iac.dev/tls"]
            for w in ("deployment", "lag-exporter")
        ]
        assert stamps[0] == stamps[1] and len(stamps[0]) == 16
        assert [p for p in r["connect-to-eu-west-deployment"].secret_paths if "annotations" in p] == []

    return settle(urls, resources).apply(check)
