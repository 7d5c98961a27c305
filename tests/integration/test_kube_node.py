"""bin/kube on this machine: a real Kubernetes runs pods of the project's own image on one node,
and the real pulumi-kubernetes provider deploys and destroys there; on three nodes in three zones
it routes pods and a Service by its DNS name between nodes and keeps a claimed volume's data
across pods on its node; and `down` leaves nothing of it behind.

Part of the Kubernetes lane (tests/integration/kube.py, `lane_skip_reason`), the last phase of
bin/test as root; bin/test builds the node first (Go builds of etcd, Kubernetes, CoreDNS and the
pause binary: minutes cold, cached after).
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.platform.local.process import command_lines
from tests.integration.harness import ROOT, wait_until
from tests.integration.kube import LANE, NETNS, STATE, WATCHER_TAG, image_archive, kube, kubectl, node_lock

POD_SUBNET = ipaddress.ip_network("10.201.0.0/24")  # the first node's; node N has 10.201.(N-1).0/24
SECOND_SUBNET, THIRD_SUBNET = ipaddress.ip_network("10.201.1.0/24"), ipaddress.ip_network("10.201.2.0/24")

pytestmark = LANE


@pytest.fixture(autouse=True)
def exclusive_node() -> Iterator[None]:
    with node_lock():
        yield


# Where Kubernetes, containerd and CNI write by default; the node must write none of them on the host.
HOST_DEFAULTS = (
    "/usr/libexec/kubernetes",
    "/var/lib/kubelet",
    "/var/lib/cni",
    "/etc/cni",
    "/opt/cni",
    "/etc/kubernetes",
    "/var/log/pods",
    "/var/log/containers",
    "/run/containerd/io.containerd.grpc.v1.cri",
    "/run/containerd/runc/k8s.io",
    "/var/lib/containerd/io.containerd.grpc.v1.cri",
)
BEFORE = {p for p in HOST_DEFAULTS if os.path.lexists(p)}


def leftovers() -> list[str]:
    """What the node would leave behind: processes, mounts, its network namespace, cgroups, state,
    default paths of its parts on the host."""
    left = [f"host path {p}" for p in HOST_DEFAULTS if os.path.lexists(p) and p not in BEFORE]
    for pid, args in command_lines():
        cmdline = b" ".join(args).decode(errors="replace")
        if str(STATE) in cmdline:
            left.append(f"process {pid}: {cmdline[:120]}")
    mounts = Path("/proc/self/mountinfo").read_text()
    left += [f"mount {line.split()[4]}" for line in mounts.splitlines() if str(STATE) in line.split()[4]]
    left += [f"network namespace {p.name}" for p in Path("/run/netns").glob(f"{NETNS}*")]
    left += [f"cgroup {p}" for p in Path("/sys/fs/cgroup").glob(f"*/{NETNS}*")]
    if STATE.exists():
        left.append(f"state folder {STATE}")
    return left


def pod(name: str, image: str) -> dict[str, Any]:
    """A pod of the project's watcher image serving HTTP, Ready once the kubelet's probe reaches it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [
                {
                    "name": "http",
                    "image": image,
                    "imagePullPolicy": "Never",
                    "command": ["python", "-m", "http.server", "8080", "--bind", "0.0.0.0", "--directory", "/tmp"],
                    "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1},
                }
            ]
        },
    }


def test_node_runs_a_pod_of_the_project_image_and_the_provider_and_down_leaves_nothing(tmp_path: Path) -> None:
    archive = image_archive(WATCHER_TAG)
    try:
        started = kube("up")
        assert started.returncode == 0, started.stderr
        kubeconfig = started.stdout.strip()
        # Up again is a no-op on a healthy node.
        t0 = time.monotonic()
        again = kube("up")
        assert again.returncode == 0 and "up already" in again.stderr, again.stderr
        assert time.monotonic() - t0 < 15
        status = kube("status")
        assert status.returncode == 0, status.stdout

        loaded = kube("load", str(archive))
        assert loaded.returncode == 0, loaded.stderr
        applied = kubectl(kubeconfig, "apply", "-f", "-", stdin=json.dumps(pod("probe", WATCHER_TAG)))
        assert applied.returncode == 0, applied.stderr
        ready = kubectl(kubeconfig, "wait", "--for=condition=Ready", "pod/probe", "--timeout=120s")
        assert ready.returncode == 0, kubectl(kubeconfig, "describe", "pod", "probe").stdout

        shown = json.loads(kubectl(kubeconfig, "get", "pod", "probe", "-o", "json").stdout)
        assert shown["status"]["phase"] == "Running"
        assert ipaddress.ip_address(shown["status"]["podIP"]) in POD_SUBNET
        # The API server reaches the kubelet and containerd's stream server: exec runs in the pod.
        inside = kubectl(kubeconfig, "exec", "probe", "--", "python", "-c", "import os; print(os.getuid())")
        assert inside.returncode == 0 and inside.stdout.strip() != "0", inside.stderr
        # The kubelet's readiness probes reached the pod over the node's bridge.
        wait_until(
            lambda: '"GET / HTTP/1.1" 200' in kubectl(kubeconfig, "logs", "probe").stdout,
            30,
            "the kubelet's probe requests in the pod's log",
        )
        provider_deploys_and_destroys(kubeconfig, tmp_path)
    finally:
        stopped = kube("down")
    assert stopped.returncode == 0, stopped.stderr
    assert leftovers() == []


NODE_PORT = 30080  # in bin/kube's default NodePort range, 30000-30099
SECOND, THIRD = "mm2-kube-2", "mm2-kube-3"


def http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            return int(response.status)
    except OSError:
        return 0


def service_and_claim() -> list[dict[str, Any]]:
    """A Service in front of the `web` pod, and a claim on the node's default StorageClass."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "type": "NodePort",
                "selector": {"app": "web"},
                "ports": [{"port": 80, "targetPort": 8080, "nodePort": NODE_PORT}],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
    ]


def on_node(spec: dict[str, Any], node: str) -> dict[str, Any]:
    spec["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    return spec


def client_pod() -> dict[str, Any]:
    """A pod of the watcher image (its non-root user) with the claim mounted at /data, on the third node."""
    spec = on_node(pod("client", WATCHER_TAG), THIRD)
    container = spec["spec"]["containers"][0]
    container["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    spec["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    spec["spec"]["securityContext"] = {"runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000}
    spec["spec"]["terminationGracePeriodSeconds"] = 1
    return spec


def zones(kubeconfig: str) -> dict[str, str]:
    """Each Ready node's zone label."""
    nodes = json.loads(kubectl(kubeconfig, "get", "nodes", "-o", "json").stdout)["items"]
    return {
        n["metadata"]["name"]: n["metadata"]["labels"].get("topology.kubernetes.io/zone", "")
        for n in nodes
        if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])
    }


def test_three_nodes_in_three_zones_route_pods_services_and_volumes_between_them() -> None:
    """`up --nodes 3`: three Ready nodes, one per zone. A pod on the third node reaches a Service
    by its name (CoreDNS on the first node) whose pod runs on the second, and so does this
    machine at its NodePort on 127.0.0.1 (through the first node); the API server execs in a pod
    on the third node. A claim gets its volume on its pod's node, a non-root pod writes to it,
    the data outlives the pod, and the volume goes with the claim. A name outside the cluster
    does not resolve (nothing is forwarded off the nodes)."""
    archive = image_archive(WATCHER_TAG)
    try:
        started = kube("up", "--nodes", "3")
        assert started.returncode == 0, started.stderr
        kubeconfig = started.stdout.strip()
        assert zones(kubeconfig) == {"mm2-kube": "zone-a", SECOND: "zone-b", THIRD: "zone-c"}
        again = kube("up", "--nodes", "1")
        assert again.returncode == 1 and "up already with 3 node(s), not 1" in again.stderr, again.stderr
        loaded = kube("load", str(archive))
        assert loaded.returncode == 0, loaded.stderr
        web = on_node(pod("web", WATCHER_TAG), SECOND)
        web["metadata"]["labels"] = {"app": "web"}
        items = {"apiVersion": "v1", "kind": "List", "items": [web, *service_and_claim(), client_pod()]}
        applied = kubectl(kubeconfig, "apply", "-f", "-", stdin=json.dumps(items))
        assert applied.returncode == 0, applied.stderr
        ready = kubectl(kubeconfig, "wait", "--for=condition=Ready", "pod/web", "pod/client", "--timeout=120s")
        assert ready.returncode == 0, kubectl(kubeconfig, "describe", "pods").stdout[-3000:]

        shown = json.loads(kubectl(kubeconfig, "get", "pod", "web", "client", "-o", "json").stdout)["items"]
        placed = {p["metadata"]["name"]: (p["spec"]["nodeName"], p["status"]["podIP"]) for p in shown}
        assert placed["web"][0] == SECOND and ipaddress.ip_address(placed["web"][1]) in SECOND_SUBNET
        assert placed["client"][0] == THIRD and ipaddress.ip_address(placed["client"][1]) in THIRD_SUBNET

        def in_client(code: str) -> subprocess.CompletedProcess[str]:
            return kubectl(kubeconfig, "exec", "client", "--", "python", "-c", code)

        url = "http://web.default.svc.cluster.local/"
        fetch = f"import urllib.request as u; print(u.urlopen('{url}', timeout=3).status)"
        # kube-proxy programs a new Service within its sync period: polled, not assumed.
        wait_until(lambda: in_client(fetch).stdout.strip() == "200", 60, "the Service answering by its name")
        # The same Service from this machine: its NodePort on 127.0.0.1.
        wait_until(lambda: http_status(f"http://127.0.0.1:{NODE_PORT}/") == 200, 60, "the NodePort on 127.0.0.1")
        outside = in_client("import socket; socket.gethostbyname('example.com')")
        assert outside.returncode != 0 and "gaierror" in outside.stderr, outside

        wrote = in_client("import os; open('/data/kept', 'w').write(str(os.getuid()))")
        assert wrote.returncode == 0, wrote.stderr
        claim = json.loads(kubectl(kubeconfig, "get", "pvc", "data", "-o", "json").stdout)
        volume = json.loads(kubectl(kubeconfig, "get", "pv", claim["spec"]["volumeName"], "-o", "json").stdout)
        (term,) = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        assert term["matchExpressions"][0]["values"] == [THIRD]  # the claim's pod's node
        folder = STATE / "volumes" / claim["spec"]["volumeName"]
        assert (folder / "kept").read_text() == "1000"
        assert kubectl(kubeconfig, "delete", "pod", "client", "--wait=true").returncode == 0
        assert kubectl(kubeconfig, "apply", "-f", "-", stdin=json.dumps(client_pod())).returncode == 0
        assert kubectl(kubeconfig, "wait", "--for=condition=Ready", "pod/client", "--timeout=120s").returncode == 0
        assert in_client("print(open('/data/kept').read())").stdout.strip() == "1000"

        assert kubectl(kubeconfig, "delete", "pod", "client", "--wait=true").returncode == 0
        assert kubectl(kubeconfig, "delete", "pvc", "data", "--wait=true").returncode == 0
        wait_until(lambda: not folder.exists(), 60, f"{folder} removed with its claim")
        wait_until(
            lambda: kubectl(kubeconfig, "get", "pv", "-o", "name").stdout.strip() == "", 60, "the volume deleted"
        )
    finally:
        stopped = kube("down")
    assert stopped.returncode == 0, stopped.stderr
    assert leftovers() == []


SMOKE_PROGRAM = """
import pulumi
import pulumi_kubernetes as k8s

config = pulumi.Config()
node = k8s.Provider("node", kubeconfig=config.require("kubeconfig"))
opts = pulumi.ResourceOptions(provider=node)
namespace = k8s.core.v1.Namespace("smoke", metadata={"name": "mm2-smoke"}, opts=opts)
settings = k8s.core.v1.ConfigMap(
    "settings", metadata={"namespace": namespace.metadata["name"]}, data={"greeting": "hello"}, opts=opts)
pod = k8s.core.v1.Pod(
    "web",
    metadata={"namespace": namespace.metadata["name"], "name": "web"},
    spec={"terminationGracePeriodSeconds": 2, "containers": [{
        "name": "http", "image": config.require("image"), "imagePullPolicy": "Never",
        "command": ["python", "-m", "http.server", "8080", "--bind", "0.0.0.0", "--directory", "/tmp"],
        "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1},
        "envFrom": [{"configMapRef": {"name": settings.metadata["name"]}}],
    }]},
    opts=opts,
)
pulumi.export("podIP", pod.status.apply(lambda status: status.pod_ip))
"""


def provider_deploys_and_destroys(kubeconfig: str, tmp_path: Path) -> None:
    """The real pulumi-kubernetes provider (the plugin bin/bootstrap --kubernetes builds, with the
    SDK of the project's lock) creates a namespace, a ConfigMap and a pod on the running node
    (the watcher image loaded), waits for the pod to be Ready, changes nothing on a second up,
    and destroys them."""
    venv = ROOT / ".venv"
    project = tmp_path / "smoke"
    project.mkdir()
    (project / "Pulumi.yaml").write_text(
        f"name: kube-smoke\nruntime: {{name: python, options: {{toolchain: pip, virtualenv: {venv}}}}}\n"
    )
    (project / "__main__.py").write_text(SMOKE_PROGRAM)
    env = {
        **os.environ,
        "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
        "PULUMI_CONFIG_PASSPHRASE": "mm2-test-only-passphrase",
    }
    (tmp_path / "state").mkdir()

    def pulumi(*args: str) -> subprocess.CompletedProcess[str]:
        out = subprocess.run(
            ["pulumi", *args, "--stack", "smoke", "--non-interactive"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert out.returncode == 0, f"pulumi {' '.join(args)}:\n{out.stdout[-4000:]}\n{out.stderr[-2000:]}"
        return out

    subprocess.run(
        ["pulumi", "stack", "init", "smoke", "--non-interactive"],
        cwd=project,
        env=env,
        check=True,
        capture_output=True,
    )
    pulumi("config", "set", "kubeconfig", kubeconfig)
    pulumi("config", "set", "image", WATCHER_TAG)
    pulumi("up", "--yes", "--skip-preview")
    pod_ip = pulumi("stack", "output", "podIP").stdout.strip()
    assert ipaddress.ip_address(pod_ip) in POD_SUBNET
    shown = json.loads(kubectl(kubeconfig, "-n", "mm2-smoke", "get", "pod", "web", "-o", "json").stdout)
    assert any(c["type"] == "Ready" and c["status"] == "True" for c in shown["status"]["conditions"])
    env_inside = kubectl(kubeconfig, "-n", "mm2-smoke", "exec", "web", "--", "printenv", "greeting")
    assert env_inside.stdout.strip() == "hello", env_inside.stderr
    # A second up changes nothing: the provider reads back what it created.
    assert "unchanged" in pulumi("up", "--yes", "--skip-preview").stdout
    pulumi("destroy", "--yes", "--skip-preview")
    gone = kubectl(kubeconfig, "get", "namespace", "mm2-smoke")
    assert gone.returncode != 0 and "NotFound" in gone.stderr
