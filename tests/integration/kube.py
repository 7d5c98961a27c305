"""What the tests on bin/kube's node share: running bin/kube and kubectl, and the image archives
the node loads (tests/integration/test_kube_node.py, test_kube_stack.py)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.platform.image_layout import KAFKA_IMAGE, WATCHER_IMAGE
from tests.integration.harness import ROOT

STATE = Path(os.environ.get("MM2_KUBE_DIR", ROOT / ".mm2" / "kube")).resolve()
NETNS = "mm2-kube"
# The project's images, as bin/bootstrap --images tags them.
WATCHER_TAG = WATCHER_IMAGE
KAFKA_TAG = KAFKA_IMAGE


def kube(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "bin" / "kube"), *args], capture_output=True, text=True, timeout=timeout)


def kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    # Its discovery cache goes with the node's state, not into ~/.kube.
    return subprocess.run(
        ["kubectl", f"--kubeconfig={kubeconfig}", f"--cache-dir={STATE / 'kubectl-cache'}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def image_archive(tag: str) -> Path:
    """The built archive of `tag`: from this checkout's image index, else the newest record in the cache."""
    index = Path(os.environ.get("MM2_IMAGES", ROOT / ".mm2" / "images.json"))
    if index.is_file():
        record = json.loads(index.read_text()).get(tag)
        if record and Path(record["archive"]).is_file():
            return Path(record["archive"])
    cache = Path(os.environ.get("MM2_CACHE", Path.home() / ".cache" / "mm2-iac")) / "images"
    records = [json.loads(p.read_text()) for p in cache.glob("*/record.json")]
    found = sorted(
        (Path(r["archive"]) for r in records if r.get("tag") == tag and Path(r["archive"]).is_file()),
        key=lambda p: p.stat().st_mtime,
    )
    if not found:
        # bin/test's bootstrap (--test-tools) builds them: their absence is a broken setup, never a skip.
        pytest.fail(f"no built {tag} image archive. Fix: run `bin/bootstrap --images` (bin/test does).", pytrace=False)
    return found[-1]


# What the node's binaries and the provider plugin are called where bin/bootstrap --kubernetes
# puts them (MM2_KUBE_BIN and PULUMI_HOME come from .mm2/env).
NODE_BINARIES = ("etcd", "kube-apiserver", "kubelet", "kube-proxy", "kube-router", "coredns")
PROVIDER_PLUGIN = "plugins/resource-kubernetes-v4.25.0/pulumi-resource-kubernetes"


def lane_skip_reason() -> str | None:
    """Why the Kubernetes lane does not apply here, or None.

    bin/test runs it by default, as root, after the rest of the suite and alone on the machine
    (tests/conftest.py, MM2_TEST_PHASE): beside the other modules on 2 cores its pods' load made a
    timing-bound test miss its bound. It builds the node beside the first phase (about 17 min of Go
    builds cold, cached after); MM2_KUBE_TEST=0 leaves the lane out. Both reasons here are ones
    bin/test prints too ("The Kubernetes lane was left out: ..."); a node not built is no reason
    to skip (`node_missing`)."""
    if os.environ.get("MM2_KUBE_TEST", "1") == "0":
        return "left out: MM2_KUBE_TEST=0"
    if os.geteuid() != 0:
        return "bin/kube needs root (network and mount namespaces, cgroups)"
    return None


def node_missing() -> str | None:
    """What of the node and its provider plugin is not built here, with the fix, or None. A lane
    test fails on it (the `kube_node_built` fixture, tests/integration/conftest.py): bin/test builds
    them whenever it runs the lane."""
    kube_bin = Path(os.environ.get("MM2_KUBE_BIN", ""))
    missing = [str(kube_bin / b) for b in NODE_BINARIES if not (kube_bin / b).is_file()]
    plugin = Path(os.environ.get("PULUMI_HOME", "")) / PROVIDER_PLUGIN
    if not plugin.is_file():
        missing.append(str(plugin))
    if not missing:
        return None
    fix = "run `bin/bootstrap --kubernetes` (bin/test does, as root)"
    return f"bin/kube's node is not built here ({', '.join(missing)} missing). Fix: {fix}."


# `kube_lane` puts a test in the lane's phase of bin/test (tests/conftest.py).
LANE = [
    pytest.mark.kube_lane,
    pytest.mark.skipif(lane_skip_reason() is not None, reason=lane_skip_reason() or ""),
    pytest.mark.usefixtures("kube_node_built"),
]


@contextlib.contextmanager
def node_lock() -> Iterator[None]:
    """One user of the node at a time: there is one per machine, and bin/test runs two modules at once."""
    with open("/tmp/mm2-kube-node.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# The lane's stack: the node example users follow (docs/kubernetes.md), deployed as it is.
EXAMPLE = ROOT / "examples" / "kube-node.yaml"
_EXAMPLE = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))["config"]
NAMESPACE = _EXAMPLE["mm2-platform:kubernetes"]["namespace"]
# In bin/kube's default NodePort range (30000-30099): each cluster's external bootstrap (the port
# after it per broker), and each group's REST API.
EXTERNAL = {a: c["externalNodePort"] for a, c in _EXAMPLE["mm2-platform:kubernetes"]["clusters"].items()}
REST = {g: c["nodePort"] for g, c in _EXAMPLE["mm2-platform:kubernetes"]["workerGroups"].items()}
# Every password the stack needs, given as mm2:secrets (test constants, never printed).
SECRET_KEYS = (
    *(
        f"{alias}.{key}"
        for alias in EXTERNAL
        for key in ("mm2.password", "broker.tls.password", "ssl.truststore.password")
    ),
    *(f"{group}.rest.password" for group in REST),
)


def stack_config(ca_pem: str = "/etc/mm2/kube-test/ca.pem") -> dict[str, Any]:
    """examples/kube-node.yaml with this run's CA (`ca_pem`: what this machine verifies the brokers
    with), a short RPO on each flow, so the lane's pause passes it soon, and short alert waits."""
    config = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    for cluster in config["config"]["mm2:clusters"].values():
        cluster["security"]["caLocation"] = ca_pem
    for flow in config["config"]["mm2:flows"].values():
        flow["rpo"] = "20s"
    # Alerts that wait seconds, not minutes, so the lane sees them fire: us's under-replicated
    # partitions while a node is lost, eu->us's records not copied while the flow is paused.
    platform = config["config"]["mm2-platform:kubernetes"]
    platform["clusters"]["us"]["alerts"] = {"underReplicatedFor": "30s"}
    platform["workerGroups"]["to-us"]["alerts"] = {"heartbeatWindowMinutes": 1, "failureFor": "30s"}
    return dict(config)


def make_tls_secrets(kubeconfig: str, root: Path, password: str) -> str:
    """A CA, a keystore per cluster's brokers (its names inside the node and 127.0.0.1, where the
    node ports are) and a truststore, as the Secrets the platform mounts: `<alias>-kafka-tls` and
    `<group>-connect-tls`. One password for every store. Returns the CA's PEM file."""
    from components.platform.local.tls import make_ca, make_truststore
    from components.topology.tls import TlsLayout

    layout = TlsLayout(str(root))
    make_ca(layout, "mm2-kube-test", 7, password)
    make_truststore(layout, password)
    for alias in EXTERNAL:
        _secret(kubeconfig, f"{alias}-kafka-tls", _broker_stores(layout, alias, password))
    for group in REST:
        files = {f"{alias}.truststore.p12": layout.truststore for alias in EXTERNAL}
        files.update({f"{alias}.ca.crt": layout.ca_pem for alias in EXTERNAL})
        _secret(kubeconfig, f"{group}-connect-tls", files)
    return layout.ca_pem


def _broker_stores(layout: Any, alias: str, password: str) -> dict[str, str]:
    """A new key and certificate for `alias`'s brokers, signed by the CA: the Secret's files."""
    from components.platform.local.tls import make_leaf

    names = [f"*.{alias}-kafka-brokers.{NAMESPACE}.svc", f"{alias}-kafka-bootstrap.{NAMESPACE}.svc"]
    leaf = {"name": alias, "common_name": f"{alias}-kafka", "validity_days": 7}
    make_leaf(layout, {**leaf, "sans": [*(f"DNS:{n}" for n in names), "IP:127.0.0.1"]}, password, password)
    return {"keystore.p12": layout.keystore(alias), "truststore.p12": layout.truststore}


def renew_broker_tls(kubeconfig: str, root: Path, password: str, alias: str) -> None:
    """As cert-manager renews a certificate: a new key and certificate from the same CA, written
    over `alias`'s TLS Secret in place."""
    from components.topology.tls import TlsLayout

    _secret(kubeconfig, f"{alias}-kafka-tls", _broker_stores(TlsLayout(str(root)), alias, password), replace=True)


def _secret(kubeconfig: str, name: str, files: dict[str, str], replace: bool = False) -> None:
    sources = [f"--from-file={k}={v}" for k, v in files.items()]
    if not replace:
        made = kubectl(kubeconfig, "-n", NAMESPACE, "create", "secret", "generic", name, *sources)
        assert made.returncode == 0, made.stderr
        return
    rendered = kubectl(
        kubeconfig, "-n", NAMESPACE, "create", "secret", "generic", name, *sources, "--dry-run=client", "-o", "yaml"
    )
    assert rendered.returncode == 0, rendered.stderr
    applied = kubectl(kubeconfig, "-n", NAMESPACE, "apply", "-f", "-", stdin=rendered.stdout)
    assert applied.returncode == 0, applied.stderr


def up_streamed(stack: Any, timeout: float = 600) -> tuple[int, list[tuple[float, str]]]:
    """`pulumi up` on a TestStack with each line of its output timed (seconds since the start),
    to tell when the engine showed what; (exit code, lines)."""
    cmd = ["pulumi", "up", "--yes", "--skip-preview", "--stack", stack.name, "--non-interactive"]
    cmd += ["--config-file", str(stack.config_file)]
    started = time.monotonic()
    process = subprocess.Popen(
        cmd, cwd=stack.root, env=stack.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append((time.monotonic() - started, line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        code = process.wait(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join(timeout=10)
    return code, lines


def first_said(lines: list[tuple[float, str]], needle: str) -> float:
    """When the output first showed `needle` (seconds into the command)."""
    said = [t for t, line in lines if needle in line]
    assert said, f"the output never says {needle!r}: " + "".join(line for _, line in lines)[-4000:]
    return said[0]


def diagnostics(said: str, limit: int = 6000) -> str:
    """What a failed `pulumi up` said about its failures: its Diagnostics section (before the
    outputs, which can push it out of a short tail), else the tail."""
    start = said.find("Diagnostics:")
    if start < 0:
        return said[-limit:]
    end = min((i for i in (said.find("Outputs:", start), said.find("Resources:", start)) if i > 0), default=len(said))
    return said[start:end][:limit]


def exec_kubeconfig(kubeconfig: str, folder: Path) -> tuple[str, Path]:
    """A copy of `kubeconfig` whose user gets its client certificate from an exec plugin, as a
    managed cluster's kubeconfig gets its credential (EKS's `aws eks get-token`): a script that
    prints the certificate and key as an ExecCredential and notes each run in the file returned.
    Named by its absolute path: pulumi-kubernetes reads the kubeconfig's text, so a relative
    command would not resolve from the kubeconfig's folder there, as it does for kubectl."""
    config = yaml.safe_load(Path(kubeconfig).read_text(encoding="utf-8"))
    user = config["users"][0]["user"]
    runs = folder / "plugin-runs"
    plugin = folder / "bin" / "node-credential"
    plugin.parent.mkdir(parents=True, exist_ok=True)
    plugin.write_text(
        f"#!{sys.executable}\n"
        "import json, pathlib\n"
        f"with open({str(runs)!r}, 'a') as runs:\n"
        "    runs.write('run\\n')\n"
        "status = {\n"
        f"    'clientCertificateData': pathlib.Path({user['client-certificate']!r}).read_text(),\n"
        f"    'clientKeyData': pathlib.Path({user['client-key']!r}).read_text(),\n"
        "}\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential', "
        "'status': status}))\n",
        encoding="utf-8",
    )
    plugin.chmod(0o700)
    spec = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": str(plugin),
        "interactiveMode": "Never",
    }
    config["users"][0]["user"] = {"exec": spec}
    path = folder / "kubeconfig"
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    path.chmod(0o600)
    return str(path), runs
