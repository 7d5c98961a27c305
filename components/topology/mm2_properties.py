"""mm2.properties (dedicated MirrorMaker 2) <-> the `mm2` stack config namespace.

Strings in, strings out: `import_properties` turns an mm2.properties text into the stack
config mapping (plus notes and `pulumi config set --secret` instructions), `export_properties`
renders a Topology as mm2.properties. Only `bin/mm2props` reads and writes files.

Mapping (dedicated-mode key -> stack config):
- `clusters = a, b`                   -> `clusters.a`, `clusters.b` (platform external)
- `a.bootstrap.servers`               -> `clusters.a.bootstrap` (`brokers` guessed: see notes)
- `a.security.protocol`, `a.sasl.*`, `a.ssl.*` -> `clusters.a.security` (passwords -> SecretRef)
- `a.producer.*|consumer.*|admin.*`   -> `clusters.a.client`
- `a.exactly.once.source.support`     -> `exactlyOnce: true` on flows into a
- `a->b.enabled|topics|topics.exclude|groups|groups.exclude|tasks.max|replication.policy.*`
                                      -> typed fields of `flows.a->b`
- `a->b.<MM2 setting>`                -> `flows.a->b.settings`
- global `topics`, `groups`, ..., `<MM2 setting>` -> `defaults`
- removed Kafka 3 names (`*.blacklist`, `*.whitelist`) are translated to their Kafka 4
  replacement, with a note naming it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from components.topology import settings as known
from components.topology.connectors import bootstrap_servers, flow_tasks_max, security_properties
from components.topology.model import (
    DEFAULT_POLICY_CLASS,
    DEFAULT_SECRETS_FILE,
    IDENTITY_POLICY_CLASS,
    Problem,
    Topology,
    TopologyError,
)
from components.topology.parse import parse_topology
from components.topology.parse.problems import NAMESPACE

# Dedicated-mode keys with no meaning for connectors on a Connect worker group.
WORKER_ONLY_KEYS: frozenset[str] = frozenset(
    {
        "dedicated.mode.enable.internal.rest",
        "listeners",
        "rest.advertised.host.name",
        "rest.advertised.port",
        "rest.advertised.listener",
        "key.converter",
        "value.converter",
        "header.converter",
        "offset.flush.interval.ms",
        "offset.flush.timeout.ms",
        "group.id",
        "plugin.path",
        "plugin.discovery",
    }
)
WORKER_ONLY_PREFIXES: tuple[str, ...] = (
    "config.storage.",
    "offset.storage.",
    "status.storage.",
    "config.providers",
    "rest.",
    "listeners.https.",
)
CLUSTER_SECURITY_KEYS: frozenset[str] = frozenset(
    {
        "security.protocol",
        "sasl.mechanism",
        "sasl.jaas.config",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
    }
)
_PLACEHOLDER = re.compile(r"^\$\{file:(?P<file>[^:}]+):(?P<key>[^}]+)\}$")
_FLOW_KEY = re.compile(r"^(?P<source>[^.\s]+?)->(?P<target>[^.\s]+?)\.(?P<rest>.+)$")


# ---- java.util.Properties ----------------------------------------------------------------


def _logical_lines(text: str) -> Iterable[str]:
    """Physical lines joined where a line ends in an odd number of backslashes."""
    pending: str | None = None
    # Only \n, \r and \r\n end lines in java.util.Properties (not str.splitlines' extras).
    for raw in re.split(r"\r\n|\r|\n", text):
        line = raw.lstrip(" \t\f") if pending is not None else raw
        if pending is None:
            stripped = line.lstrip(" \t\f")
            if not stripped or stripped[0] in "#!":
                continue
            line = stripped
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        yield (pending or "") + line
        pending = None
    if pending is not None:
        yield pending


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_properties(text: str) -> list[tuple[str, str]]:
    """Key/value pairs in file order, with java.util.Properties syntax: `#`/`!` comments,
    backslash continuations, `key=value`, `key: value` and `key value` separators, escapes."""
    pairs: list[tuple[str, str]] = []
    for line in _logical_lines(text):
        i = 0
        key_chars: list[str] = []
        while i < len(line):
            ch = line[i]
            if ch == "\\" and i + 1 < len(line):
                key_chars.append(line[i : i + 2])
                i += 2
                continue
            if ch in "=: \t\f":
                break
            key_chars.append(ch)
            i += 1
        # skip whitespace, then at most one '=' or ':', then whitespace
        while i < len(line) and line[i] in " \t\f":
            i += 1
        if i < len(line) and line[i] in "=:":
            i += 1
            while i < len(line) and line[i] in " \t\f":
                i += 1
        key = _unescape("".join(key_chars))
        # Trailing whitespace is kept, as Java does; readers strip where MM2's ConfigDef would.
        value = _unescape(line[i:])
        pairs.append((key, value))
    return pairs


def _escape(text: str, is_key: bool) -> str:
    out: list[str] = []
    for i, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[ch])
        elif ch in "=:#!" and is_key:
            out.append("\\" + ch)
        elif ch == " " and (is_key or i == 0):
            out.append("\\ ")
        else:
            out.append(ch)
    return "".join(out)


def render_properties(pairs: Iterable[tuple[str, str]]) -> str:
    return "".join(f"{_escape(k, True)} = {_escape(v, False)}\n" for k, v in pairs)


# ---- import ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportResult:
    config: dict[str, Any]  # the `mm2` namespace: defaults, clusters, workerGroups, flows
    notes: tuple[str, ...]
    secret_commands: tuple[str, ...]  # `pulumi config set --secret ...` lines to run


def _split_list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def _secret_command(key: str, origin: str) -> str:
    return f"pulumi config set --secret --path 'mm2:secrets[\"{key}\"]' '<value of {origin}>'"


class _Importer:
    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.notes: list[str] = []
        self.commands: list[str] = []
        self.secrets_file: str | None = None
        self.defaults: dict[str, Any] = {}
        self.clusters: dict[str, dict[str, Any]] = {}
        self.flows: dict[str, dict[str, Any]] = {}
        self.exactly_once_targets: set[str] = set()
        self.global_client: dict[str, str] = {}
        self.max_rf = 1

    def problem(self, key: str, message: str, fix: str) -> None:
        self.problems.append(Problem(key=f"mm2.properties:{key}", message=message, fix=fix))

    def secret(self, value: str, suggested: str, origin: str) -> dict[str, str]:
        match = _PLACEHOLDER.match(value.strip())
        if match:
            self.secrets_file = self.secrets_file or match["file"]
            return {"secret": match["key"]}
        self.commands.append(_secret_command(suggested, origin))
        return {"secret": suggested}

    def run(self, text: str) -> ImportResult:
        pairs = parse_properties(text)
        props = dict(pairs)  # later duplicates win, as in java.util.Properties
        aliases = _split_list(props.get("clusters", ""))
        if not aliases:
            self.problem(
                "clusters", "no `clusters = a, b` line.", "List the cluster aliases, e.g. clusters = primary, backup."
            )
        for alias in aliases:
            self.clusters[alias] = {"platform": "external"}
        for key, value in props.items():
            if key == "clusters":
                continue
            flow = _FLOW_KEY.match(key)
            if flow:
                self.flow_key(key, flow["source"], flow["target"], flow["rest"], value)
                continue
            owner = next((a for a in sorted(aliases, key=len, reverse=True) if key.startswith(f"{a}.")), None)
            if owner is not None:
                self.cluster_key(key, owner, key[len(owner) + 1 :], value)
            else:
                self.global_key(key, value)
        self.finish(aliases)
        if self.problems:
            raise TopologyError(self.problems)
        config: dict[str, Any] = {}
        if self.defaults:
            config["defaults"] = self.defaults
        config["clusters"] = self.clusters
        config["workerGroups"] = self.worker_groups()
        config["flows"] = dict(sorted(self.flows.items()))
        try:
            parse_topology(config)
        except TopologyError as err:
            raise TopologyError(err.problems) from None
        return ImportResult(config=config, notes=tuple(self.notes), secret_commands=tuple(self.commands))

    def modern(self, key: str, name: str) -> str:
        if name in known.REMOVED_KEYS:
            replacement = known.REMOVED_KEYS[name]
            self.notes.append(f'{key}: "{name}" was removed in Kafka 4; imported as its replacement "{replacement}".')
            return replacement
        return name

    def apply_setting(self, target: dict[str, Any], key: str, name: str, value: str, scope: str) -> None:
        """A typed field or an MM2 setting, for a flow (scope "flow") or the defaults."""
        name = self.modern(key, name)
        lists = {
            "topics": "topics",
            "topics.exclude": "topicsExclude",
            "groups": "groups",
            "groups.exclude": "groupsExclude",
        }
        if name in lists:
            target[lists[name]] = _split_list(value)
        elif name == "replication.policy.class":
            cls = value.strip()
            kind = {DEFAULT_POLICY_CLASS: "default", IDENTITY_POLICY_CLASS: "identity"}.get(cls, cls)
            target.setdefault("replicationPolicy", {})["class"] = kind
        elif name == "replication.policy.separator":
            target.setdefault("replicationPolicy", {})["separator"] = value.strip()
        elif name == "tasks.max":
            target["tasksMax"] = int(value) if value.strip().isdigit() else value
        elif name in known.KNOWN_SETTINGS:
            target.setdefault("settings", {})[name] = value.strip()
            if name in known.REPLICATION_FACTOR_KEYS and value.strip().isdigit():
                self.max_rf = max(self.max_rf, int(value))
        elif scope == "flow" and name == "enabled":
            flag = value.strip().lower()
            if flag in ("true", "false"):
                target["enabled"] = flag == "true"
            else:
                self.problem(
                    key,
                    f"{value!r} is not true or false.",
                    "Write true or false alone; java.util.Properties has no end-of-line comments.",
                )
        elif name in WORKER_ONLY_KEYS or name.startswith(WORKER_ONLY_PREFIXES):
            self.notes.append(
                f"{key}: dedicated-mode worker setting, not needed on a Connect worker group "
                "(set workerGroups.<name>.workerConfig if you must)."
            )
        else:
            hint = known.suggest(name, known.KNOWN_SETTINGS | set(known.SETTINGS_OWNED))
            did = f'Did you mean "{hint}"? ' if hint else ""
            self.problem(key, f'"{name}" is not an MM2 setting.', f"{did}Fix or remove the line.")

    def flow_key(self, key: str, source: str, target: str, rest: str, value: str) -> None:
        flow = self.flows.setdefault(f"{source}->{target}", {"enabled": False})
        if rest.startswith(known.CLIENT_PREFIXES):
            self.problem(
                key,
                "per-flow client overrides have no stack config equivalent.",
                f"Move it to the cluster: {target if rest.startswith('producer.') else source}.{rest}.",
            )
            return
        self.apply_setting(flow, key, rest, value, "flow")

    def cluster_key(self, key: str, alias: str, rest: str, value: str) -> None:
        cluster = self.clusters[alias]
        security = cluster.setdefault("security", {})
        if rest == "bootstrap.servers":
            cluster["bootstrap"] = value.strip()
        elif rest == "security.protocol":
            security["protocol"] = value.strip().upper()
        elif rest == "sasl.mechanism":
            security["saslMechanism"] = value.strip().upper()
        elif rest == "sasl.jaas.config":
            user = re.search(r'username\s*=\s*"([^"]*)"', value)
            password = re.search(r'password\s*=\s*"([^"]*)"', value)
            if user:
                security["username"] = user.group(1)
            if password:
                security["password"] = self.secret(password.group(1), f"{alias}.sasl.password", key)
        elif rest in ("ssl.truststore.location", "ssl.keystore.location"):
            security[
                {"ssl.truststore.location": "truststoreLocation", "ssl.keystore.location": "keystoreLocation"}[rest]
            ] = value.strip()
        elif rest in ("ssl.truststore.password", "ssl.keystore.password", "ssl.key.password"):
            field = {
                "ssl.truststore.password": "truststorePassword",
                "ssl.keystore.password": "keystorePassword",
                "ssl.key.password": "keyPassword",
            }[rest]
            security[field] = self.secret(value, f"{alias}.{rest}", key)
        elif rest.startswith(known.CLIENT_PREFIXES):
            inner = rest.split(".", 1)[1]
            if inner in CLUSTER_SECURITY_KEYS or inner == "bootstrap.servers":
                self.notes.append(
                    f"{key}: client-specific {inner} is not imported; the cluster's security applies to every client."
                )
            else:
                cluster.setdefault("client", {})[rest] = value.strip()
        elif rest == "exactly.once.source.support":
            if value.strip().lower() in ("enabled", "preparing"):
                self.exactly_once_targets.add(alias)
        elif rest in WORKER_ONLY_KEYS or rest.startswith(WORKER_ONLY_PREFIXES):
            self.notes.append(
                f"{key}: dedicated-mode worker setting for {alias}, not needed on a Connect worker group."
            )
        elif rest in known.KNOWN_SETTINGS:
            self.notes.append(
                f"{key}: MM2 ignores MM2 settings prefixed with a cluster alias; not imported "
                f"(use `{alias}->B.{rest}` for a flow)."
            )
        else:
            hint = known.suggest(rest, CLUSTER_SECURITY_KEYS | {"bootstrap.servers"})
            did = f'Did you mean "{alias}.{hint}"? ' if hint else ""
            self.problem(
                key,
                f'"{rest}" is not a cluster setting the stack config can express.',
                f"{did}Use {alias}.producer.*, {alias}.consumer.* or {alias}.admin.* for client overrides.",
            )

    def global_key(self, key: str, value: str) -> None:
        if key.startswith(known.CLIENT_PREFIXES):
            self.global_client[key] = value.strip()
            return
        self.apply_setting(self.defaults, key, key, value, "global")

    def finish(self, aliases: list[str]) -> None:
        for alias in aliases:
            cluster = self.clusters[alias]
            if not cluster.get("security"):
                cluster.pop("security", None)
            if "bootstrap" not in cluster:
                self.problem(
                    f"{alias}.bootstrap.servers",
                    f"cluster {alias} has no bootstrap servers.",
                    f"Add {alias}.bootstrap.servers = host:9092.",
                )
                continue
            hosts = len(_split_list(cluster["bootstrap"]))
            cluster["brokers"] = max(hosts, self.max_rf)
            self.notes.append(
                f"clusters.{alias}.brokers: set to {cluster['brokers']} from the bootstrap list and replication "
                "factors; set it to the real broker count."
            )
            if self.global_client:
                cluster.setdefault("client", {}).update(self.global_client)
        if self.global_client:
            self.notes.append(
                "global producer./consumer./admin. overrides were copied to every cluster's client overrides."
            )
        for name, flow in self.flows.items():
            source, target = name.split("->", 1)
            for alias in (source, target):
                if alias not in self.clusters:
                    self.problem(
                        f"{name}.enabled",
                        f"flow {name} names cluster {alias}, which is not in `clusters`.",
                        f"Add {alias} to the clusters line or remove the flow's lines.",
                    )
            if target in self.exactly_once_targets:
                flow["exactlyOnce"] = True
        # A bare `replication.policy.class` without separator keeps default separator, as MM2 does.
        for scope in [self.defaults, *self.flows.values()]:
            policy = scope.get("replicationPolicy")
            if policy is not None and "class" not in policy:
                policy["class"] = "default"

    def worker_groups(self) -> dict[str, Any]:
        targets = [name.split("->", 1)[1] for name, flow in sorted(self.flows.items()) if flow.get("enabled")]
        home = max(sorted(set(targets)), key=targets.count) if targets else next(iter(sorted(self.clusters)), "")
        group: dict[str, Any] = {"cluster": home, "platform": "kubernetes", "workers": 1}
        if self.secrets_file and self.secrets_file != DEFAULT_SECRETS_FILE:
            group["secretsFile"] = self.secrets_file
        self.notes.append(
            f"workerGroups.mm2: one Connect worker group on {home} (the most common target) runs every flow; "
            "flows into other clusters produce there through producer.override.*. Set platform/url to "
            "where your workers run."
        )
        return {"mm2": group}


def import_properties(text: str) -> ImportResult:
    """Translate an mm2.properties text; raise TopologyError listing every untranslatable line."""
    return _Importer().run(text)


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


# ---- export ------------------------------------------------------------------------------


def export_properties(topology: Topology) -> str:
    """Render a topology as dedicated-mode mm2.properties.

    Every flow is written out in full (merged settings, filters, policy) so the file does not
    depend on this project's defaults. Secrets stay placeholders for the first worker group's
    secrets file, resolved by the file config provider the export also declares.
    """
    secrets_file = next((g.secrets_file for g in topology.worker_groups.values()), DEFAULT_SECRETS_FILE)
    pairs: list[tuple[str, str]] = [("clusters", ", ".join(topology.clusters))]
    uses_secrets = any(c.security.secret_refs() for c in topology.clusters.values())
    if uses_secrets:
        pairs += [
            ("config.providers", "file"),
            ("config.providers.file.class", "org.apache.kafka.common.config.provider.FileConfigProvider"),
        ]
    eos_targets = sorted({f.target for f in topology.enabled_flows() if f.exactly_once})
    for alias, cluster in topology.clusters.items():
        pairs.append((f"{alias}.bootstrap.servers", bootstrap_servers(cluster)))
        for k, v in security_properties(cluster.security, secrets_file).items():
            pairs.append((f"{alias}.{k}", v))
        for k, v in cluster.client.items():
            pairs.append((f"{alias}.{k}", v))
        if alias in eos_targets:
            pairs.append((f"{alias}.exactly.once.source.support", "enabled"))
    if eos_targets:
        pairs.append(("dedicated.mode.enable.internal.rest", "true"))
    for flow in topology.flows:
        prefix = f"{flow.name}."
        pairs += [
            (f"{prefix}enabled", "true" if flow.enabled else "false"),
            (f"{prefix}topics", ", ".join(flow.topics)),
            (f"{prefix}topics.exclude", ", ".join(flow.topics_exclude)),
            (f"{prefix}groups", ", ".join(flow.groups)),
            (f"{prefix}groups.exclude", ", ".join(flow.groups_exclude)),
            (f"{prefix}replication.policy.class", flow.replication_policy.class_name),
            (f"{prefix}replication.policy.separator", flow.replication_policy.separator),
            (f"{prefix}tasks.max", str(flow_tasks_max(topology, flow))),
        ]
        pairs += [(f"{prefix}{k}", v) for k, v in flow.settings.items()]
    header = "# mm2.properties generated from the stack config by bin/mm2props export\n"
    body = render_properties(pairs)
    return header + body


def run_cli(argv: list[str], read_text: Any) -> tuple[int, str, str]:
    """`import <mm2.properties>` or `export <Pulumi.stack.yaml>`; returns (exit code, stdout, stderr).

    `read_text(path) -> str` is injected so this module stays free of I/O.
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
        return 0, export_properties(topology), ""
    except TopologyError as err:
        return 1, "", f"{err}\n"
    except yaml.YAMLError as err:
        return 1, "", f"mm2props: {file_path} is not valid YAML: {err}\n"


__all__ = [
    "ImportResult",
    "export_properties",
    "import_properties",
    "parse_properties",
    "render_properties",
    "run_cli",
    "stack_config_from_yaml",
    "stack_yaml",
]
