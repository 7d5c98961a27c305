"""bin/mm2props: mm2.properties <-> stack config, and the stack config YAML both sides read or write.

The translation itself is pure and lives in the topology (components/topology/mm2_properties.py,
standard library only); this module adds the YAML document around it and the command's exit
codes and messages. Other commands read a stack's `mm2` namespace through `stack_config_from_yaml`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from components.topology import TopologyError, parse_topology
from components.topology.mm2_properties import (
    STACK_ONLY_PREFIX,
    export_properties,
    exported_stack_only_lines,
    import_properties,
)
from components.topology.parse.problems import NAMESPACE


def stack_yaml(config: Mapping[str, Any]) -> str:
    """A Pulumi.<stack>.yaml document holding the namespace under `mm2:` keys."""
    order = ("defaults", "clusters", "workerGroups", "flows")
    doc = {"config": {f"{NAMESPACE}:{k}": config[k] for k in order if k in config}}
    return str(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, allow_unicode=True))


def stack_config_from_yaml(text: str) -> dict[str, Any]:
    """The `mm2` namespace (prefix removed) from a Pulumi.<stack>.yaml document."""
    doc = yaml.safe_load(text) or {}
    config = doc.get("config", {}) if isinstance(doc, Mapping) else {}
    prefix = f"{NAMESPACE}:"
    return {k[len(prefix) :]: v for k, v in config.items() if isinstance(k, str) and k.startswith(prefix)}


def run_cli(argv: list[str], read_text: Any) -> tuple[int, str, str]:
    """`import <mm2.properties>` or `export <Pulumi.stack.yaml>`; returns (exit code, stdout, stderr).

    `read_text(path) -> str` is injected: the file reading happens in bin/mm2props.
    """
    usage = "usage: mm2props import <mm2.properties> | mm2props export <Pulumi.<stack>.yaml>\n"
    if len(argv) != 2 or argv[0] not in ("import", "export"):
        return 2, "", usage
    command, file_path = argv
    try:
        text = read_text(file_path)
    except OSError as err:
        return 2, "", f"mm2props: cannot read {file_path}: {err}\n"
    try:
        if command == "import":
            result = import_properties(text)
            err_lines = [f"note: {n}" for n in result.notes]
            if result.secret_commands:
                err_lines.append("Secrets were not copied. Store each one as a Pulumi secret:")
                err_lines += [f"  {c}" for c in result.secret_commands]
            return 0, stack_yaml(result.config), "".join(f"{line}\n" for line in err_lines)
        topology = parse_topology(stack_config_from_yaml(text))
        exported = export_properties(topology)
        note = (
            f"note: the `{STACK_ONLY_PREFIX.strip()}` lines (reverseHeartbeats, connectorSettings) are for "
            "bin/mm2props import; dedicated MirrorMaker 2 does not apply them.\n"
        )
        return 0, exported, note if exported_stack_only_lines(exported) else ""
    except TopologyError as err:
        return 1, "", f"{err}\n"
    except yaml.YAMLError as err:
        return 1, "", f"mm2props: {file_path} is not valid YAML: {err}\n"
