"""How a rule reads its policy config, the stack it runs on, and how it declares its config schema."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pulumi_policy import PolicyConfigSchema
from stack_view import as_bool, as_int

DEFAULT_DEV_STACKS: Final = ("dev",)


def config_strings(config: Mapping[str, Any], key: str, default: Sequence[str]) -> tuple[str, ...]:
    value = config.get(key) if isinstance(config, Mapping) else None
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return tuple(default)


def config_integer(config: Mapping[str, Any], key: str, default: int) -> int:
    value = as_int(config.get(key)) if isinstance(config, Mapping) else None
    return default if value is None else value


def config_flag(config: Mapping[str, Any], key: str, default: bool) -> bool:
    value = as_bool(config.get(key)) if isinstance(config, Mapping) else None
    return default if value is None else value


def current_stack_name() -> str:
    """The stack being previewed. The policy host sets PULUMI_STACK (pulumi_policy builds the
    runtime settings' stack from that same variable, so reading pulumi's settings adds nothing).
    Unset, the name is empty: no stack is dev, every rule applies."""
    return os.environ.get("PULUMI_STACK", "").rsplit("/", 1)[-1]


def is_dev_stack(config: Mapping[str, Any]) -> bool:
    return current_stack_name() in config_strings(config, "devStacks", DEFAULT_DEV_STACKS)


DEV_STACKS_SCHEMA: Final[dict[str, Any]] = {
    "type": "array",
    "items": {"type": "string"},
    "default": list(DEFAULT_DEV_STACKS),
    "description": "Stack names treated as dev, where this rule does not apply.",
}


def config_schema(**properties: dict[str, Any]) -> PolicyConfigSchema:
    return PolicyConfigSchema(properties=dict(properties))


def string_array(default: Sequence[str], description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "default": list(default), "description": description}
