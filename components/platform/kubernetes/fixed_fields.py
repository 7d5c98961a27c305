"""What Kubernetes forbids changing in place in a cluster's StatefulSet, checked at preview.

A StatefulSet's volume claim template (the brokers' `storageSize` and `storageClass`) cannot be
changed in place. The pulumi-kubernetes provider answers such a change by deleting the
StatefulSet and creating it again: every broker of the cluster stops at once, the new template
still does not resize the claims the brokers have (only brokers added later get it), and with
`deleteClaims` the claims, so the data, go with the old StatefulSet. So a change of those fields
is refused at preview, naming the key, what would happen and the fix, unless the cluster's
`recreateStatefulSet: true` says the operator wants that outage (never with `deleteClaims`).

Nor may a cluster's `brokers` change: every broker is a KRaft voter and the voter set is static
(`controller.quorum.voters`), so a new count changes it under running brokers. 3 -> 5 starts two
voters that may elect a second leader of their own; 5 -> 3 removes voters and the replicas they
hold. That is refused with the procedure, whatever `recreateStatefulSet` says.

Nor may the security of the brokers' own listeners (replication, controller) change: a roll
restarts one broker at a time, and a broker on the new protocol cannot reach the quorum or the
replicas of brokers still on the old one, so it never catches up and the roll stops with one
broker out. Clusters made before the brokers had listeners of their own (inter-broker traffic on
the client listener, a PLAINTEXT controller listener) recorded no layout: that is theirs.

Pure; `components/platform/kubernetes/shape_guard.py` is the dynamic resource whose diff runs
it, so the preview fails before anything changes (the StatefulSet depends on it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.platform.settings import KafkaPodSettings

# The StatefulSet's fixed fields as the settings keys that set them.
FIXED = {"storageSize": "storage size", "storageClass": "storage class"}
# The own-listener layout of a cluster made before the brokers had listeners of their own.
FIRST_LAYOUT = "inter-broker on the client listener, controller on PLAINTEXT"


def listener_layout(protocol: str) -> str:
    """The layout the guard records, its brokers' own listeners on `protocol` (container_broker.internal_protocol)."""
    return f"replication and controller listeners on {protocol}"


def shape_inputs(
    alias: str, namespace: str, statefulset: str, pod: KafkaPodSettings, brokers: int, listeners: str
) -> dict[str, Any]:
    """What the guard records of one cluster's StatefulSet, and the settings that allow a change."""
    return {
        "cluster": alias,
        "namespace": namespace,
        "statefulset": statefulset,
        "brokers": brokers,
        "listeners": listeners,
        "storageSize": pod.storage_size,
        "storageClass": pod.storage_class or "",
        "recreate": pod.recreate_statefulset,
        "deleteClaims": pod.delete_claims,
    }


def fixed_field_problems(olds: Mapping[str, Any], news: Mapping[str, Any]) -> list[str]:
    """One message per fixed field that `news` changes."""
    recreate, delete_claims = bool(news.get("recreate")), bool(news.get("deleteClaims"))
    alias, namespace, name = news["cluster"], news["namespace"], news["statefulset"]
    problems = [*_voter_problems(olds, news), *_listener_problems(olds, news)]
    where = f"mm2-platform:kubernetes.clusters.{alias}"
    for key, label in FIXED.items():
        before, after = olds.get(key, news[key]), news[key]
        if before == after:
            continue
        why = (
            f"{where}.{key}: changing the brokers' {label} from {before or '(default)'!r} to {after or '(default)'!r} "
            f"would replace StatefulSet {namespace}/{name}: Kubernetes forbids changing its volume claim template in "
            "place, so the provider deletes it and creates it again, and every broker of "
            f"{alias} stops at once. The brokers' existing claims keep their {label} either way."
        )
        if delete_claims:
            problems.append(
                f"{why} With deleteClaims: true their claims, so their data, would be deleted with it: refused. "
                f"Fix: put back {before!r}."
            )
        elif not recreate:
            problems.append(
                f"{why} Fix: put back {before!r}. To grow the disks, expand each claim where the StorageClass "
                f"allows it (kubectl -n {namespace} patch pvc data-{name}-<i> -p "
                '\'{"spec":{"resources":{"requests":{"storage":"<size>"}}}}\'). To change the template '
                f"anyway (an outage of {alias}, data kept), set {where}.recreateStatefulSet: true for that up."
            )
    return problems


def _voter_problems(olds: Mapping[str, Any], news: Mapping[str, Any]) -> list[str]:
    """A change of the cluster's broker count, which is its static KRaft voter set."""
    before, after = olds.get("brokers", news.get("brokers")), news.get("brokers")
    if before is None or before == after:
        return []
    alias = news["cluster"]
    return [
        f"mm2:clusters.{alias}.brokers: changing {alias} from {before} to {after} brokers would change its KRaft "
        f"voter set in place (every broker is a voter, controller.quorum.voters is fixed): "
        + (
            f"the {after - before} new broker(s) would start as voters of a quorum the running ones do not know, "
            "and may elect a leader of their own and split the metadata log"
            if after > before
            else f"the {before - after} removed broker(s) take their votes and the replicas they hold with them"
        )
        + f": refused. Fix: put back brokers: {before}. To resize {alias}: add a cluster of {after} brokers "
        f"beside it in this stack, replicate {alias}'s topics to it with a flow, move producers and consumers "
        "over (docs/day2-operations.md, switchover), then remove the old cluster."
    ]


def _listener_problems(olds: Mapping[str, Any], news: Mapping[str, Any]) -> list[str]:
    """A change of the brokers' own listeners' security, which a roll cannot make."""
    before, after = olds.get("listeners", FIRST_LAYOUT), news.get("listeners", FIRST_LAYOUT)
    if before == after:
        return []
    alias = news["cluster"]
    return [
        f"mm2:clusters.{alias}.security: the brokers of {alias} would go from {before} to {after}. A roll "
        "restarts one broker at a time, and a broker on the new settings can neither reach the quorum nor "
        "replicate from the brokers still on the old ones, so it never catches up: refused. Fix: put back "
        f"{alias}'s security settings; a cluster made before its brokers had listeners of their own keeps "
        f"its layout. To move {alias} to the new layout: add a cluster beside it in this stack, replicate "
        f"{alias}'s topics to it with a flow, move producers and consumers over (docs/day2-operations.md, "
        "switchover), then remove the old cluster."
    ]
