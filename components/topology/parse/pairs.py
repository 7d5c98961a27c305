"""`mm2:failover`: cluster pairs, which side of each is active, and what a switchover needs.

    mm2:failover:
      primary<->dr:
        active: primary            # change it to switch over; change it back to fail back
        principals: [app]          # the application principals fenced on the passive side
        groups: ["billing-.*"]     # consumer groups that move (default: every checkpointed group)
        drainTimeout: 2m           # how long a switchover waits for the flow to copy everything
        divergence: keep           # failback: records the old side took after the fence
        unplanned: false           # true: the old side is lost (bin/failover moved the groups)

Everything a switchover needs that the config alone tells is checked here, at preview: both
flows declared and enabled, a replication policy that can go both ways, checkpoints to translate
the groups' offsets, an authorizer to fence with, principals other than the stack's own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from components.topology.model import (
    ADMIN_USER,
    PAIR_SEPARATOR,
    Cluster,
    ConnectorRole,
    ConnectorState,
    Divergence,
    Flow,
    Pair,
    PolicyKind,
    SecurityProtocol,
)
from components.topology.parse.problems import Problems, path
from components.topology.parse.values import as_bool, as_duration, as_list, as_str, pair_entries, unknown_fields

FIELDS = ("active", "principals", "groups", "drainTimeout", "divergence", "unplanned")
DEFAULT_DRAIN_TIMEOUT_S = 120
_SASL = (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


def parse_pairs(
    problems: Problems, raw: Any, clusters: Mapping[str, Cluster], flows: Sequence[Flow], stack_users: set[str]
) -> tuple[Pair, ...]:
    """Every declared pair; a problem for each key, value or missing piece a switchover needs."""
    pairs: list[Pair] = []
    entries = pair_entries(
        problems,
        raw,
        "failover",
        lambda key, where: _sides(problems, key, where, clusters),
        "two switchovers of one pair in one change cannot both run.",
    )
    for where, sides, body in entries:
        pair = _pair(problems, sides, body, where, stack_users)
        if pair is not None:
            _check_flows(problems, pair, {f.name: f for f in flows}, where)
            _check_fencing(problems, pair, clusters, where)
            pairs.append(pair)
    return tuple(pairs)


def _sides(problems: Problems, key: str, where: str, clusters: Mapping[str, Cluster]) -> tuple[str, str] | None:
    parts = key.split(PAIR_SEPARATOR)
    if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
        problems.add(where, f'"{key}" is not a cluster pair.', f'Name two clusters, e.g. "primary{PAIR_SEPARATOR}dr".')
        return None
    unknown = [p for p in parts if p not in clusters]
    if unknown:
        problems.add(
            where,
            f"unknown cluster(s) {', '.join(unknown)}.",
            f"Use aliases declared under mm2:clusters: {', '.join(sorted(clusters))}.",
        )
        return None
    return parts[0], parts[1]


def _pair(
    problems: Problems, sides: tuple[str, str], body: Mapping[str, Any], where: str, stack_users: set[str]
) -> Pair | None:
    unknown_fields(problems, body, FIELDS, where)
    before = len(problems.found)
    active = as_str(problems, body.get("active"), f"{where}.active")
    if active is not None and active not in sides:
        problems.add(f"{where}.active", f"{active!r} is not a side of this pair.", f"Write {sides[0]} or {sides[1]}.")
    principals = _principals(problems, body.get("principals"), f"{where}.principals", stack_users)
    groups = _groups(problems, body.get("groups"), f"{where}.groups")
    drain = DEFAULT_DRAIN_TIMEOUT_S
    if body.get("drainTimeout") is not None:
        drain = as_duration(problems, body.get("drainTimeout"), f"{where}.drainTimeout") or drain
    divergence = None
    if body.get("divergence") is not None:
        text = str(body.get("divergence"))
        if text not in {d.value for d in Divergence}:
            problems.add(
                f"{where}.divergence",
                f"unknown choice {text!r}.",
                "Write keep (consumers and the restarted flow take those records) or discard (they skip them).",
            )
        else:
            divergence = Divergence(text)
    unplanned = body.get("unplanned") is not None and as_bool(problems, body.get("unplanned"), f"{where}.unplanned")
    if len(problems.found) > before or active is None:
        return None
    return Pair(sides[0], sides[1], active, principals, groups, drain, divergence, bool(unplanned))


def _principals(problems: Problems, raw: Any, key: str, stack_users: set[str]) -> tuple[str, ...]:
    names = as_list(problems, raw, key) if raw is not None else None
    if not names:
        problems.add(
            key,
            "no application principal to fence: a switchover refuses the applications' writes on the old active "
            "side before anything moves.",
            'List the principals your producers authenticate as, e.g. principals: ["app"] (User:app).',
        )
        return ()
    found = []
    for name in names:
        principal = name if ":" in name else f"User:{name}"
        user = principal.split(":", 1)[1]
        if user in stack_users or user == ADMIN_USER:
            problems.add(
                key,
                f"{principal} is a principal of the stack itself (MM2, the Connect workers or the admin): fencing "
                "it would stop replication, never the applications.",
                "List only the principals of your applications.",
            )
            continue
        found.append(principal)
    return tuple(dict.fromkeys(found))


def _groups(problems: Problems, raw: Any, key: str) -> tuple[str, ...]:
    patterns = as_list(problems, raw, key) if raw is not None else ()
    for i, pattern in enumerate(patterns or ()):
        try:
            re.compile(pattern)
        except re.error as exc:
            problems.add(f"{key}[{i}]", f"{pattern!r} is not a regular expression ({exc}).", "Fix the pattern.")
    return tuple(patterns or ())


def _check_flows(problems: Problems, pair: Pair, flows: Mapping[str, Flow], where: str) -> None:
    for name in (pair.active_flow, pair.standby_flow):
        flow = flows.get(name)
        if flow is None or not flow.enabled:
            problems.add(
                where,
                f"the flow {name} is {'disabled' if flow else 'not declared'}: a pair replicates both ways, so a "
                "switchover can start the way back.",
                f"Declare mm2:flows.{name} (enabled) with the same topics and replicationPolicy: {{class: default}}.",
            )
            continue
        if flow.replication_policy.kind is PolicyKind.IDENTITY or flow.replication_policy.preserves_names:
            problems.add(
                path("flows", name, "replicationPolicy"),
                "a name-preserving replication policy has no way back: the flow's copies would be copied again, "
                f"in a loop, once the pair {pair.name} switches over.",
                "Use replicationPolicy: {class: default} on both flows of the pair.",
            )
        if flow.settings.get("emit.checkpoints.enabled", "true").lower() == "false" or not flow.groups:
            problems.add(
                path("flows", name),
                "the flow emits no checkpoints for any consumer group: a switchover could not tell where the "
                "groups resume on the other side.",
                'Keep emit.checkpoints.enabled and list the groups to follow, e.g. groups: [".*"].',
            )


def _check_fencing(problems: Problems, pair: Pair, clusters: Mapping[str, Cluster], where: str) -> None:
    for alias in (pair.first, pair.second):
        if clusters[alias].security.protocol not in _SASL:
            problems.add(
                where,
                f"cluster {alias} authenticates no principal ({clusters[alias].security.protocol.value}): the fence "
                "denies the applications' writes by principal, so the brokers need SASL and an authorizer.",
                f"Give mm2:clusters.{alias}.security a SASL protocol (e.g. SASL_PLAINTEXT with SCRAM-SHA-512).",
            )


def with_pair_states(flows: Sequence[Flow], pairs: Sequence[Pair]) -> tuple[Flow, ...]:
    """Each pair's standby flow with every connector stopped (its offsets kept for the way back);
    both flows of a pair whose old side is lost (`unplanned`): neither can reach it."""
    standby = {p.standby_flow for p in pairs} | {p.active_flow for p in pairs if p.unplanned}
    stopped = MappingProxyType({role: ConnectorState.STOPPED for role in ConnectorRole})
    return tuple(replace(f, connector_states=stopped) if f.name in standby else f for f in flows)
