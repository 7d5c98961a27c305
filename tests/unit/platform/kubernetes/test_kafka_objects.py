"""Kubernetes objects of a KRaft cluster: the fields a production deployment depends on."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest

from components.platform.kubernetes.kafka_objects import kafka_objects
from components.platform.settings import PlatformSettingsError, kubernetes_settings

from ..helpers import SASL_KUBERNETES, parse_properties, topology
from .objects import SETTINGS, container, kafka


def test_services_names_ports_and_headless_publishes_not_ready() -> None:
    objs = kafka()
    assert objs.bootstrap_service["metadata"]["name"] == "a-kafka-bootstrap"
    assert objs.bootstrap_service["spec"]["ports"] == [{"name": "client", "port": 9092, "targetPort": 9092}]
    headless = objs.headless_service
    assert headless["metadata"]["name"] == "a-kafka-brokers"
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    # client, replication, controller, metrics
    assert {p["port"] for p in headless["spec"]["ports"]} == {9091, 9092, 9093, 9404}
    assert objs.stateful_set["spec"]["serviceName"] == "a-kafka-brokers"
    for obj in objs.all():
        cluster_wide = obj["kind"] in ("ClusterRole", "ClusterRoleBinding", "PriorityClass")
        assert obj["metadata"].get("namespace") == (None if cluster_wide else "kafka")


def test_statefulset_replicas_storage_probes_resources_and_image() -> None:
    sts = kafka().stateful_set
    spec = sts["spec"]
    assert spec["replicas"] == 3
    assert spec["podManagementPolicy"] == "Parallel"
    assert spec["updateStrategy"] == {"type": "OnDelete"}  # the stack's roll restarts them (broker_roll.py)
    # ... and waits for them: the provider's wait would hold up on a broker already down.
    assert sts["metadata"]["annotations"] == {"pulumi.com/waitFor": "jsonpath={.metadata.uid}"}
    [claim] = spec["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "100Gi"
    main = container(sts)
    assert main["image"] == "mm2-iac/kafka:4.3.1"  # built by bin/bootstrap --images
    assert main["readinessProbe"]["exec"]["command"][-1].endswith(
        "grep -Eq '^kafka_server_kafkaserver_brokerstate 3(\\.0)?$' <&3"
    )
    assert {
        "name": "KAFKA_OPTS",
        "value": "-javaagent:/opt/mm2/agent/jmx_prometheus_javaagent.jar=9404:/etc/mm2/config/jmx-exporter.yaml",
    } in main["env"]
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


def test_rack_comes_from_the_nodes_zone_read_by_an_init_container() -> None:
    objs = kafka()
    pod = objs.stateful_set["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "a-kafka" and pod["automountServiceAccountToken"] is False
    [init] = pod["initContainers"]
    assert init["image"] == pod["containers"][0]["image"]  # the broker's own image: nothing else to load
    assert init["env"] == [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    assert {m["name"] for m in init["volumeMounts"]} == {"runtime", "node-reader"}
    # Only the init container gets the token: the broker's container mounts no API credentials.
    assert "node-reader" not in {m["name"] for m in pod["containers"][0]["volumeMounts"]}
    script = objs.config_map["data"]["start.sh"]
    assert 'RACK="$(cat /opt/mm2/runtime/rack)"' in script
    assert 'echo "broker.rack=${RACK}"' in script
    account, role, binding = objs.node_reader
    assert (account["kind"], account["metadata"]["namespace"]) == ("ServiceAccount", "kafka")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"] == "kafka-a-kafka-nodes"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "a-kafka", "namespace": "kafka"}]
    # The priority class and the account before anything that makes pods.
    assert objs.all()[:4] == (objs.priority_class, *objs.node_reader)


def test_without_a_zone_label_every_broker_of_a_cluster_shares_its_datacenter_as_rack() -> None:
    objs = kafka("a", kubernetes_settings({"kafka": {"zoneLabel": ""}}))
    pod = objs.stateful_set["spec"]["template"]["spec"]
    assert "initContainers" not in pod and "serviceAccountName" not in pod and objs.node_reader == ()
    assert 'RACK="dc-a"' in objs.config_map["data"]["start.sh"]


def test_broker_properties_listeners_quorum_and_security() -> None:
    objs = kafka()
    props = parse_properties(objs.config_map["data"]["server.properties"])
    assert props["process.roles"] == "broker,controller"
    assert props["controller.quorum.voters"] == ",".join(
        f"{i}@a-kafka-{i}.a-kafka-brokers.kafka.svc:9093" for i in range(3)
    )
    assert props["listener.security.protocol.map"] == "CLIENT:SASL_SSL,CONTROLLER:SSL,REPLICATION:SSL"
    assert props["listeners"] == "CLIENT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093,REPLICATION://0.0.0.0:9091"
    assert props["inter.broker.listener.name"] == "REPLICATION"
    assert props["listener.name.client.sasl.enabled.mechanisms"] == "SCRAM-SHA-512,PLAIN"
    assert props["ssl.keystore.location"] == "/etc/kafka/tls/keystore.p12"
    assert props["min.insync.replicas"] == "2"
    assert "node.id" not in props  # per pod, written by the start script
    script = objs.config_map["data"]["start.sh"]
    host = "a-kafka-${ORDINAL}.a-kafka-brokers.kafka.svc"
    assert f"advertised.listeners=CLIENT://{host}:9092,REPLICATION://{host}:9091" in script
    # The stack creates its SCRAM users through the Admin API once the brokers run.
    assert "--add-scram" not in script


def test_secrets_are_mounted_from_secrets_not_configmaps() -> None:
    objs = kafka()
    volumes = {v["name"]: v for v in objs.stateful_set["spec"]["template"]["spec"]["volumes"]}
    assert volumes["secrets"]["secret"]["secretName"] == "a-kafka-secrets"
    assert volumes["tls"]["secret"]["secretName"] == "a-kafka-tls"
    assert volumes["config"]["configMap"]["name"] == "a-kafka-config"


def test_replication_and_controller_ports_only_reachable_from_brokers() -> None:
    policy = kafka().network_policy
    ingress = policy["spec"]["ingress"]
    open_rule = next(r for r in ingress if "from" not in r)
    assert {p["port"] for p in open_rule["ports"]} == {9092}
    own = next(r for r in ingress if "from" in r)
    assert own["from"] == [{"podSelector": policy["spec"]["podSelector"]}]
    assert {p["port"] for p in own["ports"]} == {9091, 9093}


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


def test_external_listener_on_node_ports_differs_by_port() -> None:
    """On node ports (bin/kube's node: 127.0.0.1) the brokers share a host and each advertises
    its own port, the one its Service takes; the bootstrap Service takes the first."""
    settings = kubernetes_settings({"clusters": {"a": {"externalHost": "127.0.0.1", "externalNodePort": 30090}}})
    objs = kafka("a", settings)
    ports = [(s["spec"]["type"], s["spec"]["ports"][0]["nodePort"]) for s in objs.external_services]
    assert ports == [("NodePort", 30090), ("NodePort", 30091), ("NodePort", 30092), ("NodePort", 30093)]
    assert all(s["spec"]["ports"][0]["targetPort"] == 9094 for s in objs.external_services)
    script = objs.config_map["data"]["start.sh"]
    assert "EXTERNAL://127.0.0.1:$((30091 + ${ORDINAL}))" in script
    # The shell gives broker 2 the port of its own Service.
    line = next(x for x in script.splitlines() if "advertised.listeners" in x)
    shown = subprocess.run(
        ["bash", "-c", f"ORDINAL=2; {line.strip()}"], capture_output=True, text=True, check=True
    ).stdout
    assert "EXTERNAL://127.0.0.1:30093" in shown


@pytest.mark.parametrize(
    ("cluster", "message"),
    [
        ({"externalNodePort": 30090}, "externalNodePort: needs externalHost"),
        ({"externalHost": "x", "externalNodePort": 80}, "externalNodePort: 80 is not a node port"),
        ({"externalHost": "x", "externalNodePort": "many"}, "'many' is not a node port"),
    ],
)
def test_node_port_settings_name_the_key_and_the_fix(cluster: dict[str, Any], message: str) -> None:
    with pytest.raises(PlatformSettingsError, match=re.escape(message)):
        kubernetes_settings({"clusters": {"a": cluster}})


def test_claims_outlive_the_cluster_unless_deleteclaims() -> None:
    kept = kafka("a").stateful_set["spec"]
    assert "persistentVolumeClaimRetentionPolicy" not in kept  # Kubernetes' default: Retain
    settings = kubernetes_settings({"clusters": {"a": {"deleteClaims": True}}})
    policy = kafka("a", settings).stateful_set["spec"]["persistentVolumeClaimRetentionPolicy"]
    assert policy == {"whenDeleted": "Delete", "whenScaled": "Retain"}
    with pytest.raises(PlatformSettingsError, match="deleteClaims: 'yes' is not true or false"):
        kubernetes_settings({"kafka": {"deleteClaims": "yes"}})


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


def test_the_exporter_reads_only_the_broker_beans_and_the_probe_asks_it_for_running() -> None:
    import json

    objs = kafka()
    exporter = json.loads(objs.config_map["data"]["jmx-exporter.yaml"])
    assert "kafka.server:type=KafkaServer,name=BrokerState" in exporter["includeObjectNames"]
    assert any("ReplicaManager" in rule["pattern"] for rule in exporter["rules"])
    probe = container(objs.stateful_set)["readinessProbe"]["exec"]["command"]
    assert probe[:2] == ["/bin/bash", "-c"] and "/dev/tcp/127.0.0.1/9404" in probe[2]


def test_metrics_bring_a_service_monitor_labelling_the_cluster_and_the_broker_alerts() -> None:
    objs = kafka()
    monitor, rule = objs.monitoring
    assert monitor["kind"] == "ServiceMonitor" and rule["kind"] == "PrometheusRule"
    # Only the headless Service carries the label it selects: one target per broker.
    assert monitor["spec"]["selector"]["matchLabels"]["mm2.io/service"] == "brokers"
    assert objs.headless_service["metadata"]["labels"]["mm2.io/service"] == "brokers"
    assert "mm2.io/service" not in objs.bootstrap_service["metadata"]["labels"]
    [endpoint] = monitor["spec"]["endpoints"]
    assert endpoint["relabelings"] == [{"action": "replace", "targetLabel": "mm2_cluster", "replacement": "a"}]
    alerts = {r["alert"] for group in rule["spec"]["groups"] for r in group["rules"]}
    assert alerts == {
        "KafkaUnderMinIsrPartitions",
        "KafkaOfflinePartitions",
        "KafkaActiveControllers",
        "KafkaUnderReplicatedPartitions",
    }
    settings = kubernetes_settings({"namespace": "kafka", "clusters": {"a": {"metrics": False}}})
    assert kafka("a", settings).monitoring == ()


def test_the_broker_alerts_wait_as_long_as_the_cluster_says() -> None:
    def waits(settings: Any) -> dict[str, str]:
        _, rule = kafka("a", settings).monitoring
        return {r["alert"]: r["for"] for group in rule["spec"]["groups"] for r in group["rules"]}

    assert waits(SETTINGS)["KafkaUnderReplicatedPartitions"] == "3m"
    alerts = {"underReplicatedFor": "45s", "criticalFor": "2m"}
    given = waits(kubernetes_settings({"namespace": "kafka", "clusters": {"a": {"alerts": alerts}}}))
    assert given == {
        "KafkaUnderMinIsrPartitions": "2m",
        "KafkaOfflinePartitions": "2m",
        "KafkaActiveControllers": "2m",
        "KafkaUnderReplicatedPartitions": "45s",
    }


def test_a_tls_secret_without_a_key_the_brokers_mount_is_named_with_the_setting() -> None:
    from components.platform.kubernetes.kafka_objects import BROKER_TLS_KEYS, tls_secret_problem

    key = "mm2-platform:kubernetes.clusters.us.tlsSecret"
    assert (
        tls_secret_problem(key, "mm2/us-kafka-tls", BROKER_TLS_KEYS, {"keystore.p12": "", "truststore.p12": ""}) is None
    )
    problem = tls_secret_problem(key, "mm2/us-kafka-tls", BROKER_TLS_KEYS, {"tls.crt": "", "tls.key": ""})
    assert problem is not None
    assert problem.startswith(f"{key}: Secret mm2/us-kafka-tls has no keystore.p12 or truststore.p12 (it has: tls.crt")
    assert f"or name the right Secret in {key}." in problem


def test_brokers_outrank_workers_and_placement_settings_reach_the_pods() -> None:
    from components.platform.kubernetes.metadata import BROKER_PRIORITY, WORKER_PRIORITY

    own = kafka().priority_class
    assert own is not None
    assert own["metadata"]["name"] == "kafka-a-kafka" and own["value"] == BROKER_PRIORITY > WORKER_PRIORITY
    assert own["preemptionPolicy"] == "PreemptLowerPriority" and own["globalDefault"] is False
    assert kafka().stateful_set["spec"]["template"]["spec"]["priorityClassName"] == "kafka-a-kafka"
    placed = {
        "imagePullSecrets": ["registry"],
        "nodeSelector": {"pool": "kafka"},
        "tolerations": [{"key": "dedicated", "value": "kafka", "effect": "NoSchedule"}],
        "priorityClassName": "platform-critical",
        "serviceAccount": "kafka-brokers",
    }
    objs = kafka("a", kubernetes_settings({"namespace": "kafka", "clusters": {"a": placed}}))
    pod = objs.stateful_set["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "platform-critical" and objs.priority_class is None
    assert pod["imagePullSecrets"] == [{"name": "registry"}] and pod["nodeSelector"] == {"pool": "kafka"}
    assert pod["tolerations"] == [{"key": "dedicated", "value": "kafka", "effect": "NoSchedule"}]
    # Their own account reads the node's zone: the role is bound to it, and no account is made.
    assert pod["serviceAccountName"] == "kafka-brokers"
    assert [o["kind"] for o in objs.node_reader] == ["ClusterRole", "ClusterRoleBinding"]
    assert objs.node_reader[1]["subjects"][0]["name"] == "kafka-brokers"


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("imagePullSecrets", "registry", "imagePullSecrets: give a list of Secret names"),
        ("nodeSelector", ["pool"], "nodeSelector: give node labels and values"),
        ("tolerations", [{"key": "x", "effect": "Sometimes"}], "tolerations[0]: {'key': 'x', 'effect': 'Sometimes'}"),
        ("priorityClassName", "Not_A_Name", "priorityClassName: 'Not_A_Name' is not an object name"),
    ],
)
def test_a_bad_placement_setting_names_its_key(field: str, value: object, said: str) -> None:
    with pytest.raises(PlatformSettingsError) as err:
        kubernetes_settings({"clusters": {"a": {field: value}}})
    assert f"mm2-platform:kubernetes.clusters.a.{said}" in str(err.value)
