"""The roll of a KRaft cluster's brokers on Kubernetes (type `pulumi-python:dynamic/kubernetes:BrokerRoll`).

The brokers' StatefulSet updates `OnDelete`: a new pod template changes no pod. This resource,
after the StatefulSet, restarts the pods not yet on its new revision one at a time, each only
when the cluster can spare it and the next only once it is back (the rules are the pure
components/platform/kubernetes/roll_plan.py). It reads, as the kubeconfig's user, the pods and
each broker's exporter (through the API server's pod proxy: its state, whether it is the active
controller, how far behind the metadata log it is), and the partitions' replicas, ISR and
`min.insync.replicas` through the Admin API as the stack's admin, at the cluster's `bootstrap` (with
a new admin password, after admin_rotation.py has set it on admin's SCRAM credential, with that).
It deletes a pod with its uid as precondition, so a pod Kubernetes replaced meanwhile is never
deleted twice.

The StatefulSet itself is ready for the provider once applied (`pulumi.com/waitFor` its uid):
this resource waits instead, for every broker ready on a new cluster. Every wait is bounded by
readyTimeout per broker; one ends sooner when a pod has been unplaceable or unable to start for
LASTING_S (scheduling.py), as the start watch beside the StatefulSet does, so `up` stops then.
A roll that may not start, or cannot go on, fails `up` naming the brokers, the partitions and
what it waited for; the next `up` goes on from where it stopped (the resource keeps its old
template until a roll completes). The cluster's `rollOverride: true` rolls anyway, for
emergencies: a preview with it still on after its roll is refused.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

from components.kafka.admin import READ_TIMEOUT_S, admin_client
from components.platform.kubernetes.access import kubeconfig_context
from components.platform.kubernetes.admin_rotation import rotated, switch_admin
from components.platform.kubernetes.api import call, get_json, pod_proxy_path, pods_path
from components.platform.kubernetes.metadata import selector_text
from components.platform.kubernetes.monitoring import METRICS_PORT
from components.platform.kubernetes.names import KafkaNames
from components.platform.kubernetes.roll_plan import (
    BrokerPod,
    BrokerReading,
    PartitionState,
    back_blockers,
    down_brokers,
    preflight,
    reading_of,
    refusal_text,
    roll_order,
    single_replica,
    step_blockers,
)
from components.platform.kubernetes.scheduling import LASTING_S, unplaced, unstarted
from components.rpc_values import Refused, plain
from components.topology.objectives import parse_duration

LOG = logging.getLogger("dynamic_provider.broker_roll")
POLL_S = 2.0
SAY_EVERY_S = 20.0  # how often a long wait says what it still waits for
T = TypeVar("T")


class _Cluster:
    """The cluster's pods, exporters and partitions; the pod deletion."""

    def __init__(self, props: Mapping[str, Any]) -> None:
        self.config, self.base, self.context = kubeconfig_context(os.environ, str(props.get("context") or ""))
        self.namespace, self.name = str(props["namespace"]), str(props["statefulset"])
        self.admin = plain(props["admin"])
        self.min_isr: dict[str, int] = {}  # per topic, read once per roll

    def _get(self, path: str) -> Any:
        return get_json(self.config, self.context, path, self.base)

    def pods(self) -> list[BrokerPod] | None:
        """The brokers' pods, None while the StatefulSet's controller has not seen its new spec."""
        sts = self._get(f"/apis/apps/v1/namespaces/{self.namespace}/statefulsets/{self.name}")
        status = sts.get("status") or {}
        if int(status.get("observedGeneration") or 0) < int(sts["metadata"].get("generation") or 0):
            return None
        revision = status.get("updateRevision")
        found = self._get(pods_path(self.namespace, selector_text(sts["spec"]["selector"]["matchLabels"])))
        return [
            _broker_pod(p, revision) for p in found.get("items") or [] if not p["metadata"].get("deletionTimestamp")
        ]

    def reading(self, pod: str) -> BrokerReading | None:
        path = pod_proxy_path(self.namespace, pod, METRICS_PORT, "/metrics")
        try:
            status, body = call(self.config, self.context, "GET", path, self.base)
        except OSError:
            return None
        return reading_of(body.decode("utf-8", "replace")) if status == 200 else None

    def readings(self, pods: list[BrokerPod]) -> dict[int, BrokerReading]:
        return {p.ordinal: r for p in pods if p.ready and (r := self.reading(p.name)) is not None}

    def partitions(self) -> list[PartitionState]:
        from confluent_kafka.admin import ConfigResource, ResourceType

        admin = admin_client(self.admin)
        md = admin.list_topics(timeout=READ_TIMEOUT_S)
        unknown = [ConfigResource(ResourceType.TOPIC, name) for name in md.topics if name not in self.min_isr]
        for resource, future in (admin.describe_configs(unknown) if unknown else {}).items():
            entries = future.result(timeout=READ_TIMEOUT_S)
            self.min_isr[resource.name] = int(entries["min.insync.replicas"].value)
        return [
            PartitionState(name, p.id, tuple(p.replicas), tuple(p.isrs), self.min_isr.get(name, 1))
            for name, topic in md.topics.items()
            for p in topic.partitions.values()
        ]

    def delete(self, pod: BrokerPod) -> None:
        # The uid as precondition: a pod Kubernetes already replaced is not deleted again.
        path = f"/api/v1/namespaces/{self.namespace}/pods/{pod.name}"
        options = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": pod.uid}}
        status, body = call(self.config, self.context, "DELETE", path, self.base, options)
        if status not in (200, 202, 404, 409):
            raise OSError(f"DELETE pod {pod.name}: HTTP {status} {body[:200]!r}")


def _broker_pod(pod: Mapping[str, Any], revision: str | None) -> BrokerPod:
    meta, status = pod["metadata"], pod.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    waiting = [
        s["state"]["waiting"].get("reason", "")
        for s in status.get("containerStatuses") or []
        if (s.get("state") or {}).get("waiting")
    ]
    return BrokerPod(
        ordinal=int(meta["name"].rsplit("-", 1)[1]),
        name=meta["name"],
        uid=meta["uid"],
        ready=ready,
        current=bool(revision) and meta.get("labels", {}).get("controller-revision-hash") == revision,
        node=(pod.get("spec") or {}).get("nodeName", ""),
        why=", ".join(w for w in waiting if w) or ("" if ready else str(status.get("phase", ""))),
        stuck="; ".join(f"{s.why}: {s.message}" for s in (*unplaced([pod]), *unstarted([pod]))),
    )


class _Roll:
    """One roll: its cluster, its bound per wait, and what it has restarted so far."""

    def __init__(self, props: Mapping[str, Any], cluster: Any, clock: Callable[[], float], pause: Any) -> None:
        self.alias, self.key = str(props["cluster"]), str(props["override_key"])
        self.replicas, self.override = int(props["replicas"]), bool(props.get("override"))
        self.bound = float(parse_duration(str(props["bound"])) or 300)
        self.cluster, self.clock, self.pause = cluster, clock, pause
        self.restarted: list[int] = []

    def wait(self, check: Callable[[], list[str]], what: str) -> float:
        """Poll `check` (what is still awaited) until it is empty; its time. Refused at the bound."""
        start = self.clock()
        said = start
        while True:
            try:
                problems = check()
            except Refused:
                raise
            except Exception as exc:  # the API server or a broker between answers: asked again
                problems = [f"the cluster's state could not be read ({type(exc).__name__}: {exc})"]
            now = self.clock()
            if not problems:
                return now - start
            if now - start >= self.bound:
                waited = f"{what}: waited {self.bound:.0f}s (readyTimeout) for: " + "; ".join(problems)
                raise Refused(refusal_text(self.alias, self.key, [waited], self.restarted))
            if now - said >= SAY_EVERY_S:
                said = now
                LOG.info(f"{self.alias}: {what}: waiting for " + "; ".join(problems))
            self.pause(POLL_S)

    def refuse_lasting(self, pods: list[BrokerPod], since: dict[tuple[str, str], float]) -> None:
        """Refused once a pod has had the same problem (unplaced, or not starting) for LASTING_S:
        the scheduler or kubelet will not change its mind within readyTimeout. `since`: first sightings."""
        for pod in pods:
            if pod.stuck and self.clock() - since.setdefault((pod.uid, pod.stuck), self.clock()) >= LASTING_S:
                raise Refused(refusal_text(self.alias, self.key, [f"pod {pod.name} {pod.stuck}"], self.restarted))

    def pods(self) -> list[BrokerPod]:
        pods: list[BrokerPod] | None = self.cluster.pods()
        if pods is None:
            raise ValueError("the StatefulSet's controller has not yet seen its new template")
        return pods

    def state(self) -> tuple[list[BrokerPod], list[PartitionState]]:
        return self.pods(), self.cluster.partitions()

    def first(self, read: Callable[[], T], what: str) -> T:
        """What `read` returns once it answers (bounded as every wait)."""
        got: list[T] = []

        def answered() -> list[str]:
            got.append(read())
            return []

        self.wait(answered, what)
        return got[-1]


def roll(props: Mapping[str, Any], cluster: Any = None, clock: Any = time.monotonic, pause: Any = time.sleep) -> str:
    """Restart the brokers not on the StatefulSet's new revision, one at a time (module
    docstring); a summary of what it did."""
    run = _Roll(props, cluster or _Cluster(props), clock, pause)
    stuck: dict[tuple[str, str], float] = {}

    def ready() -> list[str]:
        pods = run.pods()
        run.refuse_lasting(pods, stuck)
        return down_brokers(pods, run.replicas)

    pods = run.first(run.pods, "reading the cluster's pods")
    order = roll_order(pods, run.cluster.readings(pods))
    if not order:
        # A new cluster, or one already on this template: its brokers ready is what `up` waits for,
        # unless a pod cannot be placed or started (said then, not at readyTimeout).
        run.wait(ready, "the brokers to be ready")
        return "nothing to restart"
    pods, partitions = run.first(run.state, "reading the cluster")
    problems = preflight(pods, run.replicas, partitions)
    if problems and not run.override:
        raise Refused(refusal_text(run.alias, run.key, problems, []))
    if problems:
        LOG.warning(f"{run.alias}: {run.key} is on: rolling although " + "; ".join(problems))
    LOG.info(f"{run.alias}: restarting broker(s) {', '.join(map(str, order))} one at a time, in that order")
    timings = [_restart(run, ordinal) for ordinal in order]
    return "; ".join(timings)


def _restart(run: _Roll, ordinal: int) -> str:
    """One broker's turn: wait until it may go, delete its pod, wait until it is back."""
    latest: dict[str, Any] = {}

    def may_go() -> list[str]:
        pods, partitions = run.state()
        latest.update(pods={p.ordinal: p for p in pods}, partitions=partitions)
        if run.override:
            return []
        return step_blockers(ordinal, pods, run.replicas, partitions, run.cluster.readings(pods))

    waited = run.wait(may_go, f"broker {ordinal} may restart")
    # With the override a broker may have no pod at all: the StatefulSet makes its new one.
    pod: BrokerPod = latest["pods"].get(ordinal) or BrokerPod(
        ordinal, KafkaNames(run.alias).pod(ordinal), "", False, False
    )
    offline = single_replica(ordinal, latest["partitions"])
    if offline:
        LOG.warning(
            f"{run.alias}: {len(offline)} partition(s) have broker {ordinal} as their only replica and are "
            "offline while it restarts"
        )
    LOG.info(f"{run.alias}: restarting broker {ordinal} (pod {pod.name} on node {pod.node or '?'})")
    started = run.clock()
    if pod.uid:
        run.cluster.delete(pod)
    run.restarted.append(ordinal)
    ready_at: list[float] = []
    stuck: dict[tuple[str, str], float] = {}

    def back() -> list[str]:
        pods, partitions = run.state()
        new = next((p for p in pods if p.ordinal == ordinal), None)
        if new is not None and new.uid != pod.uid and new.ready and not ready_at:
            ready_at.append(run.clock() - started)
        # A new pod the scheduler cannot place or the kubelet cannot start: said once it lasts.
        run.refuse_lasting([p for p in pods if p.ordinal == ordinal and p.uid != pod.uid], stuck)
        reading = run.cluster.reading(new.name) if new is not None and new.ready else None
        return back_blockers(new, pod.uid, reading, partitions, in_sync=not run.override)

    took = run.wait(back, f"broker {ordinal} coming back")
    ready = ready_at[0] if ready_at else took
    synced = "its partitions' sync not awaited (rollOverride)" if run.override else f"in sync after {took:.0f}s"
    LOG.info(f"{run.alias}: broker {ordinal} back: RUNNING after {ready:.0f}s, {synced}")
    return f"broker {ordinal}: waited {waited:.0f}s to go, RUNNING after {ready:.0f}s, {synced}"


# What a change of, and only of, triggers no roll: how the roll connects, and what it did.
_NOT_A_CHANGE = ("admin", "context", "rolled", "mechanism", "admin_rotation")


class BrokerRollProvider(ResourceProvider):  # type: ignore[misc]
    def create(self, props: dict[str, Any]) -> CreateResult:
        # Pods from before this resource existed may run an older template: rolled as well.
        return CreateResult(id_=f"{props['namespace']}/{props['statefulset']}", outs={**props, "rolled": roll(props)})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        if news.get("override") and olds.get("override") and olds.get("template") == news.get("template"):
            raise Refused(
                f"{news['override_key']}: still true, but this up changes nothing of {news['cluster']}'s brokers: "
                "there is no roll to force, and left on it would skip the safety checks of the next roll unasked. "
                "Fix: remove the key from the stack config (or set it to false)."
            )
        if news.get("admin_rotation") and rotated(olds, news):
            raise Refused(
                f"mm2:secrets.{news['cluster']}.admin.password: the admin password of kubernetes cluster "
                f"{news['cluster']} cannot be rotated: {news['admin_rotation']}. Fix: put back the one it has."
            )
        changed = any(olds.get(k) != v for k, v in news.items() if k not in _NOT_A_CHANGE)
        return DiffResult(changes=changed, replaces=[], stables=[], delete_before_replace=False)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        # A new admin password: its SCRAM credential first, which the roll then logs in with.
        login = switch_admin(olds, news) if rotated(olds, news) and not news.get("admin_rotation") else None
        return UpdateResult(outs={**news, "rolled": roll(news if login is None else {**news, "admin": login})})


class BrokerRoll(Resource, module="kubernetes", name="BrokerRoll"):  # type: ignore[misc]
    def __init__(self, name: str, props: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(BrokerRollProvider(), name, dict(props), opts)
