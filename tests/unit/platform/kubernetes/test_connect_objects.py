"""Kubernetes objects of a Connect worker group: the fields a production deployment depends on."""

from __future__ import annotations

import pytest

from components.platform.kubernetes.connect_objects import connect_objects
from components.platform.settings import PlatformSettingsError, kubernetes_settings

from ..helpers import SASL_KUBERNETES, parse_properties, topology
from .objects import SETTINGS, connect, container


def test_connect_service_deployment_and_probes() -> None:
    objs = connect()
    assert objs.service["metadata"]["name"] == "mm2-connect-api"
    assert {p["name"]: p["port"] for p in objs.service["spec"]["ports"]} == {"rest": 8083}
    # Metrics stay inside the cluster whatever the REST Service's type, and the ServiceMonitor finds them.
    metrics = objs.metrics_service
    assert metrics is not None and metrics["metadata"]["name"] == "mm2-connect-metrics"
    assert metrics["spec"]["type"] == "ClusterIP"
    assert metrics["spec"]["ports"] == [{"name": "metrics", "port": 9404, "targetPort": 9404}]
    monitor = objs.service_monitor
    assert monitor is not None and monitor["spec"]["endpoints"][0]["port"] == "metrics"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= metrics["metadata"]["labels"].items()
    dep = objs.deployment
    assert dep["kind"] == "Deployment"
    assert dep["spec"]["replicas"] == 3
    main = container(dep)
    assert main["readinessProbe"]["tcpSocket"]["port"] == 8083
    assert main["livenessProbe"]["tcpSocket"]["port"] == 8083
    assert objs.url == "http://mm2-connect-api.kafka.svc:8083"


def test_connect_url_prefers_the_configured_url() -> None:
    config = {**SASL_KUBERNETES}
    config["workerGroups"] = {
        "mm2": {
            "cluster": "b",
            "workers": 3,
            "restAuth": True,
            "platform": "kubernetes",
            "url": "https://c.example.com/",
        }
    }
    topo = topology(config)
    assert connect_objects(topo.worker_groups["mm2"], topo, SETTINGS).url == "https://c.example.com"


def test_worker_config_rest_auth_and_metrics_agent() -> None:
    objs = connect()
    data = objs.config_map["data"]
    worker = parse_properties(data["connect-distributed.properties"])
    assert worker["listeners"] == "http://0.0.0.0:8083"
    assert worker["bootstrap.servers"] == "b-kafka-bootstrap:9092"
    assert worker["rest.extension.classes"].endswith("BasicAuthSecurityRestExtension")
    assert 'file="/etc/mm2/rest/users.properties"' in data["rest-jaas.conf"]
    env = {e["name"]: e for e in container(objs.deployment)["env"]}
    opts = env["KAFKA_OPTS"]["value"]
    assert "-javaagent:/opt/mm2/agent/jmx_prometheus_javaagent.jar=9404:/etc/mm2/config/jmx-exporter.yaml" in opts
    assert "-Djava.security.auth.login.config=/etc/mm2/config/rest-jaas.conf" in opts
    volumes = {v["name"]: v for v in objs.deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["rest-users"]["secret"]["secretName"] == "mm2-connect-rest-users"
    assert volumes["secrets"]["secret"]["items"] == [{"key": "secrets.properties", "path": "secrets.properties"}]
    # The agent is baked into the image: no pod downloads anything at start.
    assert "agent" not in volumes and "initContainers" not in objs.deployment["spec"]["template"]["spec"]
    mounts = container(objs.deployment)["volumeMounts"]
    # Each store's directory is a mount of its own with the store's key projected to its file
    # name (no subPath: a renewed certificate reaches the running pod).
    tls = {m["mountPath"]: volumes[m["name"]]["secret"] for m in mounts if m["name"].startswith("client-tls")}
    assert {folder: secret["items"] for folder, secret in tls.items()} == {
        "/etc/mm2/tls/a": [{"key": "a.truststore.p12", "path": "truststore.p12"}],
        "/etc/mm2/tls/b": [{"key": "b.truststore.p12", "path": "truststore.p12"}],
    }
    assert {secret["secretName"] for secret in tls.values()} == {"mm2-connect-tls"}
    assert not any("subPath" in m for m in mounts)


def test_metrics_off_drops_agent_monitor_and_rules() -> None:
    objs = connect(kubernetes_settings({"namespace": "kafka", "connect": {"metrics": False}}))
    assert objs.service_monitor is None and objs.prometheus_rule is None and objs.metrics_service is None
    assert "KAFKA_OPTS" in {e["name"] for e in container(objs.deployment)["env"]}  # REST auth still needs JAAS
    assert "initContainers" not in objs.deployment["spec"]["template"]["spec"]


def test_connect_rest_api_on_a_node_port() -> None:
    with pytest.raises(PlatformSettingsError, match="nodePort: needs serviceType: NodePort"):
        kubernetes_settings({"workerGroups": {"mm2": {"nodePort": 30083}}})
    settings = kubernetes_settings({"workerGroups": {"mm2": {"serviceType": "NodePort", "nodePort": 30083}}})
    service = connect(settings).service
    assert service["spec"]["type"] == "NodePort"
    # Only the REST port: a metrics port on it would get a node port Kubernetes picks at random.
    assert service["spec"]["ports"] == [{"name": "rest", "port": 8083, "targetPort": 8083, "nodePort": 30083}]


def test_no_rest_policy_unless_rest_from_is_given() -> None:
    objs = connect()
    assert objs.network_policy is None
    assert all(o["kind"] != "NetworkPolicy" for o in objs.all())


def test_rest_from_admits_the_rest_port_only_from_peers_the_watcher_and_its_networks() -> None:
    settings = kubernetes_settings({"namespace": "kafka", "workerGroups": {"mm2": {"restFrom": ["10.0.0.0/8"]}}})
    objs = connect(settings)
    policy = objs.network_policy
    assert policy is not None and policy in objs.all()
    spec = policy["spec"]
    assert spec["podSelector"] == objs.deployment["spec"]["selector"]
    assert spec["policyTypes"] == ["Ingress"]
    rest, metrics = spec["ingress"]
    assert rest["ports"] == [{"port": 8083, "protocol": "TCP"}]
    peers = rest["from"]
    assert {"podSelector": objs.deployment["spec"]["selector"]} in peers  # a worker forwards to the leader
    watcher = {"app.kubernetes.io/name": "mm2-connect-watcher", "app.kubernetes.io/instance": "mm2"}
    assert {"podSelector": {"matchLabels": watcher}} in peers
    assert {"ipBlock": {"cidr": "10.0.0.0/8"}} in peers and len(peers) == 3
    assert metrics == {"ports": [{"port": 9404, "protocol": "TCP"}]}  # scrapers are not listed


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("nonsense", r"workerGroups\.mm2\.restFrom: 'nonsense' is not a network in CIDR form"),
        (["10.0.0.1/8"], r"restFrom: '10.0.0.1/8' is not a network in CIDR form \(.*has host bits set\)"),
        ([], r"restFrom: give a list of networks in CIDR form"),
    ],
)
def test_rest_from_must_be_networks(raw: object, message: str) -> None:
    with pytest.raises(PlatformSettingsError, match=message):
        kubernetes_settings({"workerGroups": {"mm2": {"restFrom": raw}}})
