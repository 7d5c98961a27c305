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
- `a->b.producer.override.*|source.consumer.*` (the source connector's client tuning)
                                      -> `flows.a->b.settings`, or nothing where the value is
                                         the stack's tuned default (connectors.TUNED_SOURCE_CLIENT)
- `a->b.exactly.once.support|transaction.boundary|source.consumer.isolation.level`
                                      -> `exactlyOnce: true` (with the values the stack deploys)
- global `topics`, `groups`, ..., `<MM2 setting>` -> `defaults`
- removed Kafka 3 names (`*.blacklist`, `*.whitelist`) are translated to their Kafka 4
  replacement, with a note naming it.
- `#@ a->b.reverseHeartbeats`, `#@ a->b.connectorSettings.<role>.<key>` -> the flow's fields of
  the same name. Dedicated MM2 gives `a->b.*` to all three connectors and runs no lone reverse
  heartbeat connector, so the export writes these as `#@` comment lines: MM2 skips them, and the
  import reads them back (a round trip keeps what the stack deploys).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from components.topology import settings as known
from components.topology.config_provider import FILE_PROVIDER_PROPERTIES, file_reference
from components.topology.connectors import TUNED_SOURCE_CLIENT, bootstrap_servers, flow_tasks_max, security_properties
from components.topology.java_properties import parse_properties, render_properties
from components.topology.model import (
    DEFAULT_POLICY_CLASS,
    DEFAULT_SECRETS_FILE,
    IDENTITY_POLICY_CLASS,
    Flow,
    Problem,
    Topology,
    TopologyError,
)
from components.topology.parse import parse_topology

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
# What the stack adds to an exactly-once flow's source connector (connectors.flow_connectors;
# pinned against it by tests/unit/topology/test_mm2_properties.py). Dedicated MM2 would otherwise
# run with Connect's defaults (`requested`, and a consumer that also reads aborted records).
EXACTLY_ONCE_SOURCE: dict[str, str] = {
    "exactly.once.support": "required",
    "transaction.boundary": "poll",
    "source.consumer.isolation.level": "read_committed",
}
_FLOW_KEY = re.compile(r"^(?P<source>[^.\s]+?)->(?P<target>[^.\s]+?)\.(?P<rest>.+)$")
# A comment line MM2 skips that carries a stack-only flow key (see the module docstring).
STACK_ONLY_PREFIX = "#@ "
_STACK_ONLY_LINE = f"\n{STACK_ONLY_PREFIX}"
_STACK_ONLY_KEY = re.compile(r"^(?:reverseHeartbeats|connectorSettings\.(?P<role>[^.]+)\.(?P<key>.+))$")


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
        self.exactly_once_keys: dict[str, dict[str, tuple[str, str]]] = {}  # flow -> name -> (key, value)
        self.tuned_defaults: dict[str, int] = {}  # flow -> tuning lines equal to the stack's default

    def problem(self, key: str, message: str, fix: str) -> None:
        self.problems.append(Problem(key=f"mm2.properties:{key}", message=message, fix=fix))

    def secret(self, value: str, suggested: str, origin: str) -> dict[str, str]:
        reference = file_reference(value)
        if reference is not None:
            self.secrets_file = self.secrets_file or reference[0]
            return {"secret": reference[1]}
        self.commands.append(_secret_command(suggested, origin))
        return {"secret": suggested}

    def run(self, text: str) -> ImportResult:
        pairs = parse_properties(text)
        props = dict(pairs)  # later duplicates win, as in java.util.Properties
        stack_only = [ln.lstrip(" \t\f")[len(STACK_ONLY_PREFIX) :] for ln in text.splitlines() if _is_stack_only(ln)]
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
        for key, value in parse_properties("\n".join(stack_only)):
            self.stack_only_key(key, value)
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
        name = f"{source}->{target}"
        flow = self.flows.setdefault(name, {"enabled": False})
        if rest in EXACTLY_ONCE_SOURCE:
            self.exactly_once_keys.setdefault(name, {})[rest] = (key, value.strip())
            return
        if rest in known.SOURCE_CLIENT_TUNING and value.strip() == TUNED_SOURCE_CLIENT.get(rest):
            # What the stack deploys anyway: keeping it as a setting would only hide the default.
            self.tuned_defaults[name] = self.tuned_defaults.get(name, 0) + 1
            return
        if rest.startswith(known.CLIENT_PREFIXES) and rest not in known.SOURCE_CLIENT_TUNING:
            self.problem(
                key,
                "per-flow client overrides have no stack config equivalent.",
                f"Move it to the cluster: {target if rest.startswith('producer.') else source}.{rest}.",
            )
            return
        self.apply_setting(flow, key, rest, value, "flow")

    def stack_only_key(self, key: str, value: str) -> None:
        """A `#@ a->b.<field>` line: a flow field dedicated MM2 has no key for."""
        flow = _FLOW_KEY.match(key)
        field = _STACK_ONLY_KEY.match(flow["rest"]) if flow else None
        if flow is None or field is None:
            fix = "Write a->b.reverseHeartbeats or a->b.connectorSettings.<role>.<key>, or remove the line."
            self.problem(key, "not a stack-only flow key.", fix)
            return
        target = self.flows.setdefault(f"{flow['source']}->{flow['target']}", {"enabled": False})
        if field["role"] is None:
            on = value.strip().lower() == "true"
            protocol = str(self.clusters.get(flow["source"], {}).get("security", {}).get("protocol", ""))
            if on and protocol.startswith("SASL"):
                self.notes.append(
                    f"{key}: not imported: {flow['source']} is imported as external, where the stack creates no "
                    "ACLs, so the reverse heartbeat connector could not write there. Set it again once "
                    f"{flow['source']} runs on a platform the stack manages (local)."
                )
                return
            target["reverseHeartbeats"] = on
        else:
            target.setdefault("connectorSettings", {}).setdefault(field["role"], {})[field["key"]] = value.strip()

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
        per_flow_exactly_once = any("exactly.once.support" in keys for keys in self.exactly_once_keys.values())
        for name, flow in self.flows.items():
            source, target = name.split("->", 1)
            for alias in (source, target):
                if alias not in self.clusters:
                    self.problem(
                        f"{name}.enabled",
                        f"flow {name} names cluster {alias}, which is not in `clusters`.",
                        f"Add {alias} to the clusters line or remove the flow's lines.",
                    )
            # A worker-level `exactly.once.source.support` makes the running flows into that cluster
            # exactly-once, unless the file says it per flow (as the export does, for each such flow).
            if target in self.exactly_once_targets and flow.get("enabled") and not per_flow_exactly_once:
                flow["exactlyOnce"] = True
            self.flow_exactly_once(name, flow)
            if self.tuned_defaults.get(name):
                self.notes.append(
                    f"{name}: {self.tuned_defaults[name]} source client tuning line(s) equal the stack's tuned "
                    "defaults; not copied (the stack deploys them anyway)."
                )
        # Syncing group offsets is what `disasterRecovery: true` derives (consumers fail over at
        # translated offsets), so the import says it with the switch.
        for scope in [self.defaults, *self.flows.values()]:
            scope_settings = scope.get("settings", {})
            if scope_settings.get("sync.group.offsets.enabled", "").lower() == "true":
                del scope_settings["sync.group.offsets.enabled"]
                scope["disasterRecovery"] = True
                if not scope_settings:
                    del scope["settings"]
        # A bare `replication.policy.class` without separator keeps default separator, as MM2 does.
        for scope in [self.defaults, *self.flows.values()]:
            policy = scope.get("replicationPolicy")
            if policy is not None and "class" not in policy:
                policy["class"] = "default"

    def flow_exactly_once(self, name: str, flow: dict[str, Any]) -> None:
        """`exactly.once.support` = required/requested makes the flow exactly-once; with it, the other
        keys must hold what the stack deploys for such a flow (it writes no other values)."""
        given = self.exactly_once_keys.get(name, {})
        support = given.get("exactly.once.support")
        if support is not None and support[1].lower() in ("required", "requested"):
            flow["exactlyOnce"] = True
        for rest, (key, value) in sorted(given.items()):
            wanted = EXACTLY_ONCE_SOURCE[rest]
            if rest == "exactly.once.support" and value.lower() in ("required", "requested"):
                continue
            if flow.get("exactlyOnce") and value == wanted:
                continue
            self.problem(
                key,
                f"{value!r} has no stack config equivalent: the stack sets {rest}={wanted} on exactly-once flows "
                "and leaves it unset otherwise.",
                f"Set exactlyOnce: true on flow {name} (or remove the line).",
            )

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


# ---- export ------------------------------------------------------------------------------


def export_properties(topology: Topology) -> str:
    """Render a topology as dedicated-mode mm2.properties.

    Every flow is written out in full (merged settings, filters, policy, and the source client
    tuning and exactly-once keys the stack adds to its connectors) so the file does not depend on
    this project's defaults and runs the connectors the stack deploys. Secrets stay placeholders
    for the first worker group's secrets file, resolved by the file config provider the export
    also declares.
    """
    secrets_file = next((g.secrets_file for g in topology.worker_groups.values()), DEFAULT_SECRETS_FILE)
    pairs: list[tuple[str, str]] = [("clusters", ", ".join(topology.clusters))]
    uses_secrets = any(c.security.secret_refs() for c in topology.clusters.values())
    if uses_secrets:
        pairs += list(FILE_PROVIDER_PROPERTIES.items())
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
        pairs += [(f"{prefix}{k}", v) for k, v in _deployed_extras(topology, flow).items()]
    header = "# mm2.properties generated from the stack config by bin/mm2props export\n"
    body = render_properties(pairs)
    return header + body + _stack_only_lines(topology)


def _stack_only_lines(topology: Topology) -> str:
    """The flow fields dedicated MM2 has no key for, as `#@` comment lines (module docstring)."""
    pairs = []
    for flow in topology.flows:
        if flow.reverse_heartbeats:
            pairs.append((f"{flow.name}.reverseHeartbeats", "true"))
        for role, values in flow.role_settings.items():
            pairs += [(f"{flow.name}.connectorSettings.{role.value}.{k}", v) for k, v in values.items()]
    if not pairs:
        return ""
    note = (
        "# Stack-only flow fields: dedicated MirrorMaker 2 gives a->b.* keys to all three connectors and runs\n"
        "# no lone reverse heartbeat connector, so it skips these lines; bin/mm2props import reads them back.\n"
    )
    return note + "".join(STACK_ONLY_PREFIX + line + "\n" for line in render_properties(pairs).splitlines())


def _is_stack_only(line: str) -> bool:
    return line.lstrip(" \t\f").startswith(STACK_ONLY_PREFIX)


def _deployed_extras(topology: Topology, flow: Flow) -> dict[str, str]:
    """What the stack deploys on the flow's source connector that the lines above do not say: the
    tuned client defaults no setting or cluster client override replaced, and the exactly-once keys.

    Dedicated MM2 copies `a->b.*` into all three of the flow's connectors, so there the tuning also
    reaches the checkpoint and heartbeat connectors' producers (harmless: they write little).
    """
    source, target = topology.clusters[flow.source], topology.clusters[flow.target]
    overridden = {f"producer.override.{k[len('producer.') :]}" for k in target.client if k.startswith("producer.")}
    overridden |= {f"source.{k}" for k in source.client if k.startswith("consumer.")}
    extras = {k: v for k, v in TUNED_SOURCE_CLIENT.items() if k not in flow.settings and k not in overridden}
    if flow.exactly_once:
        extras.update(EXACTLY_ONCE_SOURCE)
    return extras


def exported_stack_only_lines(exported: str) -> bool:
    """The export holds `#@` lines (reverseHeartbeats, connectorSettings) dedicated MM2 skips."""
    return _STACK_ONLY_LINE in exported


__all__ = [
    "ImportResult",
    "export_properties",
    "exported_stack_only_lines",
    "import_properties",
]
