"""A pull-request comment from a preview: changes by flow, blast radius, policy violations.

PURE (standard library only). Inputs are what the Pulumi CLI writes:
- `pulumi preview --json`: the preview digest ({steps, diagnostics, changeSummary}); the blast
  radius arrives as diagnostics attributed to resources (see blast_radius.py);
- `pulumi preview --event-log <file>` (offered with PULUMI_DEBUG_COMMANDS=true): one engine
  event per line. Policy violations appear only there: the CLI's JSON digest
  (pkg/backend/display/json.go, 3.274.1) skips policy events.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MARKER", "Change", "Violation", "changes", "policy_violations", "render_comment"]

# First line of every comment: CI finds its earlier comment by it and edits it in place.
MARKER = "<!-- mm2-review -->"
_FLOW_TYPE = "mm2:index:ReplicationFlow"
_CLUSTER_TYPE = "mm2:index:KafkaCluster"
_GROUP_TYPE = "mm2:index:ConnectWorkerGroup"
_PAIR_TYPE = "pulumi-python:dynamic/failover:Switchover"
# Steps a reviewer needs; create-replacement and delete-replaced repeat a "replace".
_SHOWN_OPS = ("create", "update", "replace", "delete")
_OP_ORDER = {op: i for i, op in enumerate(("delete", "replace", "update", "create"))}
_VALUE_CHARS = 60


@dataclass(frozen=True)
class Change:
    scope: str  # "flow a->b", "cluster a", "worker group mm2" or "stack"
    op: str
    name: str
    kind: str  # the type's last part: Connector, Process, Topic, ...
    paths: tuple[str, ...]  # changed property paths, with old -> new where both are plain


@dataclass(frozen=True)
class Violation:
    policy: str
    level: str
    resource: str
    message: str
    fix: str


def changes(preview: Mapping[str, Any]) -> list[Change]:
    """The steps that change something, each with the flow, cluster or group it belongs to."""
    states = _states(preview)
    found = []
    for step in preview.get("steps") or ():
        op = str(step.get("op", ""))
        if op not in _SHOWN_OPS:
            continue
        urn = str(step.get("urn", ""))
        if _type(urn) in ("pulumi:pulumi:Stack",) or _type(urn).startswith("pulumi:providers:"):
            continue
        found.append(
            Change(
                scope=scope_of(urn, states),
                op=op,
                name=_name(urn),
                kind=_type(urn).rsplit(":", 1)[-1],
                paths=_paths(step),
            )
        )
    return sorted(found, key=lambda c: (_scope_order(c.scope), _OP_ORDER.get(c.op, 9), c.name))


def scope_of(urn: str, states: Mapping[str, Mapping[str, Any]]) -> str:
    """The flow, cluster or worker group a resource belongs to, from its parent chain."""
    seen: set[str] = set()
    while urn and urn not in seen:
        seen.add(urn)
        state = states.get(urn) or {}
        inputs = state.get("inputs") or {}
        kind = _type(urn)
        if kind == _FLOW_TYPE:
            source, target = inputs.get("source"), inputs.get("target")
            return f"flow {source}->{target}" if source and target else f"flow {_name(urn).removeprefix('flow-')}"
        if kind == _CLUSTER_TYPE:
            return f"cluster {inputs.get('alias') or _name(urn).removeprefix('kafka-')}"
        if kind == _GROUP_TYPE:
            return f"worker group {inputs.get('name') or _name(urn).removeprefix('connect-')}"
        if kind == _PAIR_TYPE:
            return f"cluster pair {(inputs.get('pair') or {}).get('name') or _name(urn).removeprefix('failover-')}"
        urn = str(state.get("parent") or "")
    return "stack"


def policy_violations(event_lines: Iterable[str]) -> list[Violation]:
    """Policy violations from an engine event log (`--event-log`), in order, without repeats."""
    found: list[Violation] = []
    for line in event_lines:
        line = line.strip()
        if not line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a log cut short by a cancelled preview
        policy = event.get("policyEvent") if isinstance(event, Mapping) else None
        if not isinstance(policy, Mapping):
            continue
        # The engine puts the policy's description on the first line, the violation after it.
        description, _, detail = str(policy.get("message", "")).strip().partition("\n")
        message = " ".join((detail or description).split())
        text, _, fix = message.partition("Fix:")
        violation = Violation(
            policy=str(policy.get("policyName", "")),
            level=str(policy.get("enforcementLevel", "")),
            resource=_name(str(policy.get("resourceUrn") or "")) or "stack",
            message=text.strip(),
            fix=fix.strip() or "see the policy's description",
        )
        if violation not in found:
            found.append(violation)
    return found


def render_comment(preview: Mapping[str, Any], violations: Sequence[Violation], *, title: str = "") -> str:
    """The Markdown comment: summary, changes by flow, blast radius, policy violations."""
    states = _states(preview)
    found = changes(preview)
    lines = [MARKER, f"## {title or 'Replication preview'}", "", _summary(preview, violations), ""]
    lines += ["### Changes by flow", ""]
    lines += _changes_section(found) or ["No changes.", ""]
    lines += ["### Blast radius", ""]
    lines += _blast_section(preview, found, states) or ["Nothing running is affected.", ""]
    lines += ["### Policy violations", ""]
    lines += _violations_section(violations) or ["None.", ""]
    return "\n".join(lines).rstrip() + "\n"


# -- sections --------------------------------------------------------------------------------


def _summary(preview: Mapping[str, Any], violations: Sequence[Violation]) -> str:
    counts = preview.get("changeSummary") or {}
    parts = [f"{counts[op]} to {op}" for op in ("create", "update", "replace", "delete") if counts.get(op)]
    mandatory = sum(1 for v in violations if v.level == "mandatory")
    text = ", ".join(parts) or "no changes"
    if violations:
        text += f"; {len(violations)} policy violation(s)"
    if mandatory:
        text += f", **{mandatory} mandatory: `pulumi up` is blocked until fixed**"
    return f"**{text}**"


def _changes_section(found: Sequence[Change]) -> list[str]:
    lines: list[str] = []
    for scope in _scopes(c.scope for c in found):
        lines += [f"#### {scope}", "", "| | resource | type | what changes |", "|---|---|---|---|"]
        for c in (c for c in found if c.scope == scope):
            what = "<br>".join(_cell(p) for p in c.paths) or ("(new)" if c.op == "create" else "")
            lines.append(f"| {_OP_SIGNS.get(c.op, c.op)} {c.op} | `{c.name}` | {c.kind} | {what} |")
        lines.append("")
    return lines


def _blast_section(
    preview: Mapping[str, Any], found: Sequence[Change], states: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    items: list[tuple[str, str, str]] = []  # (scope, severity, text)
    for diag in preview.get("diagnostics") or ():
        urn = diag.get("urn")
        severity = str(diag.get("severity", ""))
        if not urn or severity not in ("info", "warning") or _type(str(urn)).startswith("mm2:index:"):
            continue  # component and stack messages are the program's, not a blast radius
        text = str(diag.get("message", "")).strip().removeprefix(f"{severity}: ").strip()
        items.append((scope_of(str(urn), states), severity, text))
    for c in found:
        if c.kind == "ReplicationFlow" and c.op in ("create", "delete"):
            text = (
                f"new {c.scope}: its source, checkpoint and heartbeat connectors are created and replication starts"
                if c.op == "create"
                else f"{c.scope} is removed: its connectors are deleted and replication stops (remote topics stay)"
            )
            items.append((c.scope, "info" if c.op == "create" else "warning", text))
    lines: list[str] = []
    for scope in _scopes(s for s, _, _ in items):
        lines += [f"#### {scope}", ""]
        ordered = sorted((i for i in items if i[0] == scope), key=lambda i: (i[1] != "warning", i[2]))
        lines += [f"- {'⚠️ ' if sev == 'warning' else ''}{_lines(text)}" for _, sev, text in ordered]
        lines.append("")
    return lines


def _violations_section(violations: Sequence[Violation]) -> list[str]:
    if not violations:
        return []
    lines = ["| policy | level | resource | violation | fix |", "|---|---|---|---|---|"]
    for v in violations:
        lines.append(f"| `{v.policy}` | {v.level} | `{v.resource}` | {_inline(v.message)} | {_inline(v.fix)} |")
    return [*lines, ""]


# -- helpers ---------------------------------------------------------------------------------

_OP_SIGNS = {"create": "+", "update": "~", "replace": "+-", "delete": "-"}


def _states(preview: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    states: dict[str, Mapping[str, Any]] = {}
    for step in preview.get("steps") or ():
        state = step.get("newState") or step.get("oldState")
        if isinstance(state, Mapping):
            states[str(step.get("urn", ""))] = state
    return states


def _paths(step: Mapping[str, Any]) -> tuple[str, ...]:
    detailed = step.get("detailedDiff") or {}
    old = (step.get("oldState") or {}).get("inputs") or {}
    new = (step.get("newState") or {}).get("inputs") or {}
    if not detailed and step.get("op") == "update" and not step.get("diffReasons"):
        # A component's update: the engine reports no paths, its inputs say what changed.
        detailed = {k: {"kind": "update"} for k in sorted(old.keys() | new.keys()) if old.get(k) != new.get(k)}
    if not detailed:
        return tuple(str(r) for r in step.get("diffReasons") or ())
    shown = []
    for path, diff in sorted(detailed.items()):
        kind = str((diff or {}).get("kind", "update"))
        before, after = _lookup(old, path), _lookup(new, path)
        if kind.startswith("add") and after is not None:
            shown.append(f"{path} = {_value(after)}")
        elif kind.startswith("delete"):
            shown.append(f"{path} removed")
        elif before is not None and after is not None:
            shown.append(f"{path}: {_value(before)} → {_value(after)}")
        else:
            shown.append(path)
    return tuple(shown)


def _lookup(inputs: Mapping[str, Any], path: str) -> Any:
    """The value at a property path like config["tasks.max"] (one map level is all we emit)."""
    top, _, rest = path.partition("[")
    value = inputs.get(top)
    if rest:
        key = rest.rstrip("]").strip('"')
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if isinstance(value, (str, int, float, bool)) else None


def _value(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else f'"{value}"'
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 2] + '…"'


def _scopes(scopes: Iterable[str]) -> list[str]:
    return sorted(set(scopes), key=_scope_order)


def _scope_order(scope: str) -> tuple[int, str]:
    rank = {"flow": 0, "worker": 1, "cluster": 2}.get(scope.split(" ", 1)[0], 3)
    if scope.startswith("cluster pair "):
        rank = -1  # a switchover changes more than anything else in the preview: first
    return (rank, scope)


def _cell(text: str) -> str:
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`"


def _inline(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _lines(text: str) -> str:
    """A diagnostic of several lines (a switchover's plan) as one list item that keeps its lines."""
    return "<br>".join(_inline(line) for line in text.splitlines() if line.strip())


def _type(urn: str) -> str:
    parts = urn.split("::")
    return parts[2].rsplit("$", 1)[-1] if len(parts) >= 4 else ""


def _name(urn: str) -> str:
    parts = urn.split("::")
    return parts[3] if len(parts) >= 4 else ""
