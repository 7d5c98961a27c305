"""Stack config (namespace `mm2`) -> Topology, collecting every problem before raising.

Input is what Pulumi structured config yields: nested dicts, lists, strings, ints and bools,
with numbers and booleans possibly arriving as strings ("3", "true"). Every problem names its
key path as `pulumi config` users see it (`mm2:flows.primary->dr.topics[1]`) and says how to
fix it; `parse_topology` raises one TopologyError listing all of them.

Topic and group patterns are Java regexes matched against the whole name. Python's `re` is
close enough to catch typos (unbalanced brackets, dangling quantifiers); the rare constructs
Java accepts and Python rejects, or the reverse, are not worth a JVM at preview time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from components.topology import settings as known
from components.topology.model import (
    DEFAULT_MM2_USER,
    DEFAULT_POLICY_CLASS,
    DEFAULT_SECRETS_FILE,
    IDENTITY_POLICY_CLASS,
    Cluster,
    ConnectorRole,
    ConnectorState,
    Flow,
    Platform,
    PolicyKind,
    Problem,
    ReplicationPolicy,
    SaslMechanism,
    SecretRef,
    Security,
    SecurityProtocol,
    TopicSpec,
    Topology,
    TopologyError,
    WorkerGroup,
    frozen_map,
)

NAMESPACE = "mm2"
# Top-level keys of the namespace. `secrets` holds the Pulumi secrets that SecretRef keys
# name (`pulumi config set --secret --path 'mm2:secrets["primary.mm2.password"]' ...`); the
# platform code writes them into each worker group's secrets file, so the model skips it.
TOP_LEVEL_KEYS = ("defaults", "clusters", "workerGroups", "flows", "secrets", "rotate")

# MM2's own defaults, written out because an emitted empty list would replace them.
MM2_TOPICS_EXCLUDE_DEFAULT: tuple[str, ...] = (r".*[\-\.]internal", r".*\.replica", r"__.*")
MM2_GROUPS_EXCLUDE_DEFAULT: tuple[str, ...] = (r"console-consumer-.*", r"connect-.*", r"__.*")
MM2_SETTING_DEFAULTS: dict[str, str] = {
    "replication.policy.internal.topic.separator.enabled": "true",
    "heartbeats.topic.replication.factor": "3",
    "offset-syncs.topic.location": "source",
}

CLUSTER_FIELDS = (
    "platform",
    "brokers",
    "port",
    "bootstrap",
    "datacenter",
    "security",
    "topics",
    "brokerConfig",
    "client",
    "settings",
)
SECURITY_FIELDS = (
    "protocol",
    "saslMechanism",
    "username",
    "password",
    "truststoreLocation",
    "truststorePassword",
    "keystoreLocation",
    "keystorePassword",
    "keyPassword",
)
TOPIC_FIELDS = ("partitions", "replicationFactor", "config")
GROUP_FIELDS = (
    "cluster",
    "workers",
    "groupId",
    "configTopic",
    "offsetTopic",
    "statusTopic",
    "restPort",
    "url",
    "restAuth",
    "restTls",
    "secretsFile",
    "workerConfig",
    "platform",
)
FLOW_FIELDS = (
    "enabled",
    "workerGroup",
    "topics",
    "topicsExclude",
    "groups",
    "groupsExclude",
    "replicationPolicy",
    "disasterRecovery",
    "settings",
    "tasksMax",
    "exactlyOnce",
    "state",
    "connectorStates",
)
DEFAULTS_FIELDS = (
    "settings",
    "topics",
    "topicsExclude",
    "groups",
    "groupsExclude",
    "replicationPolicy",
    "tasksMax",
    "exactlyOnce",
    "disasterRecovery",
)
POLICY_FIELDS = ("class", "separator", "preservesNames")

# The secret keys of a local TLS cluster's store passwords (components/topology/tls.py).
_LOCAL_TLS_KEYS = {
    "truststorePassword": "tls.truststore.password",
    "keystorePassword": "{alias}.ssl.keystore.password",
    "keyPassword": "{alias}.ssl.keystore.password",
}
# Roles as `connectorStates` keys spell them (raw config keys are plain strings).
ROLE_NAMES: tuple[str, ...] = tuple(role.value for role in ConnectorRole)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_SECRET_KEY = re.compile(r"^[A-Za-z0-9_.-]+$")
_JAVA_CLASS = re.compile(r"^([A-Za-z_$][\w$]*\.)+[A-Za-z_$][\w$]*$")
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


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


@dataclass(frozen=True)
class _Level:
    """One level of settings (project < defaults < cluster < flow) and where it came from."""

    values: Mapping[str, str]
    where: str  # key path of the `settings` map


@dataclass(frozen=True)
class _Defaults:
    """The `mm2:defaults` level, parsed once so its problems are reported once."""

    settings: Mapping[str, str]
    lists: Mapping[str, tuple[str, ...] | None]
    policy: ReplicationPolicy
    tasks_max: int | None  # None: derived per flow by connectors.flow_tasks_max
    exactly_once: bool
    disaster_recovery: bool


class _Parser:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def problem(self, key: str, message: str, fix: str) -> None:
        self.problems.append(Problem(key=key, message=message, fix=fix))

    # ---- scalar coercion -------------------------------------------------------------

    def as_mapping(self, value: Any, key: str) -> Mapping[str, Any] | None:
        if value is None:
            return {}
        if isinstance(value, Mapping):
            return value
        self.problem(
            key,
            f"expected a map, got {type(value).__name__} {value!r}.",
            "Write it as a YAML mapping (key: value lines indented under it).",
        )
        return None

    def as_int(self, value: Any, key: str, minimum: int = 0, maximum: int | None = None) -> int | None:
        number: int | None = None
        if isinstance(value, bool):
            number = None
        elif isinstance(value, int):
            number = value
        elif isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
            number = int(value)
        if number is None:
            self.problem(
                key, f"expected a whole number, got {value!r}.", f"Set it to an integer such as {max(minimum, 1)}."
            )
            return None
        if number < minimum or (maximum is not None and number > maximum):
            bound = f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
            self.problem(key, f"{number} is out of range.", f"Use a value {bound}.")
            return None
        return number

    def as_bool(self, value: Any, key: str) -> bool | None:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        self.problem(key, f"expected true or false, got {value!r}.", "Set it to true or false.")
        return None

    def as_str(self, value: Any, key: str) -> str | None:
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        self.problem(key, f"expected a non-empty string, got {value!r}.", "Set it to a string.")
        return None

    def as_list(self, value: Any, key: str) -> tuple[str, ...] | None:
        """A YAML list, or a comma-separated string as mm2.properties writes it."""
        if isinstance(value, str):
            return tuple(item.strip() for item in value.split(",") if item.strip())
        if isinstance(value, Sequence):
            items: list[str] = []
            for i, item in enumerate(value):
                text = self.as_str(item, f"{key}[{i}]")
                if text is not None:
                    items.append(text)
            return tuple(items)
        self.problem(
            key, f"expected a list of patterns, got {value!r}.", 'Write a YAML list, e.g. ["orders", "payments-.*"].'
        )
        return None

    def as_secret(self, value: Any, key: str, suggested: str) -> SecretRef | None:
        if isinstance(value, Mapping) and set(value) == {"secret"}:
            ref = value["secret"]
            if isinstance(ref, str) and _SECRET_KEY.match(ref):
                return SecretRef(ref)
            self.problem(
                key,
                f"secret key {ref!r} is not usable in a config-provider placeholder.",
                f'Use letters, digits, ".", "_" and "-" only, e.g. {{secret: "{suggested}"}}.',
            )
            return None
        if isinstance(value, str):
            self.problem(
                key,
                "a secret is given in plain text; it would land in connector configs, state and logs.",
                f'Replace it with {{secret: "{suggested}"}} and store the value with '
                f"`pulumi config set --secret --path 'mm2:secrets[\"{suggested}\"]' <value>`.",
            )
            return None
        self.problem(key, f"expected a secret reference, got {value!r}.", f'Write {{secret: "{suggested}"}}.')
        return None

    def platform_field(self, mapping: Mapping[str, Any], where: str) -> tuple[Platform | None, bool]:
        """The optional `platform` field of a cluster or worker group: (value, or None when absent;
        whether it was valid)."""
        if "platform" not in mapping:
            return None, True
        try:
            return Platform(str(mapping["platform"]).strip().lower()), True
        except ValueError:
            self.problem(
                f"{where}.platform",
                f"unknown platform {mapping['platform']!r}.",
                f"Use one of {', '.join(p.value for p in Platform)}.",
            )
            return None, False

    def unknown_fields(self, raw: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
        for field_name in raw:
            if field_name not in allowed:
                hint = known.suggest(str(field_name), allowed)
                did = f'Did you mean "{hint}"? ' if hint else ""
                self.problem(
                    f"{where}.{field_name}",
                    f'unknown field "{field_name}".',
                    f"{did}Known fields: {', '.join(allowed)}.",
                )

    def string_map(self, raw: Any, key: str) -> dict[str, str]:
        mapping = self.as_mapping(raw, key)
        out: dict[str, str] = {}
        for k, v in (mapping or {}).items():
            item_key = f"{key}{quoted(str(k))}"
            if isinstance(v, bool):
                out[str(k)] = "true" if v else "false"
            elif isinstance(v, (int, float, str)):
                out[str(k)] = str(v)
            elif isinstance(v, Sequence):
                out[str(k)] = ",".join(str(item) for item in v)
            else:
                self.problem(
                    item_key,
                    f"expected a string value, got {v!r}.",
                    "Free-form config values are strings; secrets belong in `security` as {secret: ...}.",
                )
        return out

    def check_secret_literals(self, values: Mapping[str, str], key: str) -> None:
        for k, v in values.items():
            if known.looks_secret(k) and not known.is_placeholder(v):
                self.problem(
                    f"{key}{quoted(k)}",
                    "a secret is given in plain text in free-form config.",
                    "Move credentials to `security` ({secret: ...} references), or reference a "
                    "config provider value such as ${file:/etc/mm2/secrets.properties:<key>}.",
                )

    def check_owned(self, values: Mapping[str, str], key: str, owned: dict[str, str], prefixes: dict[str, str]) -> None:
        for k in values:
            reason = known.owned_reason(k, owned, prefixes)
            if reason is not None:
                self.problem(
                    f"{key}{quoted(k)}",
                    f'"{k}" is owned by a typed field and may not be set here.',
                    f"Remove it; set {reason}.",
                )

    # ---- settings ----------------------------------------------------------------------

    def settings(self, raw: Any, key: str) -> dict[str, str]:
        """Validate one level of free-form MM2 settings."""
        values = self.string_map(raw, key)
        accepted: dict[str, str] = {}
        for k, v in values.items():
            item = f"{key}{quoted(k)}"
            if k in known.REMOVED_KEYS:
                modern = known.REMOVED_KEYS[k]
                typed = known.SETTINGS_OWNED.get(modern)
                where = f" (in this stack config: {typed})" if typed else ""
                self.problem(item, f'"{k}" was removed in Kafka 4.', f'Use "{modern}" instead{where}.')
                continue
            # A known MM2 key wins over a prefix rule (consumer.poll.timeout.ms is MM2's own).
            reason = (
                None
                if k in known.KNOWN_SETTINGS
                else known.owned_reason(k, known.SETTINGS_OWNED, known.SETTINGS_OWNED_PREFIXES)
            )
            if reason is not None:
                self.problem(
                    item,
                    f'"{k}" is owned by a typed field and may not be set in settings.',
                    f"Remove it; set {reason}.",
                )
                continue
            if known.looks_secret(k) and not known.is_placeholder(v):
                self.problem(
                    item,
                    "a secret is given in plain text.",
                    "Credentials belong in `clusters.<alias>.security` as {secret: ...} references.",
                )
                continue
            if k not in known.KNOWN_SETTINGS:
                hint = known.suggest(k, known.KNOWN_SETTINGS | set(known.SETTINGS_OWNED))
                did = f'Did you mean "{hint}"? ' if hint else ""
                self.problem(
                    item,
                    f'"{k}" is not an MM2 connector setting.',
                    f"{did}See the MM2 settings table (seed 000) for valid keys.",
                )
                continue
            if not self.setting_value_ok(k, v, item):
                continue
            accepted[k] = v.strip()
        return accepted

    def setting_value_ok(self, k: str, v: str, item: str) -> bool:
        text = v.strip().lower()
        if k in known.BOOLEAN_SETTINGS and text not in ("true", "false"):
            self.problem(item, f'"{k}" must be true or false, got {v!r}.', "Set it to true or false.")
            return False
        if k in known.INTEGER_SETTINGS and not re.fullmatch(r"-?\d+", text):
            self.problem(item, f'"{k}" must be a whole number, got {v!r}.', "Set it to an integer.")
            return False
        if k in known.ENUM_SETTINGS and text not in known.ENUM_SETTINGS[k]:
            self.problem(
                item,
                f'"{k}" must be one of {", ".join(known.ENUM_SETTINGS[k])}, got {v!r}.',
                f"Use {known.ENUM_SETTINGS[k][0]}.",
            )
            return False
        if k in known.REPLICATION_FACTOR_KEYS and int(text) < 1 and int(text) != -1:
            self.problem(item, f'"{k}" must be at least 1 (or -1 for the broker default).', "Use 1, 2 or 3.")
            return False
        return True

    def patterns(self, raw: Any, key: str) -> tuple[str, ...] | None:
        items = self.as_list(raw, key)
        if items is None:
            return None
        for i, pattern in enumerate(items):
            item = f"{key}[{i}]"
            if "," in pattern:
                self.problem(
                    item,
                    f"pattern {pattern!r} contains a comma; MM2 splits these lists on commas.",
                    "Split it into separate list entries, or rewrite {m,n} quantifiers without commas.",
                )
                continue
            try:
                re.compile(pattern)
            except re.error as err:
                self.problem(
                    item,
                    f"invalid regex {pattern!r}: {err}.",
                    r"Fix the Java regex (patterns match the whole topic or group name); escape literal dots as \.",
                )
        return items

    def policy(self, raw: Any, key: str, base: ReplicationPolicy) -> ReplicationPolicy:
        mapping = self.as_mapping(raw, key)
        if not mapping:
            return base
        self.unknown_fields(mapping, POLICY_FIELDS, key)
        policy = base
        if "class" in mapping:
            name = self.as_str(mapping["class"], f"{key}.class")
            if name is not None:
                lowered = name.lower()
                if lowered in ("default", DEFAULT_POLICY_CLASS.lower()):
                    policy = replace(
                        policy, kind=PolicyKind.DEFAULT, class_name=DEFAULT_POLICY_CLASS, preserves_names=False
                    )
                elif lowered in ("identity", IDENTITY_POLICY_CLASS.lower()):
                    policy = replace(
                        policy, kind=PolicyKind.IDENTITY, class_name=IDENTITY_POLICY_CLASS, preserves_names=True
                    )
                elif _JAVA_CLASS.match(name):
                    policy = replace(policy, kind=PolicyKind.CUSTOM, class_name=name, preserves_names=False)
                else:
                    self.problem(
                        f"{key}.class",
                        f"{name!r} is neither default, identity nor a Java class name.",
                        "Use default, identity, or a fully qualified class such as com.example.MyPolicy.",
                    )
        if "separator" in mapping:
            sep = mapping["separator"]
            if isinstance(sep, str) and sep and not re.search(r"[\s,]", sep):
                policy = replace(policy, separator=sep)
            else:
                self.problem(
                    f"{key}.separator",
                    f"separator {sep!r} must be a non-empty string without spaces or commas.",
                    'Use "." (the MM2 default), "_" or "-".',
                )
        if "preservesNames" in mapping:
            preserves = self.as_bool(mapping["preservesNames"], f"{key}.preservesNames")
            if preserves is not None:
                if policy.kind is PolicyKind.CUSTOM:
                    policy = replace(policy, preserves_names=preserves)
                elif preserves != policy.preserves_names:
                    self.problem(
                        f"{key}.preservesNames",
                        f"{policy.kind.value} policy {'keeps' if policy.preserves_names else 'renames'} "
                        "topic names; this cannot be changed.",
                        "Remove preservesNames; it only describes custom classes.",
                    )
        return policy

    # ---- top level ---------------------------------------------------------------------

    def parse(self, config: Mapping[str, Any]) -> Topology:
        for top in config:
            if top not in TOP_LEVEL_KEYS:
                hint = known.suggest(str(top), TOP_LEVEL_KEYS)
                did = f'Did you mean "{hint}"? ' if hint else ""
                self.problem(
                    path(str(top)),
                    f'unknown stack config key "{NAMESPACE}:{top}".',
                    f"{did}Known keys: {', '.join(f'{NAMESPACE}:{k}' for k in TOP_LEVEL_KEYS)}.",
                )
        defaults = self.defaults(config.get("defaults"))

        clusters: dict[str, Cluster] = {}
        raw_clusters = self.as_mapping(config.get("clusters"), path("clusters")) or {}
        if not raw_clusters:
            self.problem(path("clusters"), "no clusters are defined.", "Add at least two clusters under mm2:clusters.")
        for alias, raw in raw_clusters.items():
            cluster = self.cluster(str(alias), raw)
            if cluster is not None:
                clusters[cluster.alias] = cluster

        groups: dict[str, WorkerGroup] = {}
        raw_groups = self.as_mapping(config.get("workerGroups"), path("workerGroups")) or {}
        for name, raw in raw_groups.items():
            group = self.worker_group(str(name), raw, clusters, set(raw_clusters))
            if group is not None:
                groups[group.name] = group

        flows: list[Flow] = []
        seen: dict[str, str] = {}
        raw_flows = self.as_mapping(config.get("flows"), path("flows")) or {}
        for flow_key, raw in raw_flows.items():
            flow = self.flow(str(flow_key), raw, defaults, clusters, set(raw_clusters), groups, set(raw_groups), seen)
            if flow is not None:
                flows.append(flow)

        self.check_ports(clusters, groups)
        self.check_shared_target(flows)
        flows.sort(key=lambda f: (f.source, f.target))
        return Topology(
            clusters=frozen_cluster_map(clusters), worker_groups=frozen_group_map(groups), flows=tuple(flows)
        )

    def defaults(self, raw: Any) -> _Defaults:
        where = path("defaults")
        mapping = self.as_mapping(raw, where) or {}
        self.unknown_fields(mapping, DEFAULTS_FIELDS, where)
        lists: dict[str, tuple[str, ...] | None] = {}
        for field_name in ("topics", "topicsExclude", "groups", "groupsExclude"):
            if field_name in mapping:
                lists[field_name] = self.patterns(mapping[field_name], f"{where}.{field_name}")
        return _Defaults(
            settings=self.settings(mapping.get("settings"), f"{where}.settings"),
            lists=lists,
            policy=self.policy(mapping.get("replicationPolicy"), f"{where}.replicationPolicy", ReplicationPolicy()),
            tasks_max=(
                self.as_int(mapping["tasksMax"], f"{where}.tasksMax", minimum=1) if "tasksMax" in mapping else None
            ),
            exactly_once=bool(self.as_bool(mapping.get("exactlyOnce", False), f"{where}.exactlyOnce")),
            disaster_recovery=bool(self.as_bool(mapping.get("disasterRecovery", False), f"{where}.disasterRecovery")),
        )

    # ---- clusters ----------------------------------------------------------------------

    def cluster(self, alias: str, raw: Any) -> Cluster | None:
        where = path("clusters", alias)
        ok = True
        if not _NAME.match(alias):
            self.problem(
                where,
                f'cluster alias "{alias}" is not usable in MM2 property keys and topic names.',
                'Use letters, digits, "-" and "_" only '
                '(no dots: DefaultReplicationPolicy splits remote topic names on ".").',
            )
            ok = False
        mapping = self.as_mapping(raw, where)
        if mapping is None:
            return None
        self.unknown_fields(mapping, CLUSTER_FIELDS, where)
        given, valid = self.platform_field(mapping, where)
        platform = given or Platform.LOCAL
        ok = ok and valid
        default_brokers = {Platform.LOCAL: 1, Platform.DOCKER: 1, Platform.KUBERNETES: 3}.get(platform)
        brokers: int | None
        if "brokers" in mapping:
            brokers = self.as_int(mapping["brokers"], f"{where}.brokers", minimum=1, maximum=64)
        elif default_brokers is None:
            self.problem(
                f"{where}.brokers",
                "an external cluster needs its broker count.",
                "Set brokers to the number of brokers; it bounds replication factors MM2 may use there.",
            )
            brokers = None
        else:
            brokers = default_brokers
        port: int | None = None
        if "port" in mapping:
            port = self.as_int(mapping["port"], f"{where}.port", minimum=1024, maximum=65535)
            if port is not None and brokers is not None and port + 2 * brokers - 1 > 65535:
                self.problem(
                    f"{where}.port", f"ports {port}..{port + 2 * brokers - 1} run past 65535.", "Pick a lower port."
                )
        elif platform in (Platform.LOCAL, Platform.DOCKER):
            self.problem(
                f"{where}.port",
                f"a {platform.value} cluster needs a port.",
                "Set port (broker i listens on port+2i, its controller on port+2i+1), e.g. port: 19092.",
            )
            ok = False
        bootstrap: str | None = None
        if "bootstrap" in mapping:
            bootstrap = self.as_str(mapping["bootstrap"], f"{where}.bootstrap")
            if platform in (Platform.LOCAL, Platform.DOCKER):
                self.problem(
                    f"{where}.bootstrap",
                    f"a {platform.value} cluster's address follows from its port.",
                    "Remove bootstrap, or use platform: external for a cluster you do not deploy.",
                )
        elif platform is Platform.EXTERNAL:
            self.problem(
                f"{where}.bootstrap",
                "an external cluster needs its bootstrap address.",
                'Set bootstrap, e.g. "kafka-1.example.com:9092,kafka-2.example.com:9092".',
            )
            ok = False
        datacenter = self.as_str(mapping["datacenter"], f"{where}.datacenter") if "datacenter" in mapping else None
        security = self.security(mapping.get("security"), f"{where}.security", alias, platform)
        topics = self.topics(mapping.get("topics"), f"{where}.topics", brokers or 1)
        broker_config = self.string_map(mapping.get("brokerConfig"), f"{where}.brokerConfig")
        self.check_owned(broker_config, f"{where}.brokerConfig", known.BROKER_OWNED, known.BROKER_OWNED_PREFIXES)
        self.check_secret_literals(broker_config, f"{where}.brokerConfig")
        client = self.string_map(mapping.get("client"), f"{where}.client")
        self.check_client(client, f"{where}.client")
        cluster_settings = self.settings(mapping.get("settings"), f"{where}.settings")
        if not ok or brokers is None or security is None:
            return None
        return Cluster(
            alias=alias,
            platform=platform,
            brokers=brokers,
            port=port,
            bootstrap=bootstrap,
            datacenter=datacenter,
            security=security,
            topics=topics,
            broker_config=frozen_map(broker_config),
            client=frozen_map(client),
            settings=frozen_map(cluster_settings),
        )

    def check_client(self, client: Mapping[str, str], where: str) -> None:
        for k in client:
            item = f"{where}{quoted(k)}"
            prefix = next((p for p in known.CLIENT_PREFIXES if k.startswith(p)), None)
            if prefix is None:
                hint = known.suggest(k, [p + k for p in known.CLIENT_PREFIXES])
                did = f' e.g. "{hint}"' if hint else ""
                self.problem(
                    item,
                    f'client override "{k}" does not say which client it is for.',
                    f"Prefix it with producer., consumer. or admin.{did}.",
                )
                continue
            reason = known.owned_reason(k[len(prefix) :], known.CLIENT_OWNED, known.CLIENT_OWNED_PREFIXES)
            if reason is not None:
                self.problem(item, f'"{k}" is owned by a typed field.', f"Remove it; set {reason}.")
            elif known.looks_secret(k) and not known.is_placeholder(client[k]):
                self.problem(
                    item,
                    "a secret is given in plain text in client overrides.",
                    "Credentials belong in `security` as {secret: ...} references.",
                )

    def security(self, raw: Any, where: str, alias: str, platform: Platform) -> Security | None:
        # Secure by default where the stack creates the users: a local cluster without a
        # `security` block runs SASL_PLAINTEXT + SCRAM-SHA-512; PLAINTEXT only when asked for.
        local = platform is Platform.LOCAL
        if raw is None and local:
            raw = {"protocol": SecurityProtocol.SASL_PLAINTEXT.value}
        mapping = self.as_mapping(raw, where)
        if mapping is None:
            return None
        self.unknown_fields(mapping, SECURITY_FIELDS, where)
        protocol = SecurityProtocol.SASL_PLAINTEXT if local else SecurityProtocol.PLAINTEXT
        if "protocol" in mapping:
            try:
                protocol = SecurityProtocol(str(mapping["protocol"]).strip().upper())
            except ValueError:
                self.problem(
                    f"{where}.protocol",
                    f"unknown security protocol {mapping['protocol']!r}.",
                    f"Use one of {', '.join(p.value for p in SecurityProtocol)}.",
                )
                return None
        mechanism: SaslMechanism | None = None
        username: str | None = None
        password: SecretRef | None = None
        if protocol.uses_sasl:
            raw_mech = mapping.get("saslMechanism", SaslMechanism.SCRAM_SHA_512.value if local else None)
            if raw_mech is None:
                self.problem(
                    f"{where}.saslMechanism",
                    f"{protocol.value} needs a SASL mechanism.",
                    "Set saslMechanism to PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.",
                )
            else:
                try:
                    mechanism = SaslMechanism(str(raw_mech).strip().upper())
                except ValueError:
                    self.problem(
                        f"{where}.saslMechanism",
                        f"unknown SASL mechanism {raw_mech!r}.",
                        "Use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.",
                    )
            if "username" in mapping:
                username = self.as_str(mapping["username"], f"{where}.username")
            elif local:
                username = DEFAULT_MM2_USER  # the stack creates it
            else:
                self.problem(
                    f"{where}.username", f"{protocol.value} needs the MM2 user name.", "Set username, e.g. mm2."
                )
            if "password" in mapping:
                password = self.as_secret(mapping["password"], f"{where}.password", f"{alias}.mm2.password")
            elif local:
                password = SecretRef(f"{alias}.mm2.password")  # generated unless mm2:secrets has it
            else:
                self.problem(
                    f"{where}.password",
                    f"{protocol.value} needs the MM2 user's password reference.",
                    f'Set password: {{secret: "{alias}.mm2.password"}}.',
                )
        else:
            for field_name in ("saslMechanism", "username", "password"):
                if field_name in mapping:
                    if field_name == "password":
                        # still catch the plain-text secret even where it is unused
                        self.as_secret(mapping["password"], f"{where}.password", f"{alias}.mm2.password")
                    self.problem(
                        f"{where}.{field_name}",
                        f"{field_name} has no effect with protocol {protocol.value}.",
                        "Use protocol SASL_PLAINTEXT or SASL_SSL, or remove it.",
                    )
        refs: dict[str, SecretRef | None] = {}
        for field_name, suffix in (
            ("truststorePassword", "truststore.password"),
            ("keystorePassword", "keystore.password"),
            ("keyPassword", "key.password"),
        ):
            refs[field_name] = (
                self.as_secret(mapping[field_name], f"{where}.{field_name}", f"{alias}.ssl.{suffix}")
                if field_name in mapping
                else None
            )
        truststore = (
            self.as_str(mapping["truststoreLocation"], f"{where}.truststoreLocation")
            if "truststoreLocation" in mapping
            else None
        )
        keystore = (
            self.as_str(mapping["keystoreLocation"], f"{where}.keystoreLocation")
            if "keystoreLocation" in mapping
            else None
        )
        if not protocol.uses_tls:
            for field_name in (
                "truststoreLocation",
                "truststorePassword",
                "keystoreLocation",
                "keystorePassword",
                "keyPassword",
            ):
                if field_name in mapping:
                    self.problem(
                        f"{where}.{field_name}",
                        f"{field_name} has no effect with protocol {protocol.value}.",
                        "Use protocol SSL or SASL_SSL, or remove it.",
                    )
        if protocol.uses_tls and local:
            # The stack's CA issues the brokers' certificates and the truststore (see
            # components/topology/tls.py); stores brought from elsewhere would not match it.
            for field_name in ("truststoreLocation", "keystoreLocation"):
                if field_name in mapping:
                    self.problem(
                        f"{where}.{field_name}",
                        f"a local {protocol.value} cluster uses the keystore and truststore the stack "
                        "generates from its own CA; a store given here would not match its certificates.",
                        f"Remove {field_name} (for your own certificates, use platform: external).",
                    )
            for field_name in ("truststorePassword", "keystorePassword", "keyPassword"):
                if field_name in mapping and refs[field_name] is not None:
                    self.problem(
                        f"{where}.{field_name}",
                        "the passwords of the stores a local cluster uses are generated by the stack.",
                        f"Remove {field_name}; to choose one yourself, set it with `pulumi config set --secret "
                        f"--path 'mm2:secrets[\"{_LOCAL_TLS_KEYS[field_name].format(alias=alias)}\"]' <password>`.",
                    )
            truststore, keystore = None, None
            refs = {"truststorePassword": None, "keystorePassword": None, "keyPassword": None}
        if protocol.uses_tls and not local and refs["truststorePassword"] is not None and truststore is None:
            self.problem(
                f"{where}.truststorePassword",
                "a truststore password without truststoreLocation has no store to open.",
                "Set truststoreLocation to the truststore the Connect workers read, or remove truststorePassword "
                "(clients then trust the JVM's default CAs).",
            )
        if keystore is not None and refs["keystorePassword"] is None:
            self.problem(
                f"{where}.keystorePassword",
                "a keystore needs its password reference.",
                f'Set keystorePassword: {{secret: "{alias}.ssl.keystore.password"}}.',
            )
        return Security(
            protocol=protocol,
            sasl_mechanism=mechanism,
            username=username,
            password=password,
            truststore_location=truststore,
            truststore_password=refs["truststorePassword"],
            keystore_location=keystore,
            keystore_password=refs["keystorePassword"],
            key_password=refs["keyPassword"],
        )

    def topics(self, raw: Any, where: str, brokers: int) -> tuple[TopicSpec, ...]:
        if raw is None:
            return ()
        specs: list[TopicSpec] = []
        entries: list[tuple[str, Any, str]]
        if isinstance(raw, Mapping):
            entries = [(str(name), value, f"{where}.{name}") for name, value in raw.items()]
        elif isinstance(raw, Sequence) and not isinstance(raw, str):
            entries = [(str(name), None, f"{where}[{i}]") for i, name in enumerate(raw)]
        else:
            self.problem(
                where,
                f"expected a map of topic name to settings, got {raw!r}.",
                "Write e.g. topics: {orders: {partitions: 3}}.",
            )
            return ()
        for name, value, key in entries:
            if not _TOPIC_NAME.match(name) or name in (".", ".."):
                self.problem(
                    key,
                    f"{name!r} is not a legal Kafka topic name.",
                    'Use letters, digits, ".", "_" and "-" (at most 249).',
                )
                continue
            spec = self.as_mapping(value, key) or {}
            self.unknown_fields(spec, TOPIC_FIELDS, key)
            partitions = self.as_int(spec.get("partitions", 1), f"{key}.partitions", minimum=1)
            rf = self.as_int(spec.get("replicationFactor", min(3, brokers)), f"{key}.replicationFactor", minimum=1)
            if rf is not None and rf > brokers:
                self.problem(
                    f"{key}.replicationFactor",
                    f"replication factor {rf} is above the cluster's {brokers} broker(s).",
                    f"Use at most {brokers}, or add brokers.",
                )
                rf = None
            config = self.string_map(spec.get("config"), f"{key}.config")
            if partitions is not None and rf is not None:
                specs.append(
                    TopicSpec(name=name, partitions=partitions, replication_factor=rf, config=frozen_map(config))
                )
        return tuple(sorted(specs, key=lambda s: s.name))

    # ---- worker groups -----------------------------------------------------------------

    def worker_group(
        self,
        name: str,
        raw: Any,
        clusters: Mapping[str, Cluster],
        declared: set[str],
    ) -> WorkerGroup | None:
        where = path("workerGroups", name)
        ok = True
        if not _NAME.match(name):
            self.problem(
                where,
                f'worker group name "{name}" is not usable in topic and group ids.',
                'Use letters, digits, "-" and "_".',
            )
            ok = False
        mapping = self.as_mapping(raw, where)
        if mapping is None:
            return None
        self.unknown_fields(mapping, GROUP_FIELDS, where)
        cluster_alias = self.as_str(mapping.get("cluster"), f"{where}.cluster") if "cluster" in mapping else None
        if cluster_alias is None:
            if "cluster" not in mapping:
                self.problem(
                    f"{where}.cluster",
                    "a worker group needs the cluster that holds its storage topics.",
                    f"Set cluster to one of: {', '.join(sorted(declared)) or '(no clusters defined)'}.",
                )
            return None
        if cluster_alias not in declared:
            hint = known.suggest(cluster_alias, declared)
            did = f'Did you mean "{hint}"? ' if hint else ""
            self.problem(
                f"{where}.cluster",
                f'unknown cluster "{cluster_alias}".',
                f"{did}Use one of: {', '.join(sorted(declared)) or '(no clusters defined)'}.",
            )
            return None
        cluster = clusters.get(cluster_alias)
        workers = self.as_int(mapping.get("workers", 1), f"{where}.workers", minimum=1, maximum=64)
        url = self.as_str(mapping["url"], f"{where}.url") if "url" in mapping else None
        if url is not None and not re.match(r"^https?://", url):
            self.problem(
                f"{where}.url", f"{url!r} is not an http(s) URL.", "Write it as http://host:8083 or https://host:8443."
            )
        platform, valid = self.platform_field(mapping, where)
        ok = ok and valid
        if platform is None:
            platform = Platform.EXTERNAL if url is not None else (cluster.platform if cluster else Platform.EXTERNAL)
        if platform is Platform.EXTERNAL and url is None:
            self.problem(
                f"{where}.url",
                "this worker group is not deployed by the stack (its cluster is external), "
                "so it needs an existing Connect URL.",
                "Set url to the Connect REST endpoint, or set platform to local/kubernetes/docker to deploy workers.",
            )
            ok = False
        rest_port: int | None = None
        if "restPort" in mapping:
            rest_port = self.as_int(mapping["restPort"], f"{where}.restPort", minimum=1024, maximum=65535)
            if rest_port is not None and workers is not None and rest_port + workers - 1 > 65535:
                self.problem(f"{where}.restPort", "the workers' ports run past 65535.", "Pick a lower restPort.")
        elif platform in (Platform.LOCAL, Platform.DOCKER):
            self.problem(
                f"{where}.restPort",
                f"a {platform.value} worker group needs a REST port.",
                "Set restPort (worker i listens on restPort+i), e.g. restPort: 18083.",
            )
            ok = False
        rest_auth = False
        rest_username: str | None = None
        rest_password: SecretRef | None = None
        raw_auth = mapping.get("restAuth", False)
        if isinstance(raw_auth, Mapping):
            self.unknown_fields(raw_auth, ("username", "password"), f"{where}.restAuth")
            rest_auth = True
            rest_username = self.as_str(raw_auth.get("username", "mm2-admin"), f"{where}.restAuth.username")
            rest_password = self.as_secret(
                raw_auth.get("password", {"secret": f"{name}.rest.password"}),
                f"{where}.restAuth.password",
                f"{name}.rest.password",
            )
        else:
            auth_flag = self.as_bool(raw_auth, f"{where}.restAuth")
            rest_auth = bool(auth_flag)
            if rest_auth:
                rest_username, rest_password = "mm2-admin", SecretRef(f"{name}.rest.password")
        rest_tls = bool(self.as_bool(mapping.get("restTls", False), f"{where}.restTls"))
        if rest_tls and url is not None:
            self.problem(
                f"{where}.restTls",
                "restTls gives the workers the stack deploys an HTTPS listener; this group is reached at its url, "
                "whose scheme already says whether it is HTTPS.",
                "Remove restTls, and write the url as https://... if that Connect serves HTTPS.",
            )
        elif rest_tls and platform is not Platform.LOCAL:
            self.problem(
                f"{where}.restTls",
                f"HTTPS for the Connect REST API is generated for local worker groups only, not {platform.value}.",
                "Remove restTls, or run the group on the local platform.",
            )
        secrets_file = DEFAULT_SECRETS_FILE
        if "secretsFile" in mapping:
            given = self.as_str(mapping["secretsFile"], f"{where}.secretsFile")
            if given is not None:
                if not given.startswith("/") or "$" in given or ":" in given:
                    self.problem(
                        f"{where}.secretsFile",
                        f"{given!r} must be an absolute path without variables or colons.",
                        "Kafka's FileConfigProvider reads the path literally; use e.g. /etc/mm2/secrets.properties.",
                    )
                else:
                    secrets_file = given
        worker_config = self.string_map(mapping.get("workerConfig"), f"{where}.workerConfig")
        self.check_owned(worker_config, f"{where}.workerConfig", known.WORKER_OWNED, known.WORKER_OWNED_PREFIXES)
        self.check_secret_literals(worker_config, f"{where}.workerConfig")
        ids = {}
        for field_name, default in (
            ("groupId", f"mm2-{name}"),
            ("configTopic", f"mm2-{name}-configs"),
            ("offsetTopic", f"mm2-{name}-offsets"),
            ("statusTopic", f"mm2-{name}-status"),
        ):
            ids[field_name] = (
                self.as_str(mapping[field_name], f"{where}.{field_name}") if field_name in mapping else default
            )
        topic_names = [ids["configTopic"], ids["offsetTopic"], ids["statusTopic"]]
        if len(set(topic_names)) != 3:
            self.problem(
                f"{where}.configTopic",
                "the config, offset and status topics must be three different topics.",
                "Give configTopic, offsetTopic and statusTopic distinct names.",
            )
            ok = False
        if not ok or workers is None or cluster is None or any(v is None for v in ids.values()):
            return None
        return WorkerGroup(
            name=name,
            cluster=cluster_alias,
            workers=workers,
            group_id=str(ids["groupId"]),
            config_topic=str(ids["configTopic"]),
            offset_topic=str(ids["offsetTopic"]),
            status_topic=str(ids["statusTopic"]),
            rest_port=rest_port,
            url=url,
            rest_auth=rest_auth,
            secrets_file=secrets_file,
            worker_config=frozen_map(worker_config),
            platform=platform,
            rest_username=rest_username,
            rest_password=rest_password,
            rest_tls=rest_tls,
        )

    # ---- flows -------------------------------------------------------------------------

    def flow(
        self,
        flow_key: str,
        raw: Any,
        defaults: _Defaults,
        clusters: Mapping[str, Cluster],
        declared: set[str],
        groups: Mapping[str, WorkerGroup],
        declared_groups: set[str],
        seen: dict[str, str],
    ) -> Flow | None:
        where = path("flows", flow_key)
        parts = flow_key.split("->")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            self.problem(
                where,
                f'flow key "{flow_key}" is not of the form "source->target".',
                'Name each flow "<source alias>-><target alias>", e.g. "primary->dr".',
            )
            return None
        source, target = parts[0].strip(), parts[1].strip()
        name = f"{source}->{target}"
        if name in seen:
            self.problem(
                where,
                f'duplicate flow {name} (also declared as "{seen[name]}").',
                "Keep one entry per source->target pair.",
            )
            return None
        seen[name] = flow_key
        ok = True
        if source == target:
            self.problem(
                where,
                f'flow "{flow_key}" replicates cluster {source} into itself.',
                "Use two different clusters; MM2 replicates between clusters.",
            )
            ok = False
        for role, alias in (("source", source), ("target", target)):
            if alias not in declared:
                hint = known.suggest(alias, declared)
                did = f'Did you mean "{hint}"? ' if hint else ""
                self.problem(
                    where,
                    f'{role} cluster "{alias}" is not defined under mm2:clusters.',
                    f"{did}Define it, or use one of: {', '.join(sorted(declared)) or '(none)'}.",
                )
                ok = False
        mapping = self.as_mapping(raw, where)
        if mapping is None:
            return None
        self.unknown_fields(mapping, FLOW_FIELDS, where)

        enabled = self.as_bool(mapping.get("enabled", True), f"{where}.enabled")
        disaster_recovery = (
            self.as_bool(mapping["disasterRecovery"], f"{where}.disasterRecovery")
            if "disasterRecovery" in mapping
            else defaults.disaster_recovery
        )
        exactly_once = (
            self.as_bool(mapping["exactlyOnce"], f"{where}.exactlyOnce")
            if "exactlyOnce" in mapping
            else defaults.exactly_once
        )
        tasks_max = (
            self.as_int(mapping["tasksMax"], f"{where}.tasksMax", minimum=1)
            if "tasksMax" in mapping
            else defaults.tasks_max
        )

        lists: dict[str, tuple[str, ...] | None] = {}
        for field_name, fallback in (
            ("topics", (".*",)),
            ("topicsExclude", MM2_TOPICS_EXCLUDE_DEFAULT),
            ("groups", (".*",)),
            ("groupsExclude", MM2_GROUPS_EXCLUDE_DEFAULT),
        ):
            if field_name in mapping:
                lists[field_name] = self.patterns(mapping[field_name], f"{where}.{field_name}")
            elif field_name in defaults.lists:
                lists[field_name] = defaults.lists[field_name]
            else:
                lists[field_name] = fallback
        if lists["topics"] == ():
            self.problem(
                f"{where}.topics",
                "an empty topic list replicates nothing.",
                'List topic patterns, or remove the key to replicate ".*".',
            )

        policy = self.policy(mapping.get("replicationPolicy"), f"{where}.replicationPolicy", defaults.policy)
        states = self.connector_states(mapping, where)

        # worker group: explicit, else the only group on the target, else the only group.
        group_name: str | None = None
        if "workerGroup" in mapping:
            group_name = self.as_str(mapping["workerGroup"], f"{where}.workerGroup")
            if group_name is not None and group_name not in declared_groups:
                hint = known.suggest(group_name, declared_groups)
                did = f'Did you mean "{hint}"? ' if hint else ""
                self.problem(
                    f"{where}.workerGroup",
                    f'unknown worker group "{group_name}".',
                    f"{did}Define it under mm2:workerGroups, or use one of: "
                    f"{', '.join(sorted(declared_groups)) or '(none)'}.",
                )
                ok = False
        else:
            on_target = sorted(g.name for g in groups.values() if g.cluster == target)
            if len(on_target) == 1:
                group_name = on_target[0]
            elif len(declared_groups) == 1:
                group_name = next(iter(declared_groups))
            else:
                self.problem(
                    f"{where}.workerGroup",
                    "no worker group is given and none can be inferred.",
                    "Set workerGroup to one of: "
                    f"{', '.join(sorted(declared_groups)) or '(define one under mm2:workerGroups)'}.",
                )
                ok = False

        levels = [
            _Level(defaults.settings, path("defaults", "settings")),
            _Level(clusters[source].settings if source in clusters else {}, path("clusters", source, "settings")),
            _Level(self.settings(mapping.get("settings"), f"{where}.settings"), f"{where}.settings"),
        ]
        if source in clusters and target in clusters:
            derived = self.derived_settings(clusters[source], clusters[target], bool(disaster_recovery))
            merged, origin = merge_levels([_Level(derived, "(project default)"), *levels])
            self.check_flow_settings(merged, origin, clusters[source], clusters[target], where)
        else:
            merged, origin = merge_levels(levels)
        if exactly_once and source in clusters:
            iso = clusters[source].client.get("consumer.isolation.level")
            if iso is not None and iso != "read_committed":
                self.problem(
                    path("clusters", source, "client") + quoted("consumer.isolation.level"),
                    f"exactly-once flow {name} needs read_committed on its source consumer, got {iso!r}.",
                    "Remove the override (exactlyOnce sets read_committed) or set exactlyOnce: false.",
                )
        if (
            not ok
            or enabled is None
            or disaster_recovery is None
            or exactly_once is None
            or group_name is None
            or states is None
            or any(v is None for v in lists.values())
        ):
            return None
        return Flow(
            source=source,
            target=target,
            enabled=enabled,
            worker_group=group_name,
            topics=lists["topics"] or (),
            topics_exclude=lists["topicsExclude"] or (),
            groups=lists["groups"] or (),
            groups_exclude=lists["groupsExclude"] or (),
            replication_policy=policy,
            disaster_recovery=disaster_recovery,
            settings=frozen_map(merged),
            tasks_max=tasks_max,
            exactly_once=exactly_once,
            connector_states=MappingProxyType(states),
        )

    def connector_states(self, mapping: Mapping[str, Any], where: str) -> dict[ConnectorRole, ConnectorState] | None:
        """`state` for the whole flow, `connectorStates` per role on top; only non-running kept."""
        ok = True

        def one(value: Any, key: str) -> ConnectorState | None:
            nonlocal ok
            text = value.strip().lower() if isinstance(value, str) else None
            try:
                return ConnectorState(text)
            except ValueError:
                ok = False
                self.problem(
                    key,
                    f"connector state {value!r} is not one of running, paused, stopped.",
                    "Use running (copy), paused (keep tasks, stop copying) or stopped "
                    "(release tasks, keep offsets); remove the key to run.",
                )
                return None

        flow_state = one(mapping["state"], f"{where}.state") if "state" in mapping else ConnectorState.RUNNING
        states = dict.fromkeys(ConnectorRole, flow_state or ConnectorState.RUNNING)
        raw = mapping.get("connectorStates")
        if raw is not None:
            per_role = self.as_mapping(raw, f"{where}.connectorStates")
            if per_role is None:
                return None
            for role, value in per_role.items():
                if role not in ROLE_NAMES:
                    ok = False
                    self.problem(
                        f"{where}.connectorStates.{role}",
                        f"unknown connector role {role!r}.",
                        f"Use one of: {', '.join(ROLE_NAMES)}.",
                    )
                    continue
                state = one(value, f"{where}.connectorStates.{role}")
                if state is not None:
                    states[ConnectorRole(role)] = state
        if not ok:
            return None
        return {role: state for role, state in states.items() if state is not ConnectorState.RUNNING}

    @staticmethod
    def derived_settings(source: Cluster, target: Cluster, disaster_recovery: bool) -> dict[str, str]:
        """Project defaults: replication factors sized to the cluster each topic lives on.

        MM2's own defaults (2 for remote topics, 3 for its internal topics) fail topic creation on
        small clusters; production clusters with three or more brokers still get 3. The
        offset-syncs factor is sized later, once `offset-syncs.topic.location` is known.
        """
        values = {
            "replication.factor": str(min(3, target.brokers)),
            "checkpoints.topic.replication.factor": str(min(3, target.brokers)),
            "heartbeats.topic.replication.factor": str(min(3, target.brokers)),
            "offset-syncs.topic.replication.factor": str(min(3, source.brokers)),
        }
        if disaster_recovery:
            # Consumers fail over without code changes: translated offsets land in the target's
            # __consumer_offsets for groups that are not active there.
            values["sync.group.offsets.enabled"] = "true"
        return values

    def check_flow_settings(
        self, merged: dict[str, str], origin: dict[str, str], source: Cluster, target: Cluster, where: str
    ) -> None:
        location = merged.get("offset-syncs.topic.location", "source")
        if location == "target" and origin.get("offset-syncs.topic.replication.factor") == "(project default)":
            merged["offset-syncs.topic.replication.factor"] = str(min(3, target.brokers))
        homes = {
            "replication.factor": target,
            "checkpoints.topic.replication.factor": target,
            "heartbeats.topic.replication.factor": target,
            "offset-syncs.topic.replication.factor": target if location == "target" else source,
        }
        for key, home in homes.items():
            value = merged.get(key)
            if value is None or not re.fullmatch(r"-?\d+", value):
                continue
            if int(value) > home.brokers:
                self.problem(
                    origin[key] + quoted(key) if origin[key] != "(project default)" else where,
                    f"{key}={value} is above the {home.brokers} broker(s) of cluster {home.alias}, "
                    "where that topic lives.",
                    f"Use at most {home.brokers} (MM2 would fail to create the topic), or add brokers.",
                )
        for key, reason in (
            ("emit.checkpoints.enabled", "the checkpoint connector refuses to start without checkpoints"),
            ("emit.offset-syncs.enabled", "the checkpoint connector cannot translate offsets without offset syncs"),
        ):
            if merged.get(key, "true").lower() == "false":
                self.problem(
                    origin[key] + quoted(key),
                    f"{key}=false: {reason}.",
                    "Remove it; to stop writing consumer offsets on the target set sync.group.offsets.enabled=false.",
                )

    # ---- cross-cutting checks ----------------------------------------------------------

    def check_ports(self, clusters: Mapping[str, Cluster], groups: Mapping[str, WorkerGroup]) -> None:
        ranges: list[tuple[str, int, int]] = []
        for cluster in clusters.values():
            if cluster.platform in (Platform.LOCAL, Platform.DOCKER) and cluster.port is not None:
                ranges.append(
                    (path("clusters", cluster.alias, "port"), cluster.port, cluster.port + 2 * cluster.brokers - 1)
                )
        for group in groups.values():
            if group.platform in (Platform.LOCAL, Platform.DOCKER) and group.rest_port is not None:
                ranges.append(
                    (path("workerGroups", group.name, "restPort"), group.rest_port, group.rest_port + group.workers - 1)
                )
        ranges.sort(key=lambda r: (r[1], r[0]))
        for i, (key_a, start_a, end_a) in enumerate(ranges):
            for key_b, start_b, end_b in ranges[i + 1 :]:
                if start_b <= end_a:
                    self.problem(
                        key_b,
                        f"ports {start_b}..{end_b} overlap {key_a} ({start_a}..{end_a}).",
                        f"Move it to {end_a + 1} or higher "
                        "(clusters use 2 ports per broker, worker groups 1 per worker).",
                    )

    def check_shared_target(self, flows: Sequence[Flow]) -> None:
        by_target: dict[str, list[Flow]] = {}
        for flow in flows:
            if flow.enabled:
                by_target.setdefault(flow.target, []).append(flow)
        for target, members in sorted(by_target.items()):
            members.sort(key=lambda f: f.source)
            for key in known.TARGET_SHARED:
                first = members[0]
                for other in members[1:]:
                    a, b = shared_value(first, key), shared_value(other, key)
                    if a != b:
                        self.problem(
                            path("flows", other.name, field_for_shared(key)),
                            f"flows {first.name} and {other.name} share target {target} "
                            f"but set {key} to {a!r} and {b!r}; MM2 shares this through the target "
                            "cluster, so the result depends on which connector wins.",
                            f"Set {key} the same on every flow into {target} (e.g. once under mm2:defaults).",
                        )


def shared_value(flow: Flow, key: str) -> str:
    if key == "replication.policy.class":
        return flow.replication_policy.class_name
    if key == "replication.policy.separator":
        return flow.replication_policy.separator
    return flow.settings.get(key, MM2_SETTING_DEFAULTS.get(key, ""))


def field_for_shared(key: str) -> str:
    if key == "replication.policy.class":
        return "replicationPolicy.class"
    if key == "replication.policy.separator":
        return "replicationPolicy.separator"
    return f"settings{quoted(key)}"


def merge_levels(levels: Sequence[_Level]) -> tuple[dict[str, str], dict[str, str]]:
    merged: dict[str, str] = {}
    origin: dict[str, str] = {}
    for level in levels:
        for k, v in level.values.items():
            merged[k] = v
            origin[k] = level.where
    return merged, origin


def frozen_cluster_map(values: Mapping[str, Cluster]) -> Mapping[str, Cluster]:
    return MappingProxyType(dict(sorted(values.items())))


def frozen_group_map(values: Mapping[str, WorkerGroup]) -> Mapping[str, WorkerGroup]:
    return MappingProxyType(dict(sorted(values.items())))


def parse_topology(config: Mapping[str, Any]) -> Topology:
    """Parse the `mm2` stack config namespace (prefix removed); raise TopologyError listing every problem."""
    parser = _Parser()
    topology = parser.parse(config)
    if parser.problems:
        raise TopologyError(parser.problems)
    return topology


def with_secrets_file(topology: Topology, group: str, secrets_file: str) -> Topology:
    """The same topology with one worker group reading secrets from another file.

    The local platform keeps secrets in its state directory, not /etc/mm2; it calls this before
    generating worker and connector configs so every placeholder names the file it writes.
    """
    groups = dict(topology.worker_groups)
    groups[group] = replace(groups[group], secrets_file=secrets_file)
    return replace(topology, worker_groups=frozen_group_map(groups))
