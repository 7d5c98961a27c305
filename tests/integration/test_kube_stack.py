"""The kubernetes platform deployed for real: `pulumi up` of a stack shaped like Pulumi.prod.yaml
(two SASL_SSL Kafka clusters on StatefulSets, a Connect Deployment with REST basic auth next to
each, one flow each way with reverse heartbeats and the auto-restart watcher) onto bin/kube's three
nodes in three zones through the real pulumi-kubernetes provider, in a namespace that enforces Pod Security
"restricted". The test makes the TLS Secrets as cert-manager would and gives every password in
mm2:secrets.

The host reaches each cluster at its external listener on node ports (`bootstrap`, 127.0.0.1,
verified with `caLocation`) and each group's REST API at its node port (`url`); the workers reach
the brokers at the in-cluster Services (`internalBootstrap`). Checked: every pod admitted under
"restricted", Running and Ready, us's three brokers one per zone with their zone as `broker.rack`,
records copied both ways, a broker pod deleted by hand back with its data and the flow catching up,
a change Kubernetes forbids in place refused at preview (and at up) before anything changed, a
worker setting rolled one pod at a time under a stream with nothing lost (the longest
gap printed), a node lost under a stream (a broker roll refused meanwhile), then a broker setting
and a renewed certificate rolled through us's brokers one at a time under an acks=all stream
(tests/integration/kube_broker_roll.py), the Spark stage and `bin/status` passing against those addresses, and `pulumi
destroy` leaving nothing of the stack in its namespace. Then an image the node lacks is named at
preview, and on the node unlabelled as one that pulls, `up` reports the pod's pull error within
readyTimeout.

Metrics are on, as by default: the API server accepts each group's ServiceMonitor and
PrometheusRule, what they point Prometheus at answers through the API server's Service proxy,
and the Prometheus Operator that `bin/kube prometheus` runs scrapes every target and evaluates
the rules: MM2FlowLagAboveRPO fires while a flow is paused and clears once it resumes.
kube-router enforces the NetworkPolicies: from a pod that is none of the stack's, the brokers'
controller port and the workers' REST port (`restFrom`) are refused.

Scaled to this machine (#25): us as in production (3 brokers, replication factor 3,
min.insync.replicas 2), eu one broker, one or two workers per group. Part of the Kubernetes lane
(tests/integration/kube.py).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from components.platform.image_layout import NO_PULLS_LABEL
from tests.integration.connect_rest import pause_connector
from tests.integration.harness import (
    ROOT,
    TestStack,
    connect_auth,
    produce_batch,
    read_keys,
    run_status,
    wait_until,
    write_outputs,
)
from tests.integration.kube import (
    EXTERNAL,
    KAFKA_TAG,
    LANE,
    NAMESPACE,
    REST,
    SECRET_KEYS,
    WATCHER_TAG,
    exec_kubeconfig,
    first_said,
    image_archive,
    kube,
    kubectl,
    make_tls_secrets,
    node_lock,
    stack_config,
    up_streamed,
)
from tests.integration.kube_broker_roll import broker_roll_loses_nothing, roll_refused_with_a_broker_down
from tests.integration.kube_checks import (
    alert_fires,
    alert_states,
    authorizer_holds_mm2_to_its_grants,
    broker_racks,
    metrics_are_served_and_their_kinds_accepted,
    network_policy_is_enforced,
    pods,
    prometheus_scrapes_the_stack,
    ready,
)
from tests.integration.kube_drain import drained_node_keeps_one_broker_out
from tests.integration.kube_preemption import free_cpu, requested_cpu, waiter_outcome, waiting_for_cpu
from tests.integration.streaming import streamed_during

pytestmark = LANE
RECORDS = 200
ZONES = ["zone-a", "zone-b", "zone-c"]  # bin/kube's nodes, one broker of us on each


@pytest.fixture(scope="module")
def node() -> Iterator[str]:
    """bin/kube's three nodes with the project's images loaded and the stack's namespace; down after."""
    archives = [str(image_archive(KAFKA_TAG)), str(image_archive(WATCHER_TAG))]
    with node_lock():
        yield from _node(archives)


def _node(archives: list[str]) -> Iterator[str]:
    try:
        started = kube("up", "--nodes", str(len(ZONES)))
        assert started.returncode == 0, started.stderr
        kubeconfig = started.stdout.strip()
        loaded = kube("load", *archives)
        assert loaded.returncode == 0, loaded.stderr
        # The Prometheus Operator and one Prometheus of every ServiceMonitor and rule.
        monitoring = kube("prometheus")
        assert monitoring.returncode == 0, monitoring.stderr
        created = kubectl(kubeconfig, "create", "namespace", NAMESPACE)
        assert created.returncode == 0, created.stderr
        # Pod Security "restricted", enforced by the API server: every pod of the stack must pass it.
        labelled = kubectl(kubeconfig, "label", "namespace", NAMESPACE, *RESTRICTED)
        assert labelled.returncode == 0, labelled.stderr
        yield kubeconfig
    finally:
        stopped = kube("down")
        assert stopped.returncode == 0, stopped.stderr


@pytest.fixture(scope="module")
def tls(node: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """The TLS Secrets as cert-manager would make them: (their folder, the stores' password, the CA's PEM)."""
    password = secrets.token_urlsafe(18)
    root = tmp_path_factory.mktemp("kube-tls")
    return root, password, make_tls_secrets(node, root, password)


@pytest.fixture(scope="module")
def stack(node: str, tls: tuple[Path, str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestStack]:
    """The lane's stack, with its TLS Secrets made and its passwords given (fresh each run)."""
    _, password, ca_pem = tls
    s = TestStack(tmp_path_factory.mktemp("kube-stack"), stack_config(ca_pem))
    s.env["KUBECONFIG"] = node
    s.init()
    for key in SECRET_KEYS:
        # The stores share one password; the rest get their own.
        s.set_secret(key, password if "tls" in key or "truststore" in key else secrets.token_urlsafe(18))
    try:
        yield s
    finally:
        s.pulumi("destroy", "--yes", "--skip-preview", check=False)


RESTRICTED = ("pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/enforce-version=latest")


def restricted_is_enforced(kubeconfig: str) -> None:
    """A pod with no security context is refused in the stack's namespace (a server-side dry
    run: admission runs, nothing is created)."""
    tried = kubectl(
        kubeconfig, "-n", NAMESPACE, "run", "psa-probe", f"--image={KAFKA_TAG}", "--restart=Never", "--dry-run=server"
    )
    assert tried.returncode != 0 and 'violates PodSecurity "restricted' in tried.stderr, tried.stdout + tried.stderr


def produce(outputs: dict[str, Any], alias: str, prefix: str) -> set[bytes]:
    """RECORDS keyed records `<prefix>-<i>` into `orders` on `alias` (its external listener); their keys."""
    return set(produce_batch(outputs, alias, "orders", [f"{prefix}-{i}".encode() for i in range(RECORDS)]))


def copied(outputs: dict[str, Any], alias: str, topic: str, prefix: str) -> set[bytes]:
    """The keys `produce(..., prefix)` wrote, as read from `topic` on `alias` (bounded wait)."""
    # A reader that commits would be a consumer group MM2 must checkpoint (the Spark stage checks
    # it does) although it was never meant to move between clusters.
    found = read_keys(outputs, alias, topic, f"{prefix}-".encode(), RECORDS, 180, **{"enable.auto.commit": False})
    return set(found)


def broker_recovers_with_its_data(node: str, outputs: dict[str, Any], before: set[bytes]) -> None:
    """us-kafka-0 deleted by hand while a pod of the workers' (lower) priority class waits on its
    node for exactly the CPU it holds: the StatefulSet starts it again on its volume claim, first
    (tests/integration/kube_preemption.py), the records it held are still there, and the flow
    copies what is written after."""
    shown = next(p for p in pods(node) if p["metadata"]["name"] == "us-kafka-0")
    old, on = shown["metadata"]["uid"], shown["spec"]["nodeName"]
    with waiting_for_cpu(node, on, "to-us", free_cpu(node, on) + requested_cpu(shown)):
        deleted = kubectl(node, "-n", NAMESPACE, "delete", "pod", "us-kafka-0", "--wait=true")
        assert deleted.returncode == 0, deleted.stderr
        started = time.monotonic()
        wait_until(
            lambda: any(
                p["metadata"]["name"] == "us-kafka-0" and p["metadata"]["uid"] != old and ready(p) for p in pods(node)
            ),
            180,
            "us-kafka-0 Ready again",
        )
        back = time.monotonic() - started
        outcome = waiter_outcome(node)
    print(
        f"[kube stack] us-kafka-0 deleted with a worker-class pod waiting for its CPU: Ready again after {back:.0f}s, "
        f"the waiting pod {outcome}"
    )
    kept = copied(outputs, "us", "orders", "us")
    assert before <= kept, f"{len(before - kept)} record(s) lost with the pod"
    after = produce(outputs, "us", "after-restart")
    arrived = copied(outputs, "eu", "us.orders", "after-restart")
    assert after <= arrived, f"{len(after - arrived)} record(s) written after the restart not copied"


def pause_flow(outputs: dict[str, Any], flow: str, action: str) -> None:
    """`pause` (until its tasks are paused) or `resume` the flow's source connector through its
    group's REST API."""
    group = f"to-{flow.split('->')[1]}"
    url, source = outputs["connect"][group]["url"], outputs["flows"][flow]["connectors"]["source"]
    auth = connect_auth(outputs, group)
    if action == "pause":
        pause_connector(url, source, auth)
    else:
        httpx.put(f"{url}/connectors/{source}/{action}", auth=auth, timeout=10).raise_for_status()


def paused_flow_raises_its_alerts(node: str, outputs: dict[str, Any]) -> None:
    """eu->us paused while records stream into eu's `orders`: its lag passes the flow's RPO (20 s)
    and MM2FlowLagAboveRPO fires after the rule's minute; with eu taking records and none copied
    for the group's window (1 minute on the lane), MM2NoRecordsWhileSourceProducing fires after its
    `failureFor`, both through the operator's Prometheus. Resumed: the lag alert clears and every
    record streamed during the pause arrives on us."""
    flow, alerts = {"flow": "eu->us"}, ("MM2FlowLagAboveRPO", "MM2NoRecordsWhileSourceProducing")

    def paused() -> dict[str, float]:
        """Pause, wait for both alerts (each one's time since the pause), resume."""
        pause_flow(outputs, "eu->us", "pause")
        t0, fired = time.monotonic(), {}

        def both_firing() -> bool:
            for alert in alerts:
                if alert not in fired and "firing" in alert_states(node, alert, **flow):
                    fired[alert] = time.monotonic() - t0
            return len(fired) == len(alerts)

        try:
            wait_until(both_firing, 240, f"{' and '.join(alerts)} firing for eu->us", poll_s=3)
        finally:  # resumed also when an alert never fired: the stream's records must still arrive
            pause_flow(outputs, "eu->us", "resume")
        return fired

    fired, streamed = streamed_during(outputs, ("eu", "orders"), ("us", "eu.orders"), paused)
    resumed = time.monotonic()
    wait_until(lambda: alert_states(node, "MM2FlowLagAboveRPO", **flow) == [], 180, "MM2FlowLagAboveRPO cleared")
    print(
        f"[kube stack] eu->us paused under {streamed.sent} records: MM2FlowLagAboveRPO fired "
        f"{fired[alerts[0]]:.0f}s and {alerts[1]} {fired[alerts[1]]:.0f}s after the pause; lag alert cleared "
        f"{time.monotonic() - resumed:.0f}s after every record arrived"
    )
    assert not streamed.missing, (
        f"{streamed.missing} of {streamed.sent} records streamed during the pause never arrived"
    )


def forbidden_change_is_refused_at_preview(node: str, stack: TestStack) -> None:
    """A new storageSize would make the provider replace the brokers' StatefulSet (Kubernetes
    forbids changing its claim template in place): preview fails naming the key and the fix, and
    up stops before anything changed."""
    settings = stack.config["config"]["mm2-platform:kubernetes"]
    settings["kafka"]["storageSize"] = "2Gi"
    stack.write_config()
    try:
        preview = stack.pulumi("preview", check=False)
        assert preview.returncode != 0
        said = preview.stdout + preview.stderr
        # Both clusters share the setting; whichever guard the engine asks first refuses.
        refused = r"mm2-platform:kubernetes\.clusters\.(us|eu)\.storageSize: changing the brokers' storage"
        assert re.search(refused, said), said
        # deleteClaims is on here: the data would go with the claims, so only putting it back is offered.
        assert "their data, would be deleted with it: refused. Fix: put back '1Gi'." in said, said
        # The refusal is its message, not a traceback (the program's own pending registrations may
        # still print the engine's shutdown, as on any failed preview: not asserted either way).
        assert re.search(r"StatefulSetShape \S+ +error: mm2-platform:kubernetes", said), said
        up = stack.pulumi("up", "--yes", "--skip-preview", check=False)
        assert up.returncode != 0 and "storageSize" in up.stdout + up.stderr
        shown = kubectl(node, "-n", NAMESPACE, "get", "statefulset", "us-kafka", "-o", "json")
        template = json.loads(shown.stdout)["spec"]["volumeClaimTemplates"][0]
        assert template["spec"]["resources"]["requests"]["storage"] == "1Gi"
        assert all(ready(p) for p in pods(node))
    finally:
        settings["kafka"]["storageSize"] = "1Gi"
        stack.write_config()


def lost_node(node: str) -> tuple[int, str, int]:
    """(index, name, us broker on it) of a node to lose: not the first (the control plane) and not
    eu's (its only broker), so us keeps a majority and min.insync.replicas and eu takes the copies."""
    placed = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods(node)}
    for ordinal in range(len(ZONES)):
        name = placed[f"us-kafka-{ordinal}"]
        if name not in ("mm2-kube", placed["eu-kafka-0"]):
            return int(name.rsplit("-", 1)[1]), name, ordinal
    raise AssertionError(f"no node but the first holds a us broker and not eu's: {placed}")


def node_lost_under_a_stream_loses_nothing(
    node: str, stack: TestStack, outputs: dict[str, Any], tmp_path: Path
) -> None:
    """A node's every process killed at once (kubelet, containerd, its pods) while records stream
    us->eu with acks=all: bin/status names the broker down and its node NotReady, the stream goes
    on with 2 of 3 in sync, a broker roll refuses to start, the brokers' alert on under-replicated
    partitions is raised in the operator's Prometheus, and once the node is started again the
    broker rejoins by itself and bin/status finds the cluster whole; every record arrives."""
    index, name, broker = lost_node(node)
    env = {**os.environ, "KUBECONFIG": node}
    said = [""]

    def reports(*needles: str) -> bool:
        shown = run_status(outputs, tmp_path, env=env)
        said[0] = shown.stdout + shown.stderr
        return all(n in said[0] for n in needles)

    def while_lost() -> float:
        """The checks made while the node is down; how long bin/status took to name it."""
        t0 = time.monotonic()
        down = (f"broker {broker} is down", f"pod us-kafka-{broker} on node {name} (", "which is NotReady")
        try:
            wait_until(lambda: reports(*down), 150, f"bin/status naming broker {broker} and node {name}", poll_s=5)
        except AssertionError:
            raise AssertionError(f"bin/status never named the lost broker and node; last:\n{said[0]}") from None
        named = time.monotonic() - t0
        print(f"[kube stack] node {name} lost: {said[0][said[0].index('cluster us  DEGRADED') :].splitlines()[:2]}")
        # The node still down: a producer with acks=all writes (2 of 3 in sync) and MM2 copies it.
        written = produce(outputs, "us", "while-lost")
        arrived = copied(outputs, "eu", "us.orders", "while-lost")
        assert written <= arrived, f"{len(written - arrived)} record(s) written with {name} down not copied"
        roll_refused_with_a_broker_down(node, stack, broker)
        # The partitions broker `broker` held are short of it: us's alert fires after its
        # `underReplicatedFor` (30 s on the lane, tests/integration/kube.py stack_config).
        fired = alert_fires(node, "KafkaUnderReplicatedPartitions", 150, mm2_cluster="us")
        print(
            f"[kube stack] with {name} lost: KafkaUnderReplicatedPartitions firing ({fired:.0f}s after the roll check)"
        )
        return named

    def lose_and_bring_back() -> tuple[float, float]:
        lost = kube("lose-node", str(index))
        assert lost.returncode == 0, lost.stderr
        try:
            named = while_lost()
        finally:  # back also when a check failed, so the rest of the lane and destroy find it
            back = kube("start-node", str(index))
        assert back.returncode == 0, back.stderr
        t1 = time.monotonic()
        try:
            wait_until(lambda: reports("flow us->eu") and "DEGRADED" not in said[0], 240, "us whole again", poll_s=5)
        except AssertionError:
            raise AssertionError(f"us never whole again after the node came back; last:\n{said[0]}") from None
        return named, time.monotonic() - t1

    (named, whole), streamed = streamed_during(outputs, ("us", "orders"), ("eu", "us.orders"), lose_and_bring_back)
    print(
        f"[kube stack] node {name} lost under {streamed.sent} records: named by bin/status after {named:.0f}s, "
        f"us whole {whole:.0f}s after the node was back, longest gap {streamed.longest_gap_s:.1f}s"
    )
    assert not streamed.missing, f"{streamed.missing} of {streamed.sent} records never arrived on eu"


def test_prod_shaped_stack_deploys_replicates_both_ways_and_destroys_clean(
    node: str, stack: TestStack, tls: tuple[Path, str, str], tmp_path: Path
) -> None:
    # A new user's copy of the example, held to every rule of the project's pack (not a dev stack).
    checked = stack.pulumi("preview", "--policy-pack", str(ROOT / "policies"), check=False)
    assert checked.returncode == 0 and "[mandatory]" not in checked.stdout.lower(), checked.stdout[-4000:]
    started = time.monotonic()
    stack.up()
    took = time.monotonic() - started
    shown = pods(node)
    placed = ", ".join(f"{p['metadata']['name']}@{p['spec'].get('nodeName')}" for p in shown)
    print(f"\n[kube stack] pulumi up {took:.0f}s: {placed}")
    # Four brokers, three workers, a lag exporter and a watcher per group: all Running and Ready.
    assert len(shown) == 11 and all(ready(p) for p in shown), [
        (p["metadata"]["name"], p["status"].get("phase")) for p in shown
    ]
    restricted_is_enforced(node)  # so the eleven pods above were admitted under "restricted"
    # One us broker per node, so per zone; each broker's rack is its node's zone (its init container).
    racks = broker_racks(node)
    assert all(rack == zone for rack, zone in racks.values()), racks
    assert sorted(rack for name, (rack, _) in racks.items() if name.startswith("us-")) == ZONES, racks
    outputs = stack.outputs()
    assert outputs["clusters"]["us"]["bootstrap"] == "127.0.0.1:30090"
    written = {}
    for source, target in (("us", "eu"), ("eu", "us")):
        written[source] = produce(outputs, source, source)
        seen = copied(outputs, target, f"{source}.orders", source)
        assert written[source] <= seen, f"{source}->{target}: {len(written[source] - seen)} record(s) not copied"
    metrics_are_served_and_their_kinds_accepted(node)
    prometheus_scrapes_the_stack(node)
    network_policy_is_enforced(node)
    broker_recovers_with_its_data(node, outputs, written["us"])
    paused_flow_raises_its_alerts(node, outputs)
    mm2_password = stack.pulumi("config", "get", "--path", 'mm2:secrets["us.mm2.password"]').stdout.strip()
    authorizer_holds_mm2_to_its_grants(outputs, mm2_password)
    forbidden_change_is_refused_at_preview(node, stack)
    node_lost_under_a_stream_loses_nothing(node, stack, outputs, tmp_path)
    drained_node_keeps_one_broker_out(node, outputs, *lost_node(node)[1:])
    broker_roll_loses_nothing(node, stack, outputs, tls)
    outputs = stack.outputs()  # us's admin password was rotated
    new_mm2 = stack.pulumi("config", "get", "--path", 'mm2:secrets["us.mm2.password"]').stdout.strip()
    authorizer_holds_mm2_to_its_grants(outputs, new_mm2)  # MM2's new password logs in, its grants unchanged

    outputs_file = write_outputs(outputs, tmp_path / "outputs.json")
    last: list[subprocess.CompletedProcess[str]] = []

    def healthy() -> bool:
        """Both flows healthy, each with its copy rate (every worker pod's metrics) and its lag
        exporter's reading, both read through the API server as the kubeconfig's user."""
        last[:] = [run_status(outputs, tmp_path, env={**os.environ, "KUBECONFIG": node})]
        out = last[0].stdout
        read = out.count("  throughput ") == 2 and "throughput -" not in out and out.count(": flow lag ") == 2
        return last[0].returncode == 0 and out.count("healthy") == 2 and read

    # After the roll a connector is briefly UNASSIGNED while Connect rebalances, and the new
    # workers serve a byte-rate once their tasks copy a record: polled, bounded.
    try:
        wait_until(healthy, 120, "bin/status: both flows healthy, with their copy rate and lag", poll_s=3)
    except AssertionError:
        raise AssertionError(f"bin/status never healthy; last:\n{last[0].stdout}{last[0].stderr}") from None
    read = [line.strip() for line in last[0].stdout.splitlines() if "throughput" in line or ": flow lag " in line]
    print("[kube stack] bin/status through the API server:\n  " + "\n  ".join(read))
    # The Spark stage reads both clusters at their external listeners from this machine.
    validate = subprocess.run(
        [str(ROOT / "bin" / "validate"), "--outputs", str(outputs_file)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert validate.returncode == 0, validate.stdout[-4000:] + validate.stderr[-2000:]
    assert "RESULT: PASS" in validate.stdout

    destroyed_clean(node, stack)


def destroyed_clean(node: str, stack: TestStack) -> None:
    """`pulumi destroy` leaves nothing of the stack in its namespace (within a minute)."""
    stack.pulumi("destroy", "--yes", "--skip-preview")
    left: list[list[str]] = [[]]

    def emptied() -> bool:
        left[0] = stack_objects(node)
        return left[0] == []

    try:
        wait_until(emptied, 60, "the namespace empty after destroy")
    except AssertionError:
        raise AssertionError(f"left in the namespace after destroy: {left[0]}") from None


def stack_objects(kubeconfig: str) -> list[str]:
    """Every object in the stack's namespace but Kubernetes' own root-CA ConfigMap."""
    kinds = "all,pvc,configmap,secret,pdb,networkpolicy,servicemonitor,prometheusrule"
    shown = kubectl(kubeconfig, "-n", NAMESPACE, "get", kinds, "-o", "name")
    assert shown.returncode == 0, shown.stderr
    # Kubernetes' own root-CA ConfigMap stays, and the TLS Secrets the test made (cert-manager's part).
    theirs = {"configmap/kube-root-ca.crt", *(f"secret/{a}-kafka-tls" for a in EXTERNAL)}
    theirs |= {f"secret/{g}-connect-tls" for g in REST}
    return [name for name in shown.stdout.split() if name not in theirs]


def one_cluster_config(namespace: str, **kafka: Any) -> dict[str, Any]:
    """The lane's stack cut to one cluster `bad` (no groups, no flows) in its own namespace."""
    cfg = stack_config()
    config = cfg["config"]
    # PLAINTEXT: what it tests fails before any client would connect.
    cluster = {**config["mm2:clusters"]["us"], "bootstrap": "127.0.0.1:30070", "security": {"protocol": "PLAINTEXT"}}
    cluster["internalBootstrap"] = f"bad-kafka-bootstrap.{namespace}.svc:9092"
    config["mm2:clusters"] = {"bad": cluster}
    config["mm2:workerGroups"] = {}
    config["mm2:flows"] = {}
    platform = config["mm2-platform:kubernetes"]
    platform["namespace"] = namespace
    platform["kafka"].update(kafka)
    platform["clusters"] = {"bad": {"context": "mm2-kube", "externalHost": "127.0.0.1", "externalNodePort": 30070}}
    platform["workerGroups"] = {}
    return cfg


def test_a_missing_worker_image_is_named_at_preview_and_up_ends_on_it_long_before_the_bound(
    node: str, tmp_path: Path
) -> None:
    """An image no node has: the preview names its setting. On nodes that pull, `up` brings the
    brokers up, then the workers' pull fails and `up` ends on the start watch's report, not at
    readyTimeout: the Deployment and the Services in front of it leave the wait to the watch
    (components/platform/kubernetes/pod_watch.py). The stack reads the API through an exec
    plugin's credential, as a managed cluster's kubeconfig has it: the preview's checks, the
    brokers' roll, the watch and pulumi-kubernetes itself."""
    namespace = "mm2-bad"
    # On a registry address where nothing listens, on loopback: the pull fails on this machine.
    absent = "127.0.0.1:9/mm2-iac/kafka:absent"
    config = one_cluster_config(namespace)
    # One broker: three stopped at once wait out their grace period, the quorum gone (two minutes).
    config["config"]["mm2:clusters"]["bad"].update(brokers=1, topics={})
    config["config"]["mm2:workerGroups"] = {"g": {"platform": "kubernetes", "cluster": "bad", "workers": 1}}
    platform = config["config"]["mm2-platform:kubernetes"]
    platform["workerGroups"] = {"g": {"context": "mm2-kube", "image": absent}}
    platform["readyTimeout"] = "4m"  # the brokers start within it; the workers' pull fails well before
    stack = TestStack(tmp_path / "absent", config)
    stack.env["KUBECONFIG"], plugin_runs = exec_kubeconfig(node, tmp_path / "exec")
    stack.init()
    assert kubectl(node, "create", "namespace", namespace).returncode == 0
    refused = stack.pulumi("preview", check=False)
    text = " ".join((refused.stdout + refused.stderr).split())
    assert refused.returncode != 0
    assert f"mm2-platform:kubernetes.workerGroups.g.image: the image {absent} is not on the node" in text, text[-3000:]
    assert plugin_runs.is_file(), "the preview did not read the API through the exec plugin"

    assert kubectl(node, "label", "nodes", "--all", f"{NO_PULLS_LABEL}-").returncode == 0
    try:
        code, lines = up_streamed(stack)
        said = " ".join("".join(line for _, line in lines).split())  # the CLI wraps long lines
        assert code != 0
        assert re.search(
            r"the workers of g: pod g-connect-\S+ cannot start: container connect: (ErrImagePull|ImagePullBackOff)",
            said,
        ), said[-4000:]
        assert "Fix: check mm2-platform:kubernetes.workerGroups.g.image" in said
        reported, ended = first_said(lines, "cannot start"), lines[-1][0]
        print(f"\nthe workers' pull failure reported {reported:.0f}s into up, which ended after {ended:.0f}s")
        assert ended - reported < 30, f"up ended {ended - reported:.0f}s after the report: a wait went on"
        assert ended < 120, f"up ended after {ended:.0f}s (readyTimeout 4m): a wait held it"
    finally:
        kubectl(node, "label", "nodes", "--all", f"{NO_PULLS_LABEL}=none", "--overwrite")
        stack.pulumi("destroy", "--yes", "--skip-preview", check=False)
        kubectl(node, "delete", "namespace", namespace, "--wait=false")


def test_a_stack_larger_than_the_nodes_is_warned_at_preview_and_up_names_the_scheduler_reason(
    node: str, tmp_path: Path
) -> None:
    """Four brokers (one per host) on the three nodes: the preview says so, naming the node count;
    `up` anyway reports the pods the scheduler cannot place with its reason and the setting to
    change as soon as the reason has lasted (components/platform/kubernetes/pod_watch.py), well
    before readyTimeout, where pulumi-kubernetes names only the pods' readiness, and ends then
    (the brokers' roll stops waiting on the same reason)."""
    namespace = "mm2-big"
    config = one_cluster_config(namespace)
    config["config"]["mm2:clusters"]["bad"]["brokers"] = len(ZONES) + 1
    # The brokers' roll ends its wait on the pod's lasting reason too, so up exits soon after it
    # (29 s on the lane), well before this readyTimeout.
    config["config"]["mm2-platform:kubernetes"]["readyTimeout"] = "90s"
    stack = TestStack(tmp_path / "big", config)
    stack.env["KUBECONFIG"] = node
    stack.init()
    assert kubectl(node, "create", "namespace", namespace).returncode == 0
    try:
        previewed = stack.pulumi("preview")
        text = " ".join((previewed.stdout + previewed.stderr).split())  # the CLI wraps long lines
        assert "4 broker(s) of bad need 4 nodes (one broker per host, required anti-affinity)" in text, text[-3000:]
        assert "context 'mm2-kube' (3 schedulable node(s)) has 3: 1 would stay Pending" in text, text[-3000:]

        code, lines = up_streamed(stack)
        text = " ".join("".join(line for _, line in lines).split())
        assert code != 0
        reason = (
            r"the brokers of bad: pod bad-kafka-[0-3] cannot be scheduled: 0/3 nodes are available: "
            r"3 node\(s\) didn't match pod anti-affinity rules\. Fix: each pod needs a node of its own: "
            r"lower mm2:clusters\.bad\.brokers, or add nodes"
        )
        assert re.search(reason, text), text[-4000:]
        said = first_said(lines, "cannot be scheduled")
        ended = lines[-1][0] if lines else 0.0
        print(
            f"\nthe scheduler's reason reported {said:.0f}s into up, which ended after {ended:.0f}s (readyTimeout 90s)"
        )
        assert said < 40, f"reported {said:.0f}s into up, not before readyTimeout"
        assert ended < 75, f"up ended after {ended:.0f}s: its waits did not stop on the pod's reason"
    finally:
        stack.destroy()
        kubectl(node, "delete", "namespace", namespace, "--wait=false")
