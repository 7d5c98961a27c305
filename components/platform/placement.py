"""Where a role's pods run on Kubernetes, how they pull their image and how they rank: the same
settings for brokers (`mm2-platform:kubernetes.kafka` / `clusters.<c>`) and workers (`connect` /
`workerGroups.<g>`). Pure: parsed here, rendered into pod specs by
components/platform/kubernetes/metadata.py."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_TOLERATION_FIELDS = ("key", "operator", "value", "effect", "tolerationSeconds")
_OPERATORS = ("Exists", "Equal")
_EFFECTS = ("", "NoSchedule", "PreferNoSchedule", "NoExecute")

# The settings keys and the fields they set.
PLACEMENT_FIELDS = {
    "imagePullSecrets": "image_pull_secrets",
    "nodeSelector": "node_selector",
    "tolerations": "tolerations",
    "priorityClassName": "priority_class",
    "serviceAccount": "service_account",
}


@dataclass(frozen=True)
class Placement:
    # Secrets of the registry the images come from (names in the stack's namespace).
    image_pull_secrets: tuple[str, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    tolerations: tuple[Mapping[str, Any], ...] = ()
    # A PriorityClass of the cluster's; None: the stack's own for the role (brokers outrank workers).
    priority_class: str | None = None
    # The pods' ServiceAccount; None: the stack's own (brokers, to read their node's zone) or the default.
    service_account: str | None = None


def parse_placement(values: dict[str, Any], where: str, problems: list[str]) -> None:
    """Checks and converts the placement fields of `values` (settings field names) in place,
    dropping a bad one after a problem naming its key."""
    if "image_pull_secrets" in values:
        names = values["image_pull_secrets"]
        if not isinstance(names, list) or not all(isinstance(n, str) and _DNS_SUBDOMAIN.match(n) for n in names):
            problems.append(f"{where}.imagePullSecrets: give a list of Secret names, e.g. [registry-credentials].")
            values.pop("image_pull_secrets")
        else:
            values["image_pull_secrets"] = tuple(names)
    if "node_selector" in values:
        selector = values["node_selector"]
        if not isinstance(selector, Mapping):
            problems.append(f"{where}.nodeSelector: give node labels and values, e.g. {{node-pool: kafka}}.")
            values.pop("node_selector")
        else:
            values["node_selector"] = MappingProxyType({str(k): str(v) for k, v in selector.items()})
    if "tolerations" in values:
        values["tolerations"] = _tolerations(values["tolerations"], f"{where}.tolerations", problems)
    for key, name in (("priority_class", "priorityClassName"), ("service_account", "serviceAccount")):
        if key in values and not (isinstance(values[key], str) and _DNS_SUBDOMAIN.match(values[key])):
            problems.append(f"{where}.{name}: {values[key]!r} is not an object name (lowercase letters, digits, -, .).")
            values.pop(key)


def _tolerations(raw: Any, where: str, problems: list[str]) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(raw, list) or not all(isinstance(t, Mapping) for t in raw):
        problems.append(
            f"{where}: give a list of tolerations, e.g. [{{key: dedicated, value: kafka, effect: NoSchedule}}]."
        )
        return ()
    out = []
    for i, toleration in enumerate(raw):
        unknown = sorted(set(toleration) - set(_TOLERATION_FIELDS))
        operator, effect = toleration.get("operator", "Equal"), toleration.get("effect", "")
        if unknown or operator not in _OPERATORS or effect not in _EFFECTS:
            problems.append(
                f"{where}[{i}]: {dict(toleration)!r} is not a toleration: fields {', '.join(_TOLERATION_FIELDS)}; "
                f"operator {' or '.join(_OPERATORS)}; effect {', '.join(e for e in _EFFECTS if e)} or none."
            )
            continue
        out.append(MappingProxyType(dict(toleration)))
    return tuple(out)
