"""Why a workload's pods are not placed or do not start, read from what the scheduler and the
kubelet wrote on them: pure, no I/O (the watch that polls the pods is
components/platform/kubernetes/pod_watch.py).

The scheduler marks a pod it cannot place `PodScheduled=False, reason Unschedulable` with a
message such as "0/1 nodes are available: 1 Insufficient cpu. preemption: ...". Some reasons last
until someone changes the stack or the cluster (too little CPU or memory, anti-affinity with more
pods than nodes, a node selector no node matches, a taint); others pass by themselves (a claim
whose volume is being made, a node not Ready yet). Only a lasting reason, seen on the same pod for
LASTING_S, is reported: a pod of the previous version still terminating holds its CPU for a while.
Likewise a placed pod whose container waits on an image it cannot get, or that keeps failing (in
back-off for LASTING_S: its third failure in a row; the brokers' rack reader on a node without a
zone, rack.py, or a worker out of memory). And at readyTimeout, what a workload's pods not Ready
are at (`unready_report`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from components.platform.kubernetes.metadata import config_hash
from components.platform.settings import KUBERNETES_CONFIG

LASTING_S = 20.0
# On a workload's pod template: the digest of the template itself, so a watch tells the pods of
# this version from those of the one before (a rolling change keeps both for a while).
TEMPLATE_ANNOTATION = "mm2-iac.dev/template"
# Phrases of kube-scheduler's filter messages that no waiting fixes (its plugins' own wording).
LASTING = (
    "Insufficient ",
    "didn't match pod anti-affinity rules",
    "didn't match pod affinity rules",
    "didn't match Pod's node affinity/selector",
    "untolerated taint",
    "Too many pods",
    "didn't have free ports",
    "didn't match pod topology spread constraints",
)
# Why a placed pod's container waits, that no waiting fixes (the kubelet's reasons).
STUCK_WAITING = (
    "ErrImagePull",
    "ImagePullBackOff",
    "ErrImageNeverPull",
    "InvalidImageName",
    "CreateContainerConfigError",
)
UNPLACED = "cannot be scheduled"
UNSTARTED = "cannot start"
# Taints a node carries while it is not Ready: they pass when it is.
PASSING_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


@dataclass(frozen=True)
class Stuck:
    """A pod that cannot be placed (the scheduler's reason) or started (the kubelet's), and why."""

    pod: str
    message: str
    why: str = UNPLACED
    logs: str = ""  # for a container that keeps failing: the command that shows its last run's log


def unplaced(pods: Sequence[Mapping[str, Any]]) -> list[Stuck]:
    """Every pod of `pods` (API Pod objects) that the scheduler marked Unschedulable for a lasting reason."""
    found = []
    for pod in pods:
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if (
                condition.get("type") == "PodScheduled"
                and condition.get("status") == "False"
                and condition.get("reason") == "Unschedulable"
                and lasting(str(condition.get("message") or ""))
            ):
                found.append(Stuck(pod["metadata"]["name"], str(condition["message"])))
    return found


def scheduler_reasons(message: str) -> str:
    """The scheduler's reasons alone: "0/1 nodes are available: 1 Insufficient cpu." without what
    follows (what its other plugins add, then the same again for preemption)."""
    head, dot, _ = message.partition(". ")
    return (head + dot).strip() if dot else message.split("preemption:")[0].strip()


def lasting(message: str) -> bool:
    """Whether the scheduler's message names a reason that no waiting fixes."""
    reasons = scheduler_reasons(message)
    if any(taint in reasons for taint in PASSING_TAINTS) and "Insufficient " not in reasons:
        return False
    return any(phrase in reasons for phrase in LASTING)


def unstarted(pods: Sequence[Mapping[str, Any]]) -> list[Stuck]:
    """Every placed pod of `pods` whose container waits for a reason in STUCK_WAITING, or whose
    init container keeps failing (with the message it ended with)."""
    found = []
    for pod in pods:
        status = pod.get("status") or {}
        for kind, key in (("init container", "initContainerStatuses"), ("container", "containerStatuses")):
            for container in status.get(key) or []:
                waiting = (container.get("state") or {}).get("waiting") or {}
                reason = str(waiting.get("reason") or "")
                if reason in STUCK_WAITING:
                    said = f"{kind} {container['name']}: {reason}: {waiting.get('message') or ''}"
                elif reason == "CrashLoopBackOff":
                    said = f"{kind} {container['name']} fails: {_ended(container)}"
                else:
                    continue
                name = pod["metadata"]["name"]
                logs = _logs_command(pod, container["name"]) if reason == "CrashLoopBackOff" else ""
                found.append(Stuck(name, said.strip(), UNSTARTED, logs))
    return found


def _logs_command(pod: Mapping[str, Any], container: str) -> str:
    namespace = pod["metadata"].get("namespace")
    return f"kubectl logs --previous {f'-n {namespace} ' if namespace else ''}{pod['metadata']['name']} -c {container}"


def _ended(container: Mapping[str, Any]) -> str:
    """How a container's last run ended: its termination message (the rack reader writes one),
    else the kubelet's reason and the exit code ("OOMKilled, exit code 137")."""
    ended = (container.get("lastState") or {}).get("terminated") or {}
    if ended.get("message"):
        return str(ended["message"])
    reason = f"{ended['reason']}, " if ended.get("reason") else ""
    return f"{reason}exit code {ended.get('exitCode', '?')}, restarted {container.get('restartCount', 0)} time(s)"


def started(pod: Mapping[str, Any]) -> bool:
    """Whether every container of `pod` runs (its init containers done)."""
    wanted = len((pod.get("spec") or {}).get("containers") or [])
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return len(statuses) >= wanted and all("running" in (c.get("state") or {}) for c in statuses)


def ready(pod: Mapping[str, Any]) -> bool:
    """Whether `pod` is Ready (its readiness probe passes) and not being deleted."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def rolled_out(pods: Sequence[Mapping[str, Any]], digest: str, replicas: int) -> bool:
    """Whether `replicas` pods of the template of `digest` are Ready and no pod of another version
    is left but those being deleted (what `kubectl rollout status` waits for, read from the pods)."""
    current = of_template(pods, digest)
    left = [p for p in pods if p not in current and not (p.get("metadata") or {}).get("deletionTimestamp")]
    return sum(ready(p) for p in current) >= replicas and not left


def stamped(workload: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The workload (a StatefulSet or Deployment manifest) with its pod template's digest as the
    template's TEMPLATE_ANNOTATION, and the digest."""
    out = copy.deepcopy(dict(workload))
    template = out["spec"]["template"]
    digest = config_hash(template)
    template.setdefault("metadata", {}).setdefault("annotations", {})[TEMPLATE_ANNOTATION] = digest
    return out, digest


def of_template(pods: Sequence[Mapping[str, Any]], digest: str) -> list[Mapping[str, Any]]:
    """The pods made from the template of `digest`."""
    return [p for p in pods if ((p.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_ANNOTATION) == digest]


# What a pod of fixed requests (the watcher, the lag exporter) can be given room by.
OTHER_REQUESTS = f"{KUBERNETES_CONFIG}.kafka.resources or {KUBERNETES_CONFIG}.connect.resources"


@dataclass(frozen=True)
class Workload:
    """What a watch needs to name a workload's problem: its pods, who it is, and the settings."""

    what: str  # "the brokers of us"
    resources_key: str  # the setting of its requests; "" when they are fixed (watcher, lag exporter)
    count_key: str  # the setting of how many pods; "" when there is one and no setting
    image_key: str = ""  # the setting of its image


def report(workload: Workload, problem: Stuck) -> str:
    """One message: the workload, the pod, the scheduler's reason, and the settings to change."""
    if problem.why == UNSTARTED:
        return _report_unstarted(workload, problem)
    reason = scheduler_reasons(problem.message)
    fixes = []
    if "Insufficient cpu" in reason or "Insufficient memory" in reason:
        fixes.append(
            f"lower {workload.resources_key} (requests), or add nodes with room"
            if workload.resources_key
            else f"its requests are fixed and small: make room by lowering {OTHER_REQUESTS}, or add nodes with room"
        )
    if "anti-affinity" in reason:
        fixes.append(f"each pod needs a node of its own: lower {workload.count_key}, or add nodes")
    if "node affinity/selector" in reason or "taint" in reason:
        fixes.append("label or untaint a node for it")
    if not fixes:
        settings = " or ".join(k for k in (workload.count_key, workload.resources_key) if k)
        fixes.append(f"change {settings}, or the cluster's nodes" if settings else "check the cluster's nodes")
    return (
        f"{workload.what}: pod {problem.pod} {UNPLACED}: {reason} "
        f"Fix: {'; '.join(fixes)}. (kubectl describe pod {problem.pod} shows the scheduler's events.)"
    )


def _report_unstarted(workload: Workload, problem: Stuck) -> str:
    said = f"{workload.what}: pod {problem.pod} {UNSTARTED}: {problem.message}"
    if "Fix:" in problem.message:  # the container's own message names it (the rack reader's does)
        return said
    if problem.logs:  # a container that keeps failing: its log says why
        fix = "Fix: read why in its last run's log"
        if "OOMKilled" in problem.message:
            fix = f"Fix: it ran out of memory: raise its memory{_in(workload.resources_key)}, or read why in its log"
        return f"{said.rstrip('.')}. {fix}: {problem.logs}"
    if "image" in problem.message.lower():
        fix = (
            f"Fix: check {workload.image_key} and that the nodes can pull it (on bin/kube's nodes: "
            "bin/bootstrap --images, then bin/kube load)."
        )
    else:
        fix = "Fix: check the Secrets and ConfigMaps the pod mounts."
    return f"{said.rstrip('.')}. {fix} (kubectl describe pod {problem.pod} shows the kubelet's events.)"


def _in(key: str) -> str:
    return f" in {key} (limits)" if key else " (its limits are fixed: lower the others' to make room)"


def unready_report(
    workload: Workload, pods: Sequence[Mapping[str, Any]], digest: str, replicas: int, bound: str
) -> str:
    """One message for a workload whose pods of this version were not all Ready within `bound`
    (readyTimeout): how many were, the first that was not and what it is waiting for."""
    current = of_template(pods, digest)
    waiting = [p for p in current if not ready(p)]
    said = f"{workload.what}: {sum(ready(p) for p in current)} of {replicas} pod(s) of this version Ready after {bound}"
    if waiting:
        name = waiting[0]["metadata"]["name"]
        said += f"; pod {name}: {_not_ready(waiting[0])}"
        fix = (
            f"read why in its log (kubectl logs {name}), or raise {KUBERNETES_CONFIG}.readyTimeout if it starts slowly"
        )
    else:
        fix = f"raise {KUBERNETES_CONFIG}.readyTimeout if the old pods take long to stop"
    return f"{said}. Fix: {fix}."


def _not_ready(pod: Mapping[str, Any]) -> str:
    """What a pod that is not Ready is at: its containers' states and restarts."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    if not statuses:
        return "no container started yet"
    parts = []
    for container in statuses:
        state = next(iter(container.get("state") or {}), "unknown")
        restarts = int(container.get("restartCount") or 0)
        parts.append(
            f"container {container['name']} {state}"
            f"{'' if container.get('ready') else ', not ready'}"
            f"{f', restarted {restarts} time(s)' if restarts else ''}"
        )
    return "; ".join(parts)
