"""Who may do what: the users a stack creates, the secrets they need, and least-privilege ACLs.

Pure like the rest of the model: names, secret references and ACL bindings are derived from
the topology; the platform code creates the users (SCRAM), writes the secrets and applies the
ACLs. Three kinds of principal per stack-managed cluster (a `local` or `kubernetes` cluster with
SASL):

- `admin`: super user; the stack authenticates as it to create users, ACLs and topics. It is
  also the brokers' own identity on local clusters and on kubernetes clusters without TLS; a
  kubernetes cluster with TLS has its brokers authenticate each other by certificate instead
  (`BROKER_USER`, the brokers' own listeners).
- the MM2 user (`security.username`, `mm2` by default): what the flows' connectors connect as,
  limited by :func:`flow_acls` to the topics, groups and internal topics its flows touch.
- `connect-<group>`: a Connect worker group's own identity on the cluster holding its storage
  topics, limited by :func:`worker_acls` to its group id and storage topics.

Passwords are :class:`SecretRef` keys (`<alias>.admin.password`, `<alias>.mm2.password`,
`<group>.worker.password`, `<group>.rest.password`) resolved from `mm2:secrets` or generated.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import Enum

from components.topology.connectors import (
    checkpoints_topic,
    connector_name,
    heartbeats_topic,
    offset_syncs_cluster,
    offset_syncs_topic,
    transactional_group,
    transactional_workers,
)
from components.topology.model import (
    ADMIN_USER,
    Cluster,
    ConnectorRole,
    Flow,
    Platform,
    PolicyKind,
    SaslMechanism,
    SecretRef,
    Security,
    Topology,
    WorkerGroup,
)
from components.topology.tls import local_tls_cluster, tls_secret_keys

CLUSTER_RESOURCE_NAME = "kafka-cluster"  # the one CLUSTER resource Kafka ACLs know
WILDCARD = "*"


class AclResource(str, Enum):
    TOPIC = "TOPIC"
    GROUP = "GROUP"
    CLUSTER = "BROKER"  # confluent-kafka's ResourceType name for the cluster resource
    TRANSACTIONAL_ID = "TRANSACTIONAL_ID"


class AclPattern(str, Enum):
    LITERAL = "LITERAL"
    PREFIXED = "PREFIXED"


class AclOperation(str, Enum):
    READ = "READ"
    WRITE = "WRITE"
    CREATE = "CREATE"
    DESCRIBE = "DESCRIBE"
    DESCRIBE_CONFIGS = "DESCRIBE_CONFIGS"
    ALTER = "ALTER"
    ALTER_CONFIGS = "ALTER_CONFIGS"
    IDEMPOTENT_WRITE = "IDEMPOTENT_WRITE"


@dataclass(frozen=True, order=True)
class Acl:
    """One ALLOW binding: `principal` may `operation` on (`resource`, `name`, `pattern`) from any host."""

    principal: str  # "User:mm2"
    resource: AclResource
    name: str
    pattern: AclPattern
    operation: AclOperation

    def as_dict(self) -> dict[str, str]:
        return {
            "principal": self.principal,
            "resource": self.resource.value,
            "name": self.name,
            "pattern": self.pattern.value,
            "operation": self.operation.value,
        }


@dataclass(frozen=True)
class User:
    """A SASL user the stack creates on one cluster."""

    name: str
    password: SecretRef
    role: str  # "admin" | "mm2" | "worker"


# ---- users and secrets -----------------------------------------------------------------------


# Platforms whose brokers the stack configures with an authorizer and its own users (docker's
# brokers still authenticate everyone as the cluster's one SASL user, without an authorizer).
MANAGED_PLATFORMS = (Platform.LOCAL, Platform.KUBERNETES)
# What a kubernetes cluster's brokers are to each other on their own listeners: every certificate
# the cluster's CA signed, presented there (mutual TLS), maps to this one super user
# (container_broker.py). No stack user may take the name.
BROKER_USER = "kafka-broker"


def stack_managed(cluster: Cluster) -> bool:
    """True when the stack creates this cluster's users and ACLs (a local or kubernetes cluster
    with SASL): its brokers run StandardAuthorizer with `admin` as super user."""
    return cluster.platform in MANAGED_PLATFORMS and cluster.security.protocol.uses_sasl


def admin_password(alias: str) -> SecretRef:
    return SecretRef(f"{alias}.admin.password")


def worker_username(group: WorkerGroup) -> str:
    return f"connect-{group.name}"


def worker_password(group: WorkerGroup) -> SecretRef:
    return SecretRef(f"{group.name}.worker.password")


def worker_security(topology: Topology, group: WorkerGroup) -> Security:
    """The worker group's own identity on its storage cluster.

    On a stack-managed cluster that is `connect-<group>`, not the MM2 user: workers only need
    their storage topics and group, while the MM2 user's rights follow the flows.
    """
    cluster = topology.clusters[group.cluster]
    if not stack_managed(cluster):
        return cluster.security
    return replace(cluster.security, username=worker_username(group), password=worker_password(group))


def cluster_users(topology: Topology, alias: str) -> tuple[User, ...]:
    """The users the stack creates on `alias`: admin, the MM2 user, the workers of groups hosted there."""
    cluster = topology.clusters[alias]
    if not stack_managed(cluster):
        return ()
    security = cluster.security
    users = [User(ADMIN_USER, admin_password(alias), "admin")]
    if security.username and security.password and security.username != ADMIN_USER:
        users.append(User(security.username, security.password, "mm2"))
    for group in topology.worker_groups.values():
        if group.cluster == alias and group.platform is not Platform.EXTERNAL:
            users.append(User(worker_username(group), worker_password(group), "worker"))
    return tuple(users)


def generated_secret_keys(topology: Topology) -> tuple[str, ...]:
    """Secrets the stack may generate: passwords of users it creates, REST passwords of its workers,
    and the passwords of the CA, keystores and truststore it makes for local TLS."""
    keys: set[str] = set(tls_secret_keys(topology))
    for alias in topology.clusters:
        keys.update(user.password.key for user in cluster_users(topology, alias))
    for group in topology.worker_groups.values():
        if group.rest_auth and group.rest_password and not group.url:
            keys.add(group.rest_password.key)
    return tuple(sorted(keys))


def required_secret_keys(topology: Topology) -> tuple[str, ...]:
    """Every secret the deployment resolves; those not generated must be given in `mm2:secrets`."""
    keys = set(generated_secret_keys(topology))
    for cluster in topology.clusters.values():
        keys.update(ref.key for ref in cluster.security.secret_refs())
    for group in topology.worker_groups.values():
        if group.rest_auth and group.rest_password:
            keys.add(group.rest_password.key)
    return tuple(sorted(keys))


def flow_secret_keys(topology: Topology, flow: Flow) -> tuple[str, ...]:
    """Secrets the flow's connectors resolve through the worker group's secrets file."""
    keys: set[str] = set()
    for alias in (flow.source, flow.target):
        keys.update(ref.key for ref in topology.clusters[alias].security.secret_refs())
    return tuple(sorted(keys))


def group_secret_keys(topology: Topology, group: WorkerGroup) -> tuple[str, ...]:
    """Secrets every connector on `group` may resolve: the union over its enabled flows."""
    keys: set[str] = set()
    for flow in topology.enabled_flows():
        if flow.worker_group == group.name:
            keys.update(flow_secret_keys(topology, flow))
    return tuple(sorted(keys))


def render_secrets(values: Mapping[str, str]) -> str:
    """java.util.Properties text for a FileConfigProvider file: `key=value` lines, escaped."""

    def esc(text: str, is_key: bool) -> str:
        out = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        if is_key:
            out = out.replace("=", "\\=").replace(":", "\\:").replace(" ", "\\ ")
        elif out.startswith(" "):
            out = "\\" + out
        return out

    return "".join(f"{esc(k, True)}={esc(v, False)}\n" for k, v in sorted(values.items()))


def _tls_settings(security: Security, ca_location: str | None) -> dict[str, str]:
    # librdkafka reads a PEM CA (`ssl.ca.location`), not a Java truststore; it verifies the
    # broker's hostname against the certificate's SANs by default.
    return {"ssl.ca.location": ca_location} if security.protocol.uses_tls and ca_location else {}


def librdkafka_client(
    security: Security, username: str, password: str, ca_location: str | None = None
) -> dict[str, str]:
    """librdkafka (confluent-kafka) settings to connect as `username` with `password`; with TLS,
    `ca_location` is the PEM CA the brokers' certificates chain to."""
    settings = {"security.protocol": security.protocol.value, **_tls_settings(security, ca_location)}
    if security.protocol.uses_sasl and security.sasl_mechanism is not None:
        settings.update(
            {"sasl.mechanism": security.sasl_mechanism.value, "sasl.username": username, "sasl.password": password}
        )
    return settings


def admin_bootstrap_client(security: Security, password: str, ca_location: str | None = None) -> dict[str, str]:
    """How the stack itself authenticates as admin: SASL PLAIN, checked against the brokers' own
    JAAS user table, so it works before any SCRAM credential exists (no `--add-scram` with a
    password on the format tool's command line)."""
    settings = {"security.protocol": security.protocol.value, **_tls_settings(security, ca_location)}
    if not security.protocol.uses_sasl:
        return settings
    return {**settings, "sasl.mechanism": "PLAIN", "sasl.username": ADMIN_USER, "sasl.password": password}


# ---- ACLs ------------------------------------------------------------------------------------

_LITERAL_NAME = re.compile(r"^(?:[A-Za-z0-9_\-]|\\\.|\.(?![*+?]))+$")
_PREFIX_NAME = re.compile(r"^((?:[A-Za-z0-9_\-]|\\\.|\.(?![*+?]))+)\.\*$")


def pattern_resources(patterns: Iterable[str]) -> tuple[tuple[str, AclPattern], ...]:
    """ACL resource names covering regex `patterns` (MM2 filters match whole names).

    ACLs know literal names and prefixes only: `orders` stays literal, `payments-.*` becomes the
    prefix `payments-`, anything else (`.*`, alternations, classes) needs the wildcard `*`.
    A `.` in an otherwise literal name is taken as the dot topic names usually contain.
    """
    out: set[tuple[str, AclPattern]] = set()
    for raw in patterns:
        pattern = raw.strip().removeprefix("^").removesuffix("$")
        if not pattern:
            continue
        if _LITERAL_NAME.match(pattern):
            out.add((pattern.replace("\\.", "."), AclPattern.LITERAL))
        elif (prefix := _PREFIX_NAME.match(pattern)) is not None:
            out.add((prefix.group(1).replace("\\.", "."), AclPattern.PREFIXED))
        else:
            out.add((WILDCARD, AclPattern.LITERAL))
    if (WILDCARD, AclPattern.LITERAL) in out:
        return ((WILDCARD, AclPattern.LITERAL),)
    return tuple(sorted(out))


def _grant(
    principal: str, resources: Iterable[tuple[str, AclPattern]], kind: AclResource, ops: Iterable[AclOperation]
) -> set[Acl]:
    ops = tuple(ops)
    return {Acl(principal, kind, name, pattern, op) for name, pattern in resources for op in ops}


def _principal(cluster: Cluster) -> str | None:
    return f"User:{cluster.security.username}" if cluster.security.username else None


_READ_TOPIC = (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS)
_OWN_TOPIC = (
    AclOperation.CREATE,
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.DESCRIBE,
    AclOperation.DESCRIBE_CONFIGS,
)
_REMOTE_TOPIC = (*_OWN_TOPIC, AclOperation.ALTER, AclOperation.ALTER_CONFIGS)


def _remote_resources(flow: Flow) -> tuple[tuple[str, AclPattern], ...]:
    policy = flow.replication_policy
    keeps = policy.kind is PolicyKind.IDENTITY or (policy.kind is PolicyKind.CUSTOM and policy.preserves_names)
    prefix = (f"{flow.source}{policy.separator}", AclPattern.PREFIXED)
    if keeps:
        # Names stay as they are, except heartbeats (the policy defers to default naming there).
        return (*pattern_resources(flow.topics), (f"{flow.source}{policy.separator}heartbeats", AclPattern.LITERAL))
    return (prefix,)


def _acl_sync(flow: Flow) -> bool:
    return flow.settings.get("sync.topic.acls.enabled", "true").lower() == "true"


def _group_offset_sync(flow: Flow) -> bool:
    return flow.settings.get("sync.group.offsets.enabled", "false").lower() == "true"


def flow_acls(topology: Topology, flow: Flow) -> dict[str, set[Acl]]:
    """ACLs the flow's MM2 user needs, per cluster alias (only stack-managed clusters).

    Source: read the replicated topics (and `heartbeats`, which MM2 always replicates), describe
    the replicated groups (checkpoints), own the offset-syncs topic when it lives there.
    Target: own the remote topics, the checkpoints and heartbeats topics; describe (and, with
    `sync.group.offsets.enabled`, commit for) the replicated groups. `sync.topic.acls.enabled`
    (MM2's default) needs DESCRIBE on the source cluster and ALTER on the target cluster, which
    is what creating ACLs takes in Kafka: turn it off for a stricter target.
    """
    source, target = topology.clusters[flow.source], topology.clusters[flow.target]
    acls: dict[str, set[Acl]] = {}
    topics = pattern_resources(flow.topics)
    groups = pattern_resources(flow.groups)
    cluster_res = ((CLUSTER_RESOURCE_NAME, AclPattern.LITERAL),)
    syncs_on = offset_syncs_cluster(flow)
    syncs = ((offset_syncs_topic(flow), AclPattern.LITERAL),)

    src_user = _principal(source)
    if stack_managed(source) and src_user:
        grants = _grant(src_user, topics, AclResource.TOPIC, _READ_TOPIC)
        grants |= _grant(src_user, ((heartbeats_topic(flow), AclPattern.LITERAL),), AclResource.TOPIC, _READ_TOPIC)
        grants |= _grant(src_user, groups, AclResource.GROUP, (AclOperation.DESCRIBE,))
        if syncs_on == flow.source:
            grants |= _grant(src_user, syncs, AclResource.TOPIC, _OWN_TOPIC)
        if _acl_sync(flow):
            grants |= _grant(src_user, cluster_res, AclResource.CLUSTER, (AclOperation.DESCRIBE,))
        if flow.reverse_heartbeats:
            # The reverse heartbeat connector creates and writes `heartbeats` here as this user.
            heartbeats = ((heartbeats_topic(flow), AclPattern.LITERAL),)
            grants |= _grant(src_user, heartbeats, AclResource.TOPIC, _OWN_TOPIC)
        acls.setdefault(flow.source, set()).update(grants)

    dst_user = _principal(target)
    if stack_managed(target) and dst_user:
        own = (
            *_remote_resources(flow),
            (checkpoints_topic(flow), AclPattern.LITERAL),
            (heartbeats_topic(flow), AclPattern.LITERAL),
        )
        grants = _grant(dst_user, own, AclResource.TOPIC, _REMOTE_TOPIC)
        group_ops = [AclOperation.DESCRIBE]
        if _group_offset_sync(flow):
            group_ops.append(AclOperation.READ)  # OffsetCommit of translated offsets
        grants |= _grant(dst_user, groups, AclResource.GROUP, group_ops)
        if syncs_on == flow.target:
            grants |= _grant(dst_user, syncs, AclResource.TOPIC, _OWN_TOPIC)
        if _acl_sync(flow):
            grants |= _grant(dst_user, cluster_res, AclResource.CLUSTER, (AclOperation.DESCRIBE, AclOperation.ALTER))
        if transactional_group(topology, flow):
            grants |= _exactly_once_grants(topology, flow, dst_user)
        acls.setdefault(flow.target, set()).update(grants)
    return acls


def _exactly_once_grants(topology: Topology, flow: Flow, principal: str) -> set[Acl]:
    """What the MM2 user of a flow on an exactly-once worker group needs on the target (Kafka's
    "ACL requirements" for exactly-once source connectors, KIP-618). On such workers every
    source task writes in transactions, so for each of the flow's three connectors: its task
    producers' transactional ids `<group.id>-<connector>-<task>` (WRITE, DESCRIBE; the leader
    fences zombies through the connector's admin client, which is this user too), idempotent
    writes, and the offsets topic the transactions write: the worker group's global one when
    the target holds it, else a connector-specific topic of that name on the target (created
    by the worker as this user, and read back)."""
    group = topology.worker_groups[flow.worker_group]
    txn = tuple((f"{group.group_id}-{connector_name(flow, role)}-", AclPattern.PREFIXED) for role in ConnectorRole)
    grants = _grant(principal, txn, AclResource.TRANSACTIONAL_ID, (AclOperation.WRITE, AclOperation.DESCRIBE))
    cluster_res = ((CLUSTER_RESOURCE_NAME, AclPattern.LITERAL),)
    grants |= _grant(principal, cluster_res, AclResource.CLUSTER, (AclOperation.IDEMPOTENT_WRITE,))
    offsets = ((group.offset_topic, AclPattern.LITERAL),)
    if group.cluster == flow.target:
        # Written in each transaction, and read back by the task's own offset reader (the
        # connector's consumer, which reaches the target as this user).
        grants |= _grant(
            principal, offsets, AclResource.TOPIC, (AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE)
        )
    else:
        grants |= _grant(principal, offsets, AclResource.TOPIC, _OWN_TOPIC)
    return grants


def unmanaged_exactly_once_grants(topology: Topology, flow: Flow) -> tuple[Acl, ...]:
    """What an exactly-once flow's MM2 user needs on a target the stack does not grant ACLs on
    (external, or a SASL cluster of another platform), sorted; empty when the stack grants them
    itself, the flow is not transactional, or the target names no SASL user. The preview checks
    that the target's ACLs already hold these (components/kafka/acl_check.py)."""
    target = topology.clusters[flow.target]
    principal = _principal(target)
    if stack_managed(target) or principal is None or not target.security.protocol.uses_sasl:
        return ()
    if not transactional_group(topology, flow):
        return ()
    return tuple(sorted(_exactly_once_grants(topology, flow, principal)))


def exactly_once_worker_transactional_id(group: WorkerGroup) -> str:
    """The transactional id of the group leader's config-topic producer (Connect's
    DistributedConfig.transactionalProducerId): `connect-cluster-<group.id>`."""
    return f"connect-cluster-{group.group_id}"


def worker_acls(topology: Topology, group: WorkerGroup) -> set[Acl]:
    """ACLs of `connect-<group>` on its storage cluster: its group id and its three storage topics."""
    cluster = topology.clusters[group.cluster]
    if not stack_managed(cluster) or group.platform is Platform.EXTERNAL:
        return set()
    principal = f"User:{worker_username(group)}"
    storage = tuple((t, AclPattern.LITERAL) for t in (group.config_topic, group.offset_topic, group.status_topic))
    grants = _grant(principal, storage, AclResource.TOPIC, _OWN_TOPIC)
    grants |= _grant(
        principal,
        ((group.group_id, AclPattern.LITERAL),),
        AclResource.GROUP,
        (AclOperation.READ, AclOperation.DESCRIBE),
    )
    if transactional_workers(topology, group):
        # From `preparing` on (and until no worker is left `enabled`), the leader writes the
        # config topic in transactions.
        txn = ((exactly_once_worker_transactional_id(group), AclPattern.LITERAL),)
        grants |= _grant(principal, txn, AclResource.TRANSACTIONAL_ID, (AclOperation.WRITE, AclOperation.DESCRIBE))
        grants |= _grant(
            principal,
            ((CLUSTER_RESOURCE_NAME, AclPattern.LITERAL),),
            AclResource.CLUSTER,
            (AclOperation.IDEMPOTENT_WRITE,),
        )
    return grants


def lag_reader_acls(topology: Topology, group: WorkerGroup) -> set[Acl]:
    """On kubernetes, a group's lag exporter reads MM2's committed offsets from the group's offsets
    topic as its storage cluster's configured user (lag_exporter_objects.py), which the flows'
    grants do not cover: READ and DESCRIBE there. On the local platform it reads as `admin`."""
    cluster = topology.clusters[group.cluster]
    principal = _principal(cluster)
    if not stack_managed(cluster) or group.platform is not Platform.KUBERNETES or principal is None:
        return set()
    offsets = ((group.offset_topic, AclPattern.LITERAL),)
    return _grant(principal, offsets, AclResource.TOPIC, (AclOperation.READ, AclOperation.DESCRIBE))


def cluster_acls(topology: Topology, alias: str) -> tuple[Acl, ...]:
    """Every ACL the stack applies on `alias`, sorted (stable diffs)."""
    if not stack_managed(topology.clusters[alias]):
        return ()
    acls: set[Acl] = set()
    for flow in topology.enabled_flows():
        acls |= flow_acls(topology, flow).get(alias, set())
    for group in topology.worker_groups.values():
        if group.cluster == alias:
            acls |= worker_acls(topology, group) | lag_reader_acls(topology, group)
    return tuple(sorted(acls))


def security_problems(topology: Topology) -> list[str]:
    """Topology-wide security mistakes the parser cannot see per cluster (empty when fine)."""
    problems = []
    for alias, cluster in topology.clusters.items():
        if stack_managed(cluster) and cluster.security.username in (ADMIN_USER, BROKER_USER):
            problems.append(
                f"mm2:clusters.{alias}.security.username: {cluster.security.username!r} is a super user of "
                "the brokers the stack runs. Fix: give MM2 its own user, e.g. username: mm2, so ACLs can limit it."
            )
    problems += tls_problems(topology)
    return problems


def admin_rotation_refusal(cluster: Cluster) -> str | None:
    """Why the stack cannot rotate the admin password of `cluster` in one `up`, or None when it can.

    `admin` is a PLAIN user of the brokers' JAAS table, read at start, and the stack's own login.
    On a kubernetes cluster the stack rotates it through admin's SCRAM credential: set first
    through the Admin API (every broker takes it at once), it is what the roll logs in with while
    the brokers restart one by one onto the new PLAIN password. That needs a SCRAM mechanism, and
    TLS: without it `admin` is also the brokers' login to each other, and a half-done roll would
    split them on the old and the new password. Other platforms restart every broker at once.
    """
    if cluster.platform is not Platform.KUBERNETES or not stack_managed(cluster):
        return None
    if cluster.security.sasl_mechanism is SaslMechanism.PLAIN:
        return (
            "its users are PLAIN, read by the brokers at start only, so the stack would be locked out of "
            "the brokers not yet restarted; a SCRAM saslMechanism (SCRAM-SHA-512) rotates it in one up"
        )
    if not cluster.security.protocol.uses_tls:
        return (
            "without TLS, admin is also how the brokers log in to each other, so a roll would split them "
            "on the old and the new password; SASL_SSL (the brokers then know each other by certificate) "
            "rotates it in one up"
        )
    return None


def rotation_problems(topology: Topology, rotate: Mapping[str, object]) -> list[str]:
    """`mm2:rotate` keys the stack cannot rotate: an admin password `admin_rotation_refusal` refuses."""
    problems = []
    for alias, cluster in topology.clusters.items():
        key = admin_password(alias).key
        why = admin_rotation_refusal(cluster)
        if key in rotate and why is not None:
            problems.append(
                f"mm2:rotate.{key}: the admin password of kubernetes cluster {alias} cannot be rotated: {why}. "
                "Fix: remove the key from mm2:rotate (MM2's and the workers' passwords rotate)."
            )
    return problems


def tls_problems(topology: Topology) -> list[str]:
    """Security settings MM2 cannot bridge.

    Clusters may differ freely: a connector has separate `source.cluster.*` and
    `target.cluster.*` client settings, so a SASL_SSL source and a SASL_PLAINTEXT target (or an
    SSL one) replicate fine. What cannot work is a client that cannot get the trust material:
    the truststore of a local TLS cluster is generated on this machine, under the stack's run
    directory, so only workers the stack runs here can read it.
    """
    problems = []
    for group in topology.worker_groups.values():
        if group.platform is Platform.LOCAL and not group.url:
            continue
        where = f"mm2:workerGroups.{group.name}"
        storage = topology.clusters.get(group.cluster)
        if storage is not None and local_tls_cluster(storage):
            problems.append(
                f"{where}.cluster: {group.cluster!r} is a local {storage.security.protocol.value} cluster whose "
                "truststore the stack generates on this machine, but this worker group is not run by the stack "
                "here, so its workers cannot read it. Fix: run the group on the local platform (drop url/platform), "
                "or give the cluster protocol SASL_PLAINTEXT."
            )
        for flow in topology.enabled_flows():
            if flow.worker_group != group.name:
                continue
            for alias in (flow.source, flow.target):
                cluster = topology.clusters.get(alias)
                if cluster is not None and local_tls_cluster(cluster) and alias != group.cluster:
                    problems.append(
                        f"mm2:flows.{flow.name}.workerGroup: cluster {alias!r} is a local "
                        f"{cluster.security.protocol.value} cluster whose truststore the stack generates on this "
                        f"machine, but worker group {group.name!r} is not run by the stack here, so its connectors "
                        "cannot read it. Fix: use a local worker group for this flow, or give the cluster protocol "
                        "SASL_PLAINTEXT."
                    )
    return problems


__all__ = [
    "BROKER_USER",
    "CLUSTER_RESOURCE_NAME",
    "MANAGED_PLATFORMS",
    "Acl",
    "AclOperation",
    "AclPattern",
    "AclResource",
    "User",
    "admin_bootstrap_client",
    "admin_password",
    "admin_rotation_refusal",
    "cluster_acls",
    "cluster_users",
    "exactly_once_worker_transactional_id",
    "flow_acls",
    "flow_secret_keys",
    "generated_secret_keys",
    "group_secret_keys",
    "lag_reader_acls",
    "librdkafka_client",
    "pattern_resources",
    "render_secrets",
    "required_secret_keys",
    "rotation_problems",
    "security_problems",
    "stack_managed",
    "tls_problems",
    "worker_acls",
    "worker_password",
    "worker_security",
    "worker_username",
]
