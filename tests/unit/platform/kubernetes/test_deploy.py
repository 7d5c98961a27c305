"""The kubernetes platform under Pulumi's mocks: what `deploy_kafka_kubernetes` and
`deploy_connect_kubernetes` register."""

from __future__ import annotations

from typing import Any

import pulumi

from components.platform.kubernetes.deploy import (
    SECRETS_ANNOTATION,
    broker_pods,
    deploy_connect_kubernetes,
    deploy_kafka_kubernetes,
)
from components.platform.settings import KubernetesSettings
from tests.unit.mocks import RecordingMonitor

from ..helpers import SASL_KUBERNETES, SECRET_VALUES, prod_settings, prod_topology, topology
from ..mocks import Parent, regs, settle, states, urn_of


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
            "kafka-a-serviceaccount": "kubernetes:core/v1:ServiceAccount",
            "kafka-a-clusterrole": "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
            "kafka-a-clusterrolebinding": "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
            "kafka-a-brokers": "kubernetes:core/v1:Service",
            "kafka-a-bootstrap": "kubernetes:core/v1:Service",
            "kafka-a-statefulset": "kubernetes:apps/v1:StatefulSet",
            "kafka-a-statefulset-shape": "pulumi-python:dynamic/kubernetes:StatefulSetShape",
            "kafka-a-pods-started": "pulumi-python:dynamic/kubernetes:PodsStarted",
            "kafka-a-pdb": "kubernetes:policy/v1:PodDisruptionBudget",
            "kafka-a-netpol": "kubernetes:networking.k8s.io/v1:NetworkPolicy",
            "kafka-a-servicemonitor": "kubernetes:monitoring.coreos.com/v1:ServiceMonitor",
            "kafka-a-prometheusrule": "kubernetes:monitoring.coreos.com/v1:PrometheusRule",
            "kafka-a-priorityclass": "kubernetes:scheduling.k8s.io/v1:PriorityClass",
        }
        # The StatefulSet waits for its ConfigMap and for the guard of its fixed fields (a forbidden
        # change fails there, before the StatefulSet is touched); no secret without secret values.
        assert urn_of(monitor, "kafka-a-config") in r["kafka-a-statefulset"].dependencies
        assert urn_of(monitor, "kafka-a-statefulset-shape") in r["kafka-a-statefulset"].dependencies
        # Its pods' init container reads their node's zone as the ServiceAccount the binding allows.
        assert urn_of(monitor, "kafka-a-clusterrolebinding") in r["kafka-a-statefulset"].dependencies
        state = states(monitor)
        assert state["kafka-a-bootstrap"]["metadata"]["name"] == "a-kafka-bootstrap"
        assert state["kafka-a-statefulset"]["spec"]["replicas"] == 3
        # The watch on the brokers' pods starts with the StatefulSet (both wait for the
        # ConfigMap) and knows its pods by the digest stamped on their template.
        watch = state["kafka-a-pods-started"]
        template = state["kafka-a-statefulset"]["spec"]["template"]["metadata"]["annotations"]
        assert watch["template"] == template["mm2-iac.dev/template"] and len(watch["template"]) == 16
        assert watch["selector"] == state["kafka-a-statefulset"]["spec"]["selector"]["matchLabels"]
        assert (watch["replicas"], watch["bound"]) == (3, "5m")
        assert watch["resources_key"] == "mm2-platform:kubernetes.kafka.resources"
        assert watch["count_key"] == "mm2:clusters.a.brokers"
        assert watch["image_key"] == "mm2-platform:kubernetes.kafka.image"
        assert urn_of(monitor, "kafka-a-config") in r["kafka-a-pods-started"].dependencies
        assert urn_of(monitor, "kafka-a-pods-started") not in r["kafka-a-statefulset"].dependencies
        assert urn_of(monitor, "kafka-a-statefulset") not in r["kafka-a-pods-started"].dependencies

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
                # A dynamic resource's serialized provider is always secret; nothing else is.
                assert [p for p in reg.secret_paths if p != ".__provider"] == [], reg.name

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
            "connect-mm2-priorityclass": "kubernetes:scheduling.k8s.io/v1:PriorityClass",
            "connect-mm2-deployment": "kubernetes:apps/v1:Deployment",
            "connect-mm2-pods-started": "pulumi-python:dynamic/kubernetes:PodsStarted",
            "connect-mm2-api": "kubernetes:core/v1:Service",
            "connect-mm2-metrics": "kubernetes:core/v1:Service",
            "connect-mm2-pdb": "kubernetes:policy/v1:PodDisruptionBudget",
            "connect-mm2-servicemonitor": "kubernetes:monitoring.coreos.com/v1:ServiceMonitor",
            "connect-mm2-alerts": "kubernetes:monitoring.coreos.com/v1:PrometheusRule",
        }
        deps = set(r["connect-mm2-deployment"].dependencies)
        assert {
            urn_of(monitor, n) for n in ("connect-mm2-secrets", "connect-mm2-rest-users", "connect-mm2-config")
        } <= deps
        # The start watch waits for what the pods need, not for the Deployment it watches.
        watch = set(r["connect-mm2-pods-started"].dependencies)
        assert urn_of(monitor, "connect-mm2-config") in watch and urn_of(monitor, "connect-mm2-deployment") not in watch
        # The watch waits for the rollout (pulumi-kubernetes does not), the Services for the watch:
        # a pod that cannot start ends `up` when the watch says why, not at readyTimeout.
        assert states(monitor)["connect-mm2-pods-started"]["until"] == "ready"
        assert states(monitor)["connect-mm2-deployment"]["metadata"]["annotations"] == {
            "pulumi.com/waitFor": "jsonpath={.metadata.uid}"
        }
        for service in ("connect-mm2-api", "connect-mm2-metrics"):
            assert urn_of(monitor, "connect-mm2-pods-started") in r[service].dependencies, service
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
        state = states(monitor)
        assert state["kafka-us-east-k8s"]["context"] == "prod-us-east"
        # Every kubernetes object goes through its component's provider, never the default one.
        assert r["kafka-us-east-statefulset"].provider.startswith(urn_of(monitor, "kafka-us-east-k8s"))
        assert r["connect-to-eu-west-deployment"].provider.startswith(urn_of(monitor, "connect-to-eu-west-k8s"))
        # The provider's wait for each object is bounded by readyTimeout, not its default 10 minutes.
        kinds = ("StatefulSet", "Deployment", "Service")
        waited = {x.create_timeout for x in r.values() if x.type.rsplit(":", 1)[-1] in kinds}
        assert waited == {settings.ready_timeout} == {"5m"}
        externals = [n for n in r if n.startswith("kafka-us-east-") and n.endswith("external")]
        assert sorted(externals) == ["kafka-us-east-0-external", "kafka-us-east-1-external", "kafka-us-east-2-external"]

    return settle(outs, everything).apply(check)


def test_the_brokers_pods_are_exported_by_context_namespace_and_statefulset() -> None:
    # bin/status asks the API server for pod <statefulset>-<broker id> in that namespace and context.
    settings = prod_settings()
    pods = broker_pods(settings, "us-east")
    assert pods == {"context": "prod-us-east", "namespace": settings.namespace, "statefulset": "us-east-kafka"}
    assert broker_pods(KubernetesSettings(namespace="kafka"), "a")["context"] == ""  # the kubeconfig's current one


@pulumi.runtime.test
def test_with_the_admin_connection_the_brokers_roll_after_their_statefulset(monitor: RecordingMonitor) -> Any:
    topo = topology(SASL_KUBERNETES)
    parent = Parent("mm2:index:KafkaCluster", "kafka-a")
    admin = pulumi.Output.secret({"security.protocol": "SASL_SSL", "sasl.password": "pw"})
    settings = KubernetesSettings(namespace="kafka")
    out = deploy_kafka_kubernetes(parent, "kafka-a", topo.clusters["a"], settings=settings, admin=admin)

    def check(_: Any) -> None:
        r = regs(monitor)
        assert r["kafka-a-roll"].type == "pulumi-python:dynamic/kubernetes:BrokerRoll"
        assert urn_of(monitor, "kafka-a-statefulset") in r["kafka-a-roll"].dependencies
        state = states(monitor)
        roll = state["kafka-a-roll"]
        template = state["kafka-a-statefulset"]["spec"]["template"]["metadata"]["annotations"]
        # The roll follows the template and the TLS Secret the brokers mount (read, hashed, not secret).
        assert roll["template"] == f"{template['mm2-iac.dev/template']}-{template['mm2-iac.dev/tls']}"
        assert len(template["mm2-iac.dev/tls"]) == 16
        assert [p for p in r["kafka-a-statefulset"].secret_paths if "annotations" in p] == []
        assert (roll["statefulset"], roll["replicas"], roll["bound"], roll["override"]) == ("a-kafka", 3, "5m", False)
        assert roll["override_key"] == "mm2-platform:kubernetes.kafka.rollOverride"
        # The admin's password reaches the roll only as a secret.
        assert ".admin" in r["kafka-a-roll"].secret_paths

    return settle([out.bootstrap], out.resources).apply(check)


def _template_annotations(monitor: RecordingMonitor, name: str) -> dict[str, Any]:
    from google.protobuf import json_format

    [request] = [r for r in monitor.requests if r.name == name]
    manifest = json_format.MessageToDict(request.object)
    return dict(manifest["spec"]["template"]["metadata"]["annotations"])


@pulumi.runtime.test
def test_a_rotated_password_rolls_the_workers_without_its_digest_being_secret(monitor: RecordingMonitor) -> Any:
    topo = topology(SASL_KUBERNETES)
    rotated = {**SECRET_VALUES, "mm2.worker.password": "wk-rotated-Zq99"}
    outs = []
    for name, values in (("connect-one", SECRET_VALUES), ("connect-same", SECRET_VALUES), ("connect-new", rotated)):
        parent = Parent("mm2:index:ConnectWorkerGroup", name)
        settings = KubernetesSettings(namespace="kafka")
        group = topo.worker_groups["mm2"]
        outs.append(
            deploy_connect_kubernetes(
                parent, name, group, topo, settings=settings, secret_values=pulumi.Output.secret(values)
            )
        )

    def check(_: Any) -> None:
        digests = [
            _template_annotations(monitor, f"connect-{n}-deployment")[SECRETS_ANNOTATION]
            for n in ("one", "same", "new")
        ]
        assert digests[0] == digests[1] != digests[2] and len(digests[0]) == 16
        assert all(value not in digests[0] for value in SECRET_VALUES.values())
        assert regs(monitor)["connect-one-deployment"].secret_paths == []  # the digest is plain, the Deployment too

    return settle([o.url for o in outs], [r for o in outs for r in o.resources]).apply(check)
