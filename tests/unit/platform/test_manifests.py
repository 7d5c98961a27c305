"""Kubernetes objects as plain data: the fields a production deployment depends on."""

from __future__ import annotations

from typing import Any

import pytest

from components.platform.manifests import (
    ConnectObjects,
    KafkaObjects,
    KubernetesSettings,
    PlatformSettingsError,
    connect_objects,
    heartbeat_topics,
    jmx_exporter_config,
    kafka_objects,
    kraft_cluster_id,
    kubernetes_settings,
    required_secret_keys,
    rest_users_text,
    secrets_file_text,
)

from .helpers import SASL_KUBERNETES, SECRET_VALUES, prod_settings, prod_topology, topology, walk

SETTINGS = KubernetesSettings(namespace="kafka")


def kafka(alias: str = "a", settings: KubernetesSettings = SETTINGS) -> KafkaObjects:
    topo = topology(SASL_KUBERNETES)
    return kafka_objects(topo.clusters[alias], settings, kraft_cluster_id("unit", alias))


def connect(settings: KubernetesSettings = SETTINGS) -> ConnectObjects:
    topo = topology(SASL_KUBERNETES)
    return connect_objects(topo.worker_groups["mm2"], topo, settings)


def container(obj: dict[str, Any]) -> dict[str, Any]:
    [main] = obj["spec"]["template"]["spec"]["containers"]
    return main


def parse_properties(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


# ---- Kafka ----------------------------------------------------------------------------------


def test_services_names_ports_and_headless_publishes_not_ready() -> None:
    objs = kafka()
    assert objs.bootstrap_service["metadata"]["name"] == "a-kafka-bootstrap"
    assert objs.bootstrap_service["spec"]["ports"] == [{"name": "client", "port": 9092, "targetPort": 9092}]
    headless = objs.headless_service
    assert headless["metadata"]["name"] == "a-kafka-brokers"
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    assert {p["port"] for p in headless["spec"]["ports"]} == {9092, 9093}
    assert objs.stateful_set["spec"]["serviceName"] == "a-kafka-brokers"
    for obj in objs.all():
        assert obj["metadata"]["namespace"] == "kafka"


def test_statefulset_replicas_storage_probes_resources_and_image() -> None:
    sts = kafka().stateful_set
    spec = sts["spec"]
    assert spec["replicas"] == 3
    assert spec["podManagementPolicy"] == "Parallel"
    [claim] = spec["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "100Gi"
    main = container(sts)
    assert main["image"] == "apache/kafka:4.3.1"
    assert main["readinessProbe"]["tcpSocket"]["port"] == 9092
    assert main["livenessProbe"]["tcpSocket"]["port"] == 9093
    assert main["resources"]["requests"] == {"cpu": "1", "memory": "4Gi"}
    assert main["resources"]["limits"]["memory"] == "4Gi"
    assert {"name": "data", "mountPath": "/var/lib/kafka/data"} in main["volumeMounts"]


def test_image_storage_and_resources_come_from_settings() -> None:
    settings = kubernetes_settings(
        {
            "namespace": "kafka",
            "kafka": {"image": "registry.example.com/kafka:4.3.1-patched", "storageSize": "1Ti"},
            "clusters": {"a": {"storageClass": "fast", "resources": {"limits": {"cpu": "4", "memory": "16Gi"}}}},
        }
    )
    sts = kafka("a", settings).stateful_set
    assert container(sts)["image"] == "registry.example.com/kafka:4.3.1-patched"
    [claim] = sts["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["storageClassName"] == "fast"
    assert claim["spec"]["resources"]["requests"]["storage"] == "1Ti"
    assert container(sts)["resources"]["limits"] == {"cpu": "4", "memory": "16Gi"}
    # cluster b has no entry: the kafka defaults apply, not the built-in ones.
    assert container(kafka("b", settings).stateful_set)["image"] == "registry.example.com/kafka:4.3.1-patched"


def test_pdb_allows_one_broker_down() -> None:
    pdb = kafka().pod_disruption_budget
    assert pdb["kind"] == "PodDisruptionBudget"
    assert pdb["spec"]["minAvailable"] == 2
    assert pdb["spec"]["selector"]["matchLabels"] == {
        "app.kubernetes.io/name": "kafka",
        "app.kubernetes.io/instance": "a",
    }


def test_brokers_spread_over_hosts_and_zones() -> None:
    pod = kafka().stateful_set["spec"]["template"]["spec"]
    [term] = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"]["app.kubernetes.io/instance"] == "a"
    [spread] = pod["topologySpreadConstraints"]
    assert spread["topologyKey"] == "topology.kubernetes.io/zone"
    assert spread["whenUnsatisfiable"] == "ScheduleAnyway"
    required = kubernetes_settings({"kafka": {"zoneSpread": "required"}})
    [strict] = kafka("a", required).stateful_set["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert strict["whenUnsatisfiable"] == "DoNotSchedule"


def test_rack_comes_from_the_zone_label_through_the_downward_api() -> None:
    objs = kafka()
    volumes = objs.stateful_set["spec"]["template"]["spec"]["volumes"]
    podinfo = next(v for v in volumes if v["name"] == "podinfo")
    assert podinfo["downwardAPI"]["items"] == [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]
    script = objs.config_map["data"]["start.sh"]
    assert "topology.kubernetes.io/zone" in script
    assert 'echo "broker.rack=${RACK}"' in script
    assert 'RACK="${RACK:-dc-a}"' in script  # falls back to the datacenter


def test_broker_properties_listeners_quorum_and_security() -> None:
    objs = kafka()
    props = parse_properties(objs.config_map["data"]["server.properties"])
    assert props["process.roles"] == "broker,controller"
    assert props["controller.quorum.voters"] == ",".join(
        f"{i}@a-kafka-{i}.a-kafka-brokers.kafka.svc:9093" for i in range(3)
    )
    assert props["listener.security.protocol.map"] == "CLIENT:SASL_SSL,CONTROLLER:PLAINTEXT"
    assert props["sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert props["ssl.keystore.location"] == "/etc/kafka/tls/keystore.p12"
    assert props["min.insync.replicas"] == "2"
    assert "node.id" not in props  # per pod, written by the start script
    script = objs.config_map["data"]["start.sh"]
    assert "advertised.listeners=CLIENT://a-kafka-${ORDINAL}.a-kafka-brokers.kafka.svc:9092" in script
    assert "--add-scram" in script and "name=mm2" in script


def test_secrets_are_mounted_from_secrets_not_configmaps() -> None:
    objs = kafka()
    volumes = {v["name"]: v for v in objs.stateful_set["spec"]["template"]["spec"]["volumes"]}
    assert volumes["secrets"]["secret"]["secretName"] == "a-kafka-secrets"
    assert volumes["tls"]["secret"]["secretName"] == "a-kafka-tls"
    assert volumes["config"]["configMap"]["name"] == "a-kafka-config"


def test_controller_port_only_reachable_from_brokers() -> None:
    policy = kafka().network_policy
    ingress = policy["spec"]["ingress"]
    open_rule = next(r for r in ingress if "from" not in r)
    assert {p["port"] for p in open_rule["ports"]} == {9092}
    quorum = next(r for r in ingress if "from" in r)
    assert quorum["ports"] == [{"port": 9093, "protocol": "TCP"}]


def test_external_listener_load_balancer_per_broker() -> None:
    settings = kubernetes_settings(
        {
            "clusters": {
                "a": {
                    "externalHost": "a-{ordinal}.kafka.example.com",
                    "externalServiceAnnotations": {
                        "external-dns.alpha.kubernetes.io/hostname": "a-{ordinal}.kafka.example.com"
                    },
                }
            }
        }
    )
    objs = kafka("a", settings)
    names = [s["metadata"]["name"] for s in objs.external_services]
    assert names == ["a-kafka-external-bootstrap", "a-kafka-0-external", "a-kafka-1-external", "a-kafka-2-external"]
    per_broker = objs.external_services[2]
    assert per_broker["spec"]["type"] == "LoadBalancer"
    assert per_broker["spec"]["selector"]["statefulset.kubernetes.io/pod-name"] == "a-kafka-1"
    assert per_broker["metadata"]["annotations"] == {
        "external-dns.alpha.kubernetes.io/hostname": "a-1.kafka.example.com"
    }
    script = objs.config_map["data"]["start.sh"]
    assert "EXTERNAL://a-${ORDINAL}.kafka.example.com:9094" in script


def test_kafka_objects_refuse_other_platforms() -> None:
    topo = topology(
        {
            **SASL_KUBERNETES,
            "clusters": {
                **SASL_KUBERNETES["clusters"],
                "a": {"platform": "external", "brokers": 3, "bootstrap": "x:9092"},
            },
        }
    )
    with pytest.raises(ValueError, match="not kubernetes"):
        kafka_objects(topo.clusters["a"], SETTINGS, "id")


# ---- Connect --------------------------------------------------------------------------------


def test_connect_service_deployment_and_probes() -> None:
    objs = connect()
    assert objs.service["metadata"]["name"] == "mm2-connect-api"
    assert {p["name"]: p["port"] for p in objs.service["spec"]["ports"]} == {"rest": 8083, "metrics": 9404}
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
    mounts = container(objs.deployment)["volumeMounts"]
    tls = {m["mountPath"]: m["subPath"] for m in mounts if m["name"] == "client-tls"}
    assert tls == {
        "/etc/mm2/tls/a/truststore.p12": "a.truststore.p12",
        "/etc/mm2/tls/b/truststore.p12": "b.truststore.p12",
    }


def test_metrics_off_drops_agent_monitor_and_rules() -> None:
    objs = connect(kubernetes_settings({"namespace": "kafka", "connect": {"metrics": False}}))
    assert objs.service_monitor is None and objs.prometheus_rule is None
    assert "KAFKA_OPTS" in {e["name"] for e in container(objs.deployment)["env"]}  # REST auth still needs JAAS
    assert "initContainers" not in objs.deployment["spec"]["template"]["spec"]


def test_exporter_rules_match_mm2_mbeans() -> None:
    import re

    rules = jmx_exporter_config()["rules"]

    def java_to_python(pattern: str) -> str:
        return pattern

    beans = {
        "kafka.connect.mirror<type=MirrorSourceConnector, source=a, target=b, topic=a.orders, partition=0>"
        "<>replication-latency-ms-max": "kafka_connect_mirror_source_connector_$5",
        "kafka.connect.mirror<type=MirrorSourceConnector, target=b, topic=a.orders, partition=0><>record-count": (
            "kafka_connect_mirror_source_connector_$5"
        ),
        "kafka.connect.mirror<type=MirrorCheckpointConnector, source=a, target=b, group=g1, topic=a.orders, "
        "partition=3><>checkpoint-latency-ms-max": "kafka_connect_mirror_checkpoint_connector_$6",
        'kafka.connect<type=connect-worker-metrics, connector="mm2-a-to-b-source"><>connector-failed-task-count': (
            "kafka_connect_worker_$2"
        ),
    }
    for bean, name in beans.items():
        matching = [r for r in rules if re.fullmatch(java_to_python(r["pattern"]), bean)]
        assert matching and matching[0]["name"] == name, bean


def test_prometheus_rule_alerts() -> None:
    rule = connect().prometheus_rule
    assert rule is not None
    assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["kind"] == "PrometheusRule"
    [group] = rule["spec"]["groups"]
    alerts = {r["alert"]: r for r in group["rules"] if r["alert"] != "MM2HeartbeatStale"}
    assert set(alerts) == {"MM2ReplicationLatencyHigh", "MM2CheckpointLatencyHigh", "MM2ConnectorTasksFailed"}
    assert "replication_latency_ms_max" in alerts["MM2ReplicationLatencyHigh"]["expr"]
    assert "> 30000" in alerts["MM2ReplicationLatencyHigh"]["expr"]
    assert "connector_failed_task_count" in alerts["MM2ConnectorTasksFailed"]["expr"]
    stale = {r["labels"]["topic"]: r for r in group["rules"] if r["alert"] == "MM2HeartbeatStale"}
    # Both flows run on group mm2 and each direction has a flow writing heartbeats into its source.
    assert set(stale) == {"a.heartbeats", "b.heartbeats"}
    assert 'topic="a.heartbeats"' in stale["a.heartbeats"]["expr"]
    assert 'service="mm2-connect-api"' in stale["a.heartbeats"]["expr"]


def test_one_way_flow_expects_no_replicated_heartbeats() -> None:
    config = {**SASL_KUBERNETES, "flows": {"a->b": {"workerGroup": "mm2", "topics": ["orders"]}}}
    topo = topology(config)
    assert heartbeat_topics(topo, topo.worker_groups["mm2"]) == ()


# ---- secrets never in plain objects ----------------------------------------------------------


SECRET_LIKE = ("password", "jaas", "secret")


def _leaks(objs: tuple[dict[str, Any], ...]) -> list[str]:
    leaks = []
    for obj in objs:
        for path, leaf in walk(obj):
            text = str(leaf)
            if any(value in text for value in SECRET_VALUES.values()):
                leaks.append(f"{obj['kind']} {path}: a secret value")
        if obj["kind"] == "ConfigMap":
            for key, text in obj["data"].items():
                if not key.endswith(".properties"):
                    continue
                for k, v in parse_properties(text).items():
                    if any(s in k.lower() for s in SECRET_LIKE) and "${file:" not in v:
                        leaks.append(f"ConfigMap {key}: {k} is not a placeholder")
        if obj["kind"] in ("StatefulSet", "Deployment"):
            pod = obj["spec"]["template"]["spec"]
            for c in pod["containers"] + pod.get("initContainers", []):
                for env in c.get("env", []):
                    if any(s in env["name"].lower() for s in SECRET_LIKE) and "value" in env:
                        leaks.append(f"{obj['kind']} env {env['name']} holds a literal")
    return leaks


def test_no_secret_literal_in_any_object() -> None:
    objs = (*kafka("a").all(), *kafka("b").all(), *connect().all())
    assert _leaks(objs) == []


def test_leak_check_can_fail() -> None:
    objs = connect()
    bad = dict(objs.config_map)
    bad["data"] = {**bad["data"], "connect-distributed.properties": "sasl.jaas.config=plain password=x\n"}
    assert _leaks((bad,)) == ["ConfigMap connect-distributed.properties: sasl.jaas.config is not a placeholder"]


def test_secret_files_render_and_name_missing_keys() -> None:
    assert secrets_file_text(("a.x", "b.y"), {"a.x": "1", "b.y": "2", "c": "3"}) == "a.x=1\nb.y=2\n"
    with pytest.raises(KeyError, match=r"mm2:secrets\[\\?\"b.y\\?\"\]"):
        secrets_file_text(("a.x", "b.y"), {"a.x": "1"})
    topo = topology(SASL_KUBERNETES)
    assert rest_users_text(topo.worker_groups["mm2"], {"mm2.rest.password": "pw"}) == "mm2-admin: pw\n"
    assert required_secret_keys(topo) == (
        "a.broker.tls.password",
        "a.mm2.password",
        "a.ssl.truststore.password",
        "b.broker.tls.password",
        "b.mm2.password",
        "b.ssl.truststore.password",
        "mm2.rest.password",
    )


# ---- settings --------------------------------------------------------------------------------


def test_settings_report_every_problem() -> None:
    with pytest.raises(PlatformSettingsError) as err:
        kubernetes_settings(
            {
                "namespace": "Bad_NS",
                "kafka": {"zoneSpread": "sometimes", "imag": "x"},
                "clusters": {"a": {"externalHost": "a.example.com"}},
            }
        )
    text = str(err.value)
    assert "namespace" in text and "zoneSpread" in text and "imag" in text and "{ordinal}" in text


def test_prod_settings_and_objects_build() -> None:
    topo = prod_topology()
    settings = prod_settings()
    assert settings.namespace == "mm2"
    assert settings.cluster("us-east").context == "prod-us-east"
    for alias, cluster in topo.clusters.items():
        objs = kafka_objects(cluster, settings, kraft_cluster_id("prod", alias))
        assert objs.stateful_set["spec"]["replicas"] == 3
        assert len(objs.external_services) == 4
        assert _leaks(objs.all()) == []
    for group in topo.worker_groups.values():
        objs = connect_objects(group, topo, settings)
        assert objs.url.startswith("https://mm2-connect.")
        assert objs.deployment["spec"]["replicas"] == 3
        assert _leaks(objs.all()) == []


# ---- docker specs ----------------------------------------------------------------------------


def test_docker_broker_specs_follow_seed_001() -> None:
    from components.platform.manifests import DockerSettings, docker_broker_specs, docker_connect_specs

    from .helpers import DOCKER

    topo = topology(DOCKER)
    [b0, b1] = docker_broker_specs(topo.clusters["kafka2"], "unit", DockerSettings())
    assert (b0.name, b1.name) == ("mm2-unit-kafka2-0", "mm2-unit-kafka2-1")
    assert b1.ports == ((9092, 29194),)
    props = parse_properties(b1.uploads["/etc/mm2/config/server.properties"])
    assert props["inter.broker.listener.name"] == "INTERNAL"
    assert props["listener.security.protocol.map"] == "CLIENT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT"
    assert props["controller.quorum.voters"] == "0@mm2-unit-kafka2-0:9093,1@mm2-unit-kafka2-1:9093"
    script = b1.uploads["/etc/mm2/config/start.sh"]
    assert "advertised.listeners=CLIENT://127.0.0.1:29194,INTERNAL://mm2-unit-kafka2-1:9091" in script
    [secret_file] = b1.secret_uploads
    assert secret_file.render(SECRET_VALUES) == "kafka2.mm2.password=k2-Zq89\n"
    workers = docker_connect_specs(topo.worker_groups["connect"], topo, "unit", DockerSettings())
    assert [w.host_network for w in workers] == [True, True]
    worker = parse_properties(workers[1].uploads["/etc/mm2/config/connect-distributed.properties"])
    assert worker["listeners"] == "http://127.0.0.1:28084"
    users = next(u for u in workers[0].secret_uploads if u.path.endswith("users.properties"))
    assert users.render(SECRET_VALUES) == "mm2-admin: rest-Zq90\n"
    for spec in (b0, b1, *workers):
        for text in (*spec.uploads.values(), *spec.env.values()):
            assert not any(v in text for v in SECRET_VALUES.values())


def test_docker_refuses_tls() -> None:
    import dataclasses

    from components.platform.manifests import DockerSettings, docker_broker_specs
    from components.topology import SecurityProtocol

    from .helpers import DOCKER

    cluster = topology(DOCKER).clusters["kafka1"]
    tls = dataclasses.replace(
        cluster, security=dataclasses.replace(cluster.security, protocol=SecurityProtocol.SASL_SSL)
    )
    with pytest.raises(ValueError, match="does not provision TLS"):
        docker_broker_specs(tls, "unit", DockerSettings())


def test_kafka_ui_config_resolves_secrets_only_in_its_secret_file() -> None:
    import json

    from components.platform.manifests import docker_kafka_ui_spec, docker_settings

    from .helpers import DOCKER

    topo = topology(DOCKER)
    spec = docker_kafka_ui_spec(topo, "unit", docker_settings({"kafkaUi": {"enabled": True, "port": 8081}}))
    assert spec.env["SERVER_PORT"] == "8081" and spec.host_network
    [upload] = spec.secret_uploads
    config = json.loads(upload.render(SECRET_VALUES))
    clusters = {c["name"]: c for c in config["kafka"]["clusters"]}
    assert clusters["kafka1"]["bootstrapServers"] == "127.0.0.1:29092"
    assert 'password="k1-Zq88"' in clusters["kafka1"]["properties"]["sasl.jaas.config"]
    assert clusters["kafka2"]["kafkaConnect"] == [
        {"name": "connect", "address": "http://127.0.0.1:28083", "username": "mm2-admin", "password": "rest-Zq90"}
    ]
    with pytest.raises(KeyError, match=r"kafka1\.mm2\.password"):
        upload.render({})


def test_kraft_cluster_ids_never_start_with_a_dash_and_are_stable() -> None:
    ids = [kraft_cluster_id(f"itest-{i:04x}", alias) for i in range(400) for alias in ("primary", "dr")]
    assert not [i for i in ids if i.startswith("-")]
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 22 for i in ids)
    # Stable: the same stack and alias always give the same id (storage is never re-formatted).
    assert kraft_cluster_id("dev", "primary") == kraft_cluster_id("dev", "primary")
