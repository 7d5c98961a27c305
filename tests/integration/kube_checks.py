"""What the Kubernetes lane checks of a deployed stack, beside the test that deploys it
(tests/integration/test_kube_stack.py): its pods, the brokers' racks, the metrics the
ServiceMonitors point at and what the operator's Prometheus makes of them, and the NetworkPolicies
kube-router enforces."""

from __future__ import annotations

import json
import time
from typing import Any

from components.monitoring.jmx_exporter import BROKER_STATE, RECORD_COUNT
from components.platform.kubernetes.metadata import container_security, pod_security
from components.platform.kubernetes.monitoring import METRICS_PORT
from components.topology.runtime_config import KUBERNETES_REST_PORT
from tests.integration.harness import wait_until
from tests.integration.kube import EXTERNAL, NAMESPACE, REST, WATCHER_TAG, kubectl
from toolchain.kubernetes.prometheus import NAMESPACE as MONITORING
from toolchain.kubernetes.prometheus import PROMETHEUS_SERVICE

PROMETHEUS_PROXY = f"/api/v1/namespaces/{MONITORING}/services/{PROMETHEUS_SERVICE}:web/proxy"
RUNTIME_PROPS = "/opt/mm2/runtime/server.properties"  # what the broker started with (its start script writes it)
ZONE_LABEL = "topology.kubernetes.io/zone"


def pods(kubeconfig: str) -> list[dict[str, Any]]:
    shown = kubectl(kubeconfig, "-n", NAMESPACE, "get", "pods", "-o", "json")
    assert shown.returncode == 0, shown.stderr
    items: list[dict[str, Any]] = json.loads(shown.stdout)["items"]
    return items


def ready(pod: dict[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions") or []
    return pod["status"].get("phase") == "Running" and any(
        c["type"] == "Ready" and c["status"] == "True" for c in conditions
    )


def broker_racks(kubeconfig: str) -> dict[str, tuple[str, str]]:
    """Each broker pod's `broker.rack` as it started, and the zone of the node it runs on."""
    nodes = json.loads(kubectl(kubeconfig, "get", "nodes", "-o", "json").stdout)["items"]
    zones = {n["metadata"]["name"]: n["metadata"]["labels"].get(ZONE_LABEL, "") for n in nodes}
    found = {}
    for pod in pods(kubeconfig):
        if pod["metadata"]["labels"].get("app.kubernetes.io/name") != "kafka":
            continue
        name = pod["metadata"]["name"]
        started = kubectl(kubeconfig, "-n", NAMESPACE, "exec", name, "-c", "kafka", "--", "cat", RUNTIME_PROPS)
        assert started.returncode == 0, started.stderr
        lines = started.stdout.splitlines()
        rack = next((line.split("=", 1)[1] for line in lines if line.startswith("broker.rack=")), "")
        found[name] = (rack, zones[pod["spec"]["nodeName"]])
    return found


def metrics_are_served_and_their_kinds_accepted(node: str) -> None:
    """Each group's ServiceMonitors (workers, lag exporter) and PrometheusRule exist, accepted
    against the Prometheus Operator's schemas, and the endpoints they name serve the metrics the
    alert rules read: the workers' JMX exporter and the lag exporter."""
    shown = kubectl(node, "-n", NAMESPACE, "get", "servicemonitors,prometheusrules", "-o", "name")
    assert shown.returncode == 0, shown.stderr
    kinds = set(shown.stdout.split())
    for group in REST:
        expected = {
            f"servicemonitor.monitoring.coreos.com/{group}-connect",
            f"servicemonitor.monitoring.coreos.com/{group}-lag-exporter",
            f"prometheusrule.monitoring.coreos.com/{group}-connect-mm2-alerts",
        }
        assert expected <= kinds, (expected - kinds, kinds)
    for alias in EXTERNAL:
        expected = {
            f"servicemonitor.monitoring.coreos.com/{alias}-kafka",
            f"prometheusrule.monitoring.coreos.com/{alias}-kafka-alerts",
        }
        assert expected <= kinds, (expected - kinds, kinds)
    last = [""]

    def serves(service: str, metric: str) -> bool:
        proxied = f"/api/v1/namespaces/{NAMESPACE}/services/{service}:metrics/proxy/metrics"
        got = kubectl(node, "get", "--raw", proxied)
        last[0] = got.stdout[-2000:] + got.stderr[-1000:]
        return got.returncode == 0 and any(line.startswith(metric) for line in got.stdout.splitlines())

    # to-eu runs us->eu's source connector, to-us eu->us's; both have copied records by now.
    endpoints = [(f"{g}-connect-metrics", RECORD_COUNT) for g in REST]
    endpoints += [(f"{g}-lag-exporter", "mm2_flow_lag_records") for g in REST]
    endpoints += [(f"{a}-kafka-brokers", f"{BROKER_STATE} 3") for a in EXTERNAL]
    for service, metric in endpoints:
        try:
            wait_until(lambda s=service, m=metric: serves(s, m), 90, f"{metric} from {service}", poll_s=3)
        except AssertionError:
            raise AssertionError(f"{service} never served {metric}; last:\n{last[0]}") from None


PROBE = """
import json, socket, sys
result = {}
for name, host, port in json.loads(sys.argv[1]):
    try:
        socket.create_connection((host, port), timeout=5).close()
        result[name] = "open"
    except OSError as refused:
        result[name] = type(refused).__name__
print(json.dumps(result))
"""


def reached_from_a_foreign_pod(node: str, targets: list[tuple[str, str, int]]) -> dict[str, str]:
    """What a pod of the stack's namespace that is none of the stack's pods can open: for each
    (name, pod IP, port), "open" or the error its connection got."""
    probe = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "netpol-probe", "namespace": NAMESPACE, "labels": {"app": "netpol-probe"}},
        "spec": {
            "restartPolicy": "Never",
            "securityContext": pod_security(),
            "containers": [
                {
                    "name": "probe",
                    "image": WATCHER_TAG,
                    "command": ["python3", "-c", PROBE, json.dumps(targets)],
                    "securityContext": container_security(),
                }
            ],
        },
    }
    made = kubectl(node, "apply", "-f", "-", stdin=json.dumps(probe))
    assert made.returncode == 0, made.stderr
    try:
        phase = "{.status.phase}"
        wait_until(
            lambda: (
                kubectl(node, "-n", NAMESPACE, "get", "pod", "netpol-probe", "-o", f"jsonpath={phase}").stdout
                in ("Succeeded", "Failed")
            ),
            90,
            "the probe pod done",
        )
        logs = kubectl(node, "-n", NAMESPACE, "logs", "netpol-probe")
        assert logs.returncode == 0, logs.stderr
        found: dict[str, str] = json.loads(logs.stdout.strip().splitlines()[-1])
        return found
    finally:
        kubectl(node, "-n", NAMESPACE, "delete", "pod", "netpol-probe", "--wait=false")


def prometheus_api(node: str, path: str) -> Any:
    """GET the node's Prometheus (bin/kube prometheus) through the API server's Service proxy."""
    got = kubectl(node, "get", "--raw", f"{PROMETHEUS_PROXY}{path}")
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)["data"]


def prometheus_scrapes_the_stack(node: str) -> None:
    """The operator's Prometheus found each group's ServiceMonitors (workers, lag exporter) by
    themselves, scrapes their targets (up), and loaded the group's PrometheusRule."""
    pools = {f"serviceMonitor/{NAMESPACE}/{g}-{kind}/0" for g in REST for kind in ("connect", "lag-exporter")}
    pools |= {f"serviceMonitor/{NAMESPACE}/{alias}-kafka/0" for alias in EXTERNAL}
    last: list[Any] = [None]

    def all_up() -> bool:
        targets = prometheus_api(node, "/api/v1/targets?state=active")["activeTargets"]
        last[0] = [(t["scrapePool"], t["health"], t.get("lastError")) for t in targets]
        up = {t["scrapePool"] for t in targets if t["health"] == "up"}
        return pools <= up

    try:
        wait_until(all_up, 180, "Prometheus scraping every ServiceMonitor of the stack", poll_s=3)
    except AssertionError:
        raise AssertionError(f"targets not all up: {last[0]}") from None
    rules = prometheus_api(node, "/api/v1/rules?type=alert")["groups"]
    names = {rule["name"] for group in rules for rule in group["rules"]}
    assert {"MM2FlowLagAboveRPO", "MM2ConnectorFailed", "KafkaUnderMinIsrPartitions"} <= names, sorted(names)
    print(f"[kube stack] Prometheus (operator) scrapes {len(last[0])} targets, {len(names)} alert rules loaded")


def network_policy_is_enforced(node: str) -> None:
    """kube-router enforces the stack's NetworkPolicies: from a pod that is none of the stack's,
    a broker's client port and a worker's metrics port open, while the brokers' own ports
    (replication, controller) and (restFrom) the workers' REST port are refused. The workers reach the brokers and each
    other meanwhile: records were copied both ways through them."""
    shown = {p["metadata"]["name"]: p for p in pods(node)}
    broker = shown["us-kafka-0"]["status"]["podIP"]
    worker = next(
        p["status"]["podIP"]
        for p in shown.values()
        if p["metadata"]["labels"].get("app.kubernetes.io/name") == "kafka-connect"
    )
    targets = [
        ("broker client", broker, 9092),
        ("broker replication", broker, 9091),
        ("broker controller", broker, 9093),
        ("worker rest", worker, KUBERNETES_REST_PORT),
        ("worker metrics", worker, METRICS_PORT),
    ]
    found = reached_from_a_foreign_pod(node, targets)
    print(f"[kube stack] from a foreign pod: {found}")
    assert found == {
        "broker client": "open",
        "broker replication": "ConnectionRefusedError",
        "broker controller": "ConnectionRefusedError",
        "worker rest": "ConnectionRefusedError",
        "worker metrics": "open",
    }


def alert_states(node: str, alert: str, **labels: str) -> list[str]:
    """The states of `alert` with `labels` in the operator's Prometheus (pending, firing)."""
    alerts = prometheus_api(node, "/api/v1/alerts")["alerts"]
    return [
        a["state"]
        for a in alerts
        if a["labels"].get("alertname") == alert and all(a["labels"].get(k) == v for k, v in labels.items())
    ]


def broker_metric(node: str, pod: str, metric: str) -> float | None:
    """A broker's metric from its exporter, through the API server's pod proxy (as the roll reads it)."""
    got = kubectl(node, "get", "--raw", f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}:{METRICS_PORT}/proxy/metrics")
    for line in got.stdout.splitlines() if got.returncode == 0 else []:
        name, _, value = line.partition(" ")
        if name == metric:
            return float(value)
    return None


def alert_fires(node: str, alert: str, within_s: float, **labels: str) -> float:
    """Wait until `alert` with `labels` fires in the operator's Prometheus (bounded by `within_s`);
    the seconds it took."""
    t0 = time.monotonic()
    wait_until(lambda: "firing" in alert_states(node, alert, **labels), within_s, f"{alert} {labels} firing", poll_s=3)
    return time.monotonic() - t0


def authorizer_holds_mm2_to_its_grants(outputs: dict[str, Any], mm2_password: str) -> None:
    """us runs StandardAuthorizer with the stack's ACLs: MM2's user, which only reads `orders` there
    (us->eu) and writes what eu->us copies, is refused a write to `orders`, which the stack's
    admin (the outputs' client) makes."""
    from confluent_kafka import KafkaError, Producer
    from confluent_kafka.admin import AdminClient

    from components.kafka.admin import every_acl_binding

    client = {**outputs["clusters"]["us"]["client"], "sasl.username": "mm2", "sasl.password": mm2_password}
    conf = {"bootstrap.servers": outputs["clusters"]["us"]["bootstrap"], "log_level": 0}
    errors: list[Any] = []
    producer = Producer({**conf, **client, "message.timeout.ms": 20000})
    producer.produce("orders", b"not-allowed", on_delivery=lambda err, _msg: errors.append(err))
    assert producer.flush(30) == 0, "the refused write was never answered"
    assert errors and errors[0] is not None and errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, errors
    admin = AdminClient({**conf, **outputs["clusters"]["us"]["client"]})
    bindings = admin.describe_acls(every_acl_binding(), request_timeout=20).result()
    principals = sorted({b.principal for b in bindings})
    print(
        f"[kube stack] us authorizer: {len(bindings)} ACLs for {', '.join(principals)}; mm2's write to orders refused"
    )
    assert {"User:mm2", "User:connect-to-us"} <= set(principals), principals
