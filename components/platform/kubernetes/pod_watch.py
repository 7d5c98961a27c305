"""The dynamic resource that watches a workload's pods start while `up` creates or changes it
(type `pulumi-python:dynamic/kubernetes:PodsStarted`), so a pod the scheduler cannot place, or
whose image or container keeps failing, fails `up` at once with the scheduler's or kubelet's
reason and the settings to change, instead of the provider's "timed out waiting to be Ready"
after readyTimeout. The reasons are read by the pure components/platform/kubernetes/scheduling.py.

It runs beside the StatefulSet or Deployment (both wait for the same ConfigMap) whenever the pod
template changes, and polls the workload's pods until a pod has had a lasting problem for
LASTING_S (then it fails naming it), or until
- a StatefulSet's pods of this version run their containers (`until` RUNNING): their readiness
  is the broker roll's to wait for; at readyTimeout the roll says what it waited for;
- a Deployment's pods of this version are Ready and its old ones gone (`until` READY, its
  rollout): pulumi-kubernetes does not wait for it (metadata.READY_ONCE_APPLIED), so that `up`
  ends when this watch fails; at readyTimeout it fails saying what the pods were at.
It reads the API as the kubeconfig's user (components/platform/kubernetes/api.py); a user it
cannot speak for (an auth provider, basic auth) leaves a StatefulSet's watch out and fails a
Deployment's, whose readiness nothing else would wait for.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import Any

import pulumi
import yaml
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

from components.platform.kubernetes.access import kubeconfig_context
from components.platform.kubernetes.api import Unsupported, get_json, pods_path
from components.platform.kubernetes.metadata import selector_text
from components.platform.kubernetes.scheduling import (
    LASTING_S,
    Stuck,
    Workload,
    of_template,
    ready,
    report,
    rolled_out,
    started,
    unplaced,
    unready_report,
    unstarted,
)
from components.rpc_values import Refused
from components.topology.objectives import parse_duration

POLL_S = 2.0
SAY_EVERY_S = 20.0  # how often a rollout's wait says how far it is
LOG = logging.getLogger("dynamic_provider.pod_watch")
RUNNING = "running"  # `until` of a StatefulSet's watch: its pods' containers run (the roll waits for Ready)
READY = "ready"  # `until` of a Deployment's watch: its pods Ready, the old ones gone
Sightings = dict[tuple[str, str, str], float]  # (pod, why, subject) -> when first seen


class _Pods:
    """The workload's pods, read through the kubeconfig the kubernetes provider reads."""

    def __init__(self, props: Mapping[str, Any]) -> None:
        self.config, self.base, self.context = kubeconfig_context(os.environ, str(props.get("context") or ""))
        self.path = pods_path(props["namespace"], selector_text(props["selector"]))

    def list(self) -> list[dict[str, Any]]:
        return list(get_json(self.config, self.context, self.path, self.base).get("items") or [])


def watch(props: Mapping[str, Any], pods: Any = None, clock: Any = time.monotonic, pause: Any = time.sleep) -> str:
    """Poll until the pods of this version run (`until` "running") or have rolled out (`until`
    "ready"); raise Refused with the report of a lasting problem, or for "ready" with what the
    pods were at when readyTimeout passed. What it saw, in a word."""
    workload = Workload(props["what"], props["resources_key"], props["count_key"], props.get("image_key", ""))
    try:
        source = pods or _Pods(props)
    except (OSError, yaml.YAMLError) as exc:
        return _unread(props, workload, exc)
    deadline = clock() + (parse_duration(props["bound"]) or 0)  # readyTimeout, checked with the settings
    digest, replicas, rollout = props["template"], int(props["replicas"]), props.get("until") == READY
    first_seen: Sightings = {}
    found: list[dict[str, Any]] = []
    said, unanswered = clock(), ""
    while clock() < deadline:
        try:
            found, unanswered = source.list(), ""
        except Unsupported as exc:
            return _unread(props, workload, exc)
        except (OSError, ValueError) as exc:
            unanswered = str(exc)  # the API server restarting: asked again at the next poll
            pause(POLL_S)
            continue
        current = of_template(found, digest)
        if rollout and rolled_out(found, digest, replicas):
            return "ready"
        if not rollout and len(current) >= replicas and all(started(p) for p in current):
            return "started"
        first_seen = _lasted(workload, unplaced(found) + unstarted(current), first_seen, clock())
        if rollout and clock() - said >= SAY_EVERY_S:
            said = clock()
            LOG.info(f"{workload.what}: {sum(ready(p) for p in current)} of {replicas} pod(s) of this version Ready")
        pause(POLL_S)  # the poll's interval: the condition is the pods' state, read above
    if rollout:
        report = unready_report(workload, found, digest, replicas, f"readyTimeout {props['bound']}")
        raise Refused(f"{report} (Its pods' last read failed: {unanswered}.)" if unanswered else report)
    return "waited"


def _unread(props: Mapping[str, Any], workload: Workload, why: Exception) -> str:
    """ "unread" for a StatefulSet's watch; Refused for a Deployment's, whose readiness nothing else
    waits for."""
    if props.get("until") != READY:
        return "unread"
    said = f"the kubeconfig's {why}" if isinstance(why, Unsupported) else str(why)
    raise Refused(
        f"{workload.what}: their readiness cannot be read ({said}). Fix: a kubeconfig context whose user has "
        "a client certificate, a token or an exec plugin (docs/kubernetes.md)"
    ) from why


def _lasted(workload: Workload, problems: list[Stuck], seen: Sightings, now: float) -> Sightings:
    """The problems' first sightings, kept for those still seen; Refused for one seen LASTING_S."""
    # A problem is the same while its pod, kind and subject are: the kubelet's reason flips
    # between ErrImagePull and ImagePullBackOff, and its message with it.
    keys = {(p.pod, p.why, p.message.split(":")[0]): p for p in problems}
    kept = {key: seen.get(key, now) for key in keys}
    for key, since in kept.items():
        if now - since >= LASTING_S:
            raise Refused(report(workload, keys[key]))
    return kept


class PodsStartedProvider(ResourceProvider):  # type: ignore[misc]
    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=f"{props['namespace']}/{props['name']}", outs={**props, "seen": watch(props)})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = any(olds.get(key) != value for key, value in news.items())
        return DiffResult(changes=changed, replaces=[], stables=[], delete_before_replace=False)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs={**news, "seen": watch(news)})


class PodsStarted(Resource, module="kubernetes", name="PodsStarted"):  # type: ignore[misc]
    def __init__(self, name: str, props: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(PodsStartedProvider(), name, dict(props), opts)
