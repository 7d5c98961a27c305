"""The lag exporter's Kubernetes objects: what the pod runs and mounts, where its secrets come
from, how it is scraped, and that the shipped modules run without the rest of the project."""

from __future__ import annotations

import ast
import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from components.platform.kubernetes.lag_exporter_objects import (
    LAG_EXPORTER_PACKAGES,
    LAG_EXPORTER_SOURCES,
    LagExporterObjects,
    lag_exporter_objects,
    secret_clients_document,
)
from components.platform.kubernetes.monitoring import lag_selector
from components.platform.settings import KubernetesSettings, kubernetes_settings
from components.topology import Topology
from components.watch.lag import METRICS
from components.watch.lag_plan import SECRETS_ENV

from ..helpers import SASL_KUBERNETES, SECRET_VALUES, prod_settings, prod_topology, topology
from .objects import SETTINGS, container, secret_leaks

ROOT = Path(__file__).resolve().parents[4]


def sources() -> dict[str, str]:
    return {p: (ROOT / p).read_text() for p in LAG_EXPORTER_SOURCES}


def render(topo: Topology | None = None, settings: KubernetesSettings = SETTINGS) -> LagExporterObjects:
    topo = topo or topology(SASL_KUBERNETES)
    return lag_exporter_objects(topo.worker_groups["mm2"], topo, settings, sources())


def plan_of(objects: LagExporterObjects) -> dict[str, Any]:
    return dict(json.loads(objects.config_map["data"]["plan.json"]))


def test_one_replica_recreated_serving_on_the_named_port_with_its_state_on_a_claim() -> None:
    objects = render()
    spec = objects.deployment["spec"]
    assert objects.deployment["metadata"] == {**objects.deployment["metadata"], "name": "mm2-lag-exporter"}
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    main = container(objects.deployment)
    assert main["command"] == [
        "python",
        "-m",
        "components.ops.lag_exporter",
        "--plan",
        "/opt/mm2-lag-exporter/plan.json",
    ]
    assert main["ports"] == [{"name": "metrics", "containerPort": 9404}]
    assert main["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert main["resources"]["limits"] == {"memory": "512Mi"}
    assert main["securityContext"]["allowPrivilegeEscalation"] is False
    assert spec["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    plan = plan_of(objects)
    assert plan["listen"] == "0.0.0.0:9404" and plan["pollSeconds"] == 5.0
    # The sentinel's memory outlives the pod: on the claim, not in an emptyDir.
    assert plan["stateFile"] == "/var/lib/mm2-lag-exporter/state.json"
    assert plan["secretsFile"] is None and plan["statusFile"] is None
    mounts = {m["mountPath"]: m["name"] for m in main["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["template"]["spec"]["volumes"]}
    assert volumes[mounts["/var/lib/mm2-lag-exporter"]]["persistentVolumeClaim"] == {
        "claimName": objects.state_claim["metadata"]["name"]
    }
    assert objects.state_claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert [f["name"] for f in plan["flows"]] == ["a->b", "b->a"]
    assert plan["offsetsTopic"] == "mm2-mm2-offsets" and plan["storageCluster"] == "b"


def test_clients_read_as_the_workers_do_with_the_password_only_in_a_secret() -> None:
    objects = render()
    plan = plan_of(objects)
    # The workers' bootstrap and principal (the cluster's configured user); the CA as PEM.
    assert plan["clusters"]["a"] == {
        "bootstrap.servers": "a-kafka-bootstrap:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "mm2",
        "ssl.ca.location": "/etc/mm2/lag-exporter/tls/a.ca.crt",
    }
    env = {e["name"]: e for e in container(objects.deployment)["env"]}
    assert env[SECRETS_ENV]["valueFrom"]["secretKeyRef"] == {"name": "mm2-lag-exporter-clients", "key": "clients.json"}
    assert objects.secret_name == "mm2-lag-exporter-clients"
    assert secret_leaks(objects.all()) == []
    assert "sasl.password" not in objects.config_map["data"]["plan.json"]
    assert "sasl.password" not in json.dumps([o for o in objects.all() if o["kind"] != "ConfigMap"])
    # What the Secret holds, by cluster, in the exporter's own format.
    document = secret_clients_document(topology(SASL_KUBERNETES), "mm2", SECRET_VALUES)
    assert document == {"a": {"sasl.password": "pw-a-Zq81"}, "b": {"sasl.password": "pw-b-Zq82"}}


def test_a_missing_password_names_the_key_and_the_fix() -> None:
    values = {k: v for k, v in SECRET_VALUES.items() if k != "a.mm2.password"}
    with pytest.raises(KeyError, match=r"a\.mm2\.password.*pulumi config set --secret"):
        secret_clients_document(topology(SASL_KUBERNETES), "mm2", values)


def test_the_ca_comes_from_the_groups_client_tls_secret() -> None:
    objects = render()
    volumes = {v["name"]: v for v in objects.deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["client-tls"]["secret"]["secretName"] == "mm2-connect-tls"
    assert [i["key"] for i in volumes["client-tls"]["secret"]["items"]] == ["a.ca.crt", "b.ca.crt"]


def test_plaintext_clusters_mount_no_tls_and_reference_no_secret() -> None:
    config = copy.deepcopy(SASL_KUBERNETES)
    for cluster in config["clusters"].values():
        cluster["security"] = {"protocol": "PLAINTEXT"}
    config["workerGroups"]["mm2"]["restAuth"] = False
    objects = render(topology(config))
    assert objects.secret_name is None
    text = json.dumps(objects.deployment)
    assert "secretKeyRef" not in text and "client-tls" not in text
    assert plan_of(objects)["clusters"]["a"] == {
        "bootstrap.servers": "a-kafka-bootstrap:9092",
        "security.protocol": "PLAINTEXT",
    }


def test_the_service_and_its_monitor_select_the_exporter_as_the_alert_selector_does() -> None:
    objects = render()
    assert objects.url == "http://mm2-lag-exporter.kafka.svc:9404"
    assert objects.service["metadata"]["name"] == "mm2-lag-exporter"
    assert objects.service["spec"]["ports"] == [{"name": "metrics", "port": 9404, "targetPort": "metrics"}]
    pod_labels = objects.deployment["spec"]["template"]["metadata"]["labels"]
    assert objects.service["spec"]["selector"].items() <= pod_labels.items()
    monitor = objects.service_monitor
    assert monitor is not None
    assert monitor["spec"]["selector"]["matchLabels"].items() <= objects.service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"] == [{"port": "metrics", "path": "/metrics", "interval": "15s"}]
    # The Prometheus Operator labels targets with the namespace and the Service's name.
    assert lag_selector("mm2", "kafka") == 'namespace="kafka",service="mm2-lag-exporter"'


def test_without_metrics_no_service_monitor() -> None:
    objects = render(settings=kubernetes_settings({"namespace": "kafka", "connect": {"metrics": False}}))
    assert objects.service_monitor is None
    assert [o["kind"] for o in objects.all()] == ["ConfigMap", "PersistentVolumeClaim", "Deployment", "Service"]


def test_the_state_claim_takes_the_storage_clusters_class_in_the_same_kubernetes_cluster() -> None:
    topo, settings = prod_topology(), prod_settings()
    claim = lag_exporter_objects(topo.worker_groups["to-eu-west"], topo, settings, sources()).state_claim
    assert claim["spec"]["storageClassName"] == "ssd"
    elsewhere = kubernetes_settings(
        {"namespace": "mm2", "kafka": {"storageClass": "ssd"}, "workerGroups": {"to-eu-west": {"context": "other"}}}
    )
    claim = lag_exporter_objects(topo.worker_groups["to-eu-west"], topo, elsewhere, sources()).state_claim
    assert "storageClassName" not in claim["spec"]


def test_prod_objects_hold_no_secret_and_read_only_their_flows() -> None:
    topo, settings = prod_topology(), prod_settings()
    for name, group in topo.worker_groups.items():
        objects = lag_exporter_objects(group, topo, settings, sources())
        assert secret_leaks(objects.all()) == []
        flows = plan_of(objects)["flows"]
        assert [f["target"] for f in flows] == [group.cluster], name
        image = container(objects.deployment)["image"]
        assert image == settings.group(name).watcher_image


def test_a_missing_source_file_is_an_error_naming_it() -> None:
    partial = sources()
    partial.pop("components/watch/lag.py")
    topo = topology(SASL_KUBERNETES)
    with pytest.raises(ValueError, match=r"lag\.py"):
        lag_exporter_objects(topo.worker_groups["mm2"], topo, SETTINGS, partial)


# --- the shipped modules, as the pod runs them ------------------------------------------------


def _lay_out(objects: LagExporterObjects, root: Path) -> None:
    data = objects.config_map["data"]
    code = next(v for v in objects.deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == "code")
    for item in code["configMap"]["items"]:
        target = root / item["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(data[item["key"]])


def _module(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def test_the_shipped_files_import_only_the_standard_library_confluent_kafka_and_each_other() -> None:
    shipped = {_module(p) for p in (*LAG_EXPORTER_SOURCES, *LAG_EXPORTER_PACKAGES)}
    wrong = []
    for path in LAG_EXPORTER_SOURCES:
        for node in ast.walk(ast.parse((ROOT / path).read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top == "confluent_kafka" or name in shipped:
                    continue
                wrong.append(f"{path}: {name}")
    assert wrong == [], "the pod has only these files, the standard library and confluent-kafka"


def test_the_shipped_files_serve_a_reading_with_the_standard_library_alone(tmp_path: Path) -> None:
    """Lay the ConfigMap out as the pod does and, with `python -S` (no site-packages: no pulumi,
    no confluent-kafka), read the plan and the secrets from the environment, take one reading from
    a stand-in for Kafka and serve it: nothing beyond the shipped files may be needed for that."""
    _lay_out(render(), tmp_path)
    code = (
        "import dataclasses, json, sys, urllib.request\n"
        "from components.ops import lag_exporter as le\n"
        "from components.watch.lag import Reading\n"
        "plan = le.plan_from_document(json.load(open('plan.json')))\n"
        "secrets = le.read_secrets(plan)\n"
        "plan = dataclasses.replace(plan, state_file='state.json')\n"
        "class Kafka:\n"
        "    def read_committed(self): pass\n"
        "    def read_flow(self, flow): return [Reading('orders', 0, 0, 10, 3, None, 1000)]\n"
        "exporter = le.Exporter(plan, Kafka())\n"
        "server = le.serve(exporter, '127.0.0.1:0')\n"
        "exporter.read_once(now_ms=3000)\n"
        "metrics = urllib.request.urlopen(exporter.url + '/metrics').read().decode()\n"
        "health = urllib.request.urlopen(exporter.url + '/healthz').status\n"
        "server.shutdown()\n"
        "ours = {'components', '__main__'}\n"
        "third = sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names) - ours)\n"
        "print(json.dumps({'secrets': secrets, 'health': health, 'metrics': metrics, 'third': third}))\n"
    )
    env = {SECRETS_ENV: json.dumps({"a": {"sasl.password": "x"}})}
    run = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["third"] == [], f"the pod would need {out['third']}"
    assert out["secrets"] == {"a": {"sasl.password": "x"}} and out["health"] == 200
    assert (
        'mm2_partition_lag_records{flow="a->b",source="a",target="b",topic="orders",partition="0"} 6' in out["metrics"]
    )
    assert set(METRICS) <= {line.split()[2] for line in out["metrics"].splitlines() if line.startswith("# TYPE")}
    assert json.loads((tmp_path / "state.json").read_text())["partitions"]


def test_the_shipped_files_start_the_cli(tmp_path: Path) -> None:
    _lay_out(render(), tmp_path)
    run = subprocess.run(
        [sys.executable, "-S", "-m", "components.ops.lag_exporter", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0 and "--plan" in run.stdout, run.stderr[-2000:]
