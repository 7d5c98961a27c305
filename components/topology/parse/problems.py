"""The one problem collector every section parser reports into, and the key paths it names.

Parsing never stops at the first mistake: each section adds what it finds here, and
`raise_if_any` turns the lot into one TopologyError, in the order the problems were found.
"""

from __future__ import annotations

from components.topology.model import Problem, TopologyError

NAMESPACE = "mm2"


def path(*parts: str) -> str:
    """`mm2:clusters.primary.port`; free-form keys containing dots become `settings["a.b"]`."""
    out = f"{NAMESPACE}:{parts[0]}"
    for part in parts[1:]:
        if part.startswith("["):
            out += part
        else:
            out += f".{part}"
    return out


def quoted(key: str) -> str:
    return f'["{key}"]'


class Problems:
    """Every Problem found so far in one stack config, in the order found."""

    def __init__(self) -> None:
        self.found: list[Problem] = []

    def add(self, key: str, message: str, fix: str) -> None:
        self.found.append(Problem(key=key, message=message, fix=fix))

    def raise_if_any(self) -> None:
        if self.found:
            raise TopologyError(self.found)
