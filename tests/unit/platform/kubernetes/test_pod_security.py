"""Every pod the kubernetes platform renders passes Pod Security "restricted" (Kubernetes 1.34),
so a namespace labelled `pod-security.kubernetes.io/enforce: restricted` admits the whole stack:
brokers, Connect workers, the auto-restart watcher and the lag exporter. The kube lane proves the
admission on a real API server; this checks each field the profile requires, on the pod
templates the real program registers for Pulumi.prod.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.unit.platform.conftest import namespace, stack_config
from tests.unit.platform.test_prod_stack import program_resources

# The volume types "restricted" allows (everything else, hostPath first, is refused).
ALLOWED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}
POD_WORKLOADS = ("kubernetes:apps/v1:StatefulSet", "kubernetes:apps/v1:Deployment")


def restricted_problems(name: str, pod: dict[str, Any]) -> list[str]:
    """What Pod Security "restricted" would refuse in pod spec `pod`, one line per field."""
    problems = [f"{name}: {key} is set" for key in ("hostNetwork", "hostPID", "hostIPC") if pod.get(key)]
    pod_ctx = pod.get("securityContext") or {}
    for volume in pod.get("volumes") or []:
        kinds = set(volume) - {"name"}
        if not kinds <= ALLOWED_VOLUMES:
            problems.append(f"{name}: volume {volume.get('name')} is {sorted(kinds)}")
    for c in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
        ctx, where = c.get("securityContext") or {}, f"{name}/{c.get('name')}"
        if ctx.get("privileged"):
            problems.append(f"{where}: privileged")
        if ctx.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{where}: allowPrivilegeEscalation is not false")
        caps = ctx.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []) or set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            problems.append(f"{where}: capabilities must drop ALL and add at most NET_BIND_SERVICE")
        if ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot")) is not True:
            problems.append(f"{where}: runAsNonRoot is not true")
        if ctx.get("runAsUser", pod_ctx.get("runAsUser")) == 0:
            problems.append(f"{where}: runs as user 0")
        seccomp = (ctx.get("seccompProfile") or pod_ctx.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            problems.append(f"{where}: seccompProfile.type is {seccomp!r}, not RuntimeDefault or Localhost")
        if any(p.get("hostPort") for p in c.get("ports") or []):
            problems.append(f"{where}: a hostPort")
    return problems


def pod_templates(tmp_path: Path) -> dict[str, dict[str, Any]]:
    """name -> pod spec of every StatefulSet and Deployment the prod stack registers (the
    auto-restart watcher and a lag exporter included)."""
    mm2 = namespace(stack_config("prod"), "mm2")
    for flow in mm2["flows"].values():
        flow["autoRestart"] = {"enabled": True}  # the watcher's Deployment too
    resources = program_resources(mm2, tmp_path)
    return {r.name: r.props["spec"]["template"]["spec"] for r in resources if r.resource_type in POD_WORKLOADS}


def test_every_pod_the_platform_renders_passes_the_restricted_profile(tmp_path: Path) -> None:
    pods = pod_templates(tmp_path)
    kinds = {"kafka", "connect", "watcher", "lag"}
    assert {k for k in kinds if any(k in name for name in pods)} == kinds, sorted(pods)
    problems = [p for name, pod in sorted(pods.items()) for p in restricted_problems(name, pod)]
    assert problems == []


def test_the_restricted_check_can_fail() -> None:
    pod = {
        "hostNetwork": True,
        "securityContext": {"runAsNonRoot": True},
        "volumes": [{"name": "data", "hostPath": {"path": "/var/lib/kafka"}}],
        "containers": [{"name": "kafka", "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}],
    }
    assert restricted_problems("bad", pod) == [
        "bad: hostNetwork is set",
        "bad: volume data is ['hostPath']",
        "bad/kafka: allowPrivilegeEscalation is not false",
        "bad/kafka: capabilities must drop ALL and add at most NET_BIND_SERVICE",
        "bad/kafka: seccompProfile.type is None, not RuntimeDefault or Localhost",
    ]
