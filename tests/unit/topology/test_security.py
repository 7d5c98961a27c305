"""Users, secret keys and least-privilege ACLs derived from the topology (pure)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from components.topology import broker_properties, parse_topology, worker_properties
from components.topology.model import SaslMechanism, SecurityProtocol
from components.topology.runtime_config import with_exactly_once_stage
from components.topology.security import (
    Acl,
    AclOperation,
    AclPattern,
    AclResource,
    admin_rotation_refusal,
    cluster_acls,
    cluster_users,
    flow_acls,
    generated_secret_keys,
    lag_reader_acls,
    pattern_resources,
    render_secrets,
    required_secret_keys,
    rotation_problems,
    security_problems,
    worker_acls,
)
from tests.unit.topology.helpers import secure_config

LIT, PRE = AclPattern.LITERAL, AclPattern.PREFIXED


R, W, C, D, DC = (
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.CREATE,
    AclOperation.DESCRIBE,
    AclOperation.DESCRIBE_CONFIGS,
)


def cluster(principal: str, *ops: AclOperation) -> set[Acl]:
    return {Acl(principal, AclResource.CLUSTER, "kafka-cluster", LIT, op) for op in ops}


def group(principal: str, name: str, pattern: AclPattern, *ops: AclOperation) -> set[Acl]:
    return {Acl(principal, AclResource.GROUP, name, pattern, op) for op in ops}


def topic(principal: str, name: str, pattern: AclPattern, *ops: AclOperation) -> set[Acl]:
    return {Acl(principal, AclResource.TOPIC, name, pattern, op) for op in ops}


def test_plaintext_only_when_asked_and_external_clusters_keep_their_default() -> None:
    config = secure_config()
    config["clusters"]["primary"]["security"] = {"protocol": "PLAINTEXT"}
    config["clusters"]["ext"] = {"platform": "external", "bootstrap": "k:9092", "brokers": 3}
    topology = parse_topology(config)
    assert topology.clusters["primary"].security.protocol.value == "PLAINTEXT"
    assert topology.clusters["ext"].security.protocol.value == "PLAINTEXT"
    assert cluster_users(topology, "primary") == ()
    assert cluster_acls(topology, "primary") == ()


def test_users_and_secret_keys() -> None:
    topology = parse_topology(secure_config())
    assert [(u.name, u.password.key, u.role) for u in cluster_users(topology, "dr")] == [
        ("admin", "dr.admin.password", "admin"),
        ("mm2", "dr.mm2.password", "mm2"),
        ("connect-mm2", "mm2.worker.password", "worker"),
    ]
    assert [u.name for u in cluster_users(topology, "primary")] == ["admin", "mm2"]
    generated = generated_secret_keys(topology)
    assert generated == (
        "dr.admin.password",
        "dr.mm2.password",
        "mm2.rest.password",
        "mm2.worker.password",
        "primary.admin.password",
        "primary.mm2.password",
    )
    assert required_secret_keys(topology) == generated


def test_external_credentials_are_required_not_generated() -> None:
    config = secure_config()
    config["clusters"]["ext"] = {
        "platform": "external",
        "bootstrap": "k:9092",
        "brokers": 3,
        "security": {
            "protocol": "SASL_PLAINTEXT",
            "saslMechanism": "SCRAM-SHA-512",
            "username": "mm2",
            "password": {"secret": "ext.mm2.password"},
        },
    }
    topology = parse_topology(config)
    assert "ext.mm2.password" in required_secret_keys(topology)
    assert "ext.mm2.password" not in generated_secret_keys(topology)


@pytest.mark.parametrize(
    ("patterns", "expected"),
    [
        (["orders", "payments"], (("orders", LIT), ("payments", LIT))),
        (["payments-.*"], (("payments-", PRE),)),
        (["^eu\\.orders$"], (("eu.orders", LIT),)),
        (["app.events.*"], (("app.events", PRE),)),
        (["orders", ".*"], (("*", LIT),)),
        (["(a|b)"], (("*", LIT),)),
        (["ord[0-9]+"], (("*", LIT),)),
    ],
)
def test_regex_patterns_become_the_narrowest_acl_resources(patterns: list[str], expected: tuple) -> None:
    assert pattern_resources(patterns) == expected


def test_flow_acls_for_the_dev_flow() -> None:
    topology = parse_topology(secure_config())
    acls = flow_acls(topology, topology.flows[0])
    mm2 = "User:mm2"
    assert acls["primary"] == (
        topic(mm2, "orders", LIT, R, D, DC)
        | topic(mm2, "payments", LIT, R, D, DC)
        | topic(mm2, "heartbeats", LIT, R, D, DC)
        | group(mm2, "*", LIT, D)
        | topic(mm2, "mm2-offset-syncs.dr.internal", LIT, C, R, W, D, DC)
        | cluster(mm2, D)
    )
    own = (C, R, W, D, DC)
    assert acls["dr"] == (
        topic(mm2, "primary.", PRE, *own, AclOperation.ALTER, AclOperation.ALTER_CONFIGS)
        | topic(mm2, "primary.checkpoints.internal", LIT, *own, AclOperation.ALTER, AclOperation.ALTER_CONFIGS)
        | topic(mm2, "heartbeats", LIT, *own, AclOperation.ALTER, AclOperation.ALTER_CONFIGS)
        | group(mm2, "*", LIT, D, R)
        | cluster(mm2, D, AclOperation.ALTER)
    )


def test_turning_acl_sync_off_drops_the_cluster_rights() -> None:
    config = secure_config()
    config["flows"]["primary->dr"]["settings"]["sync.topic.acls.enabled"] = "false"
    config["flows"]["primary->dr"]["groups"] = ["billing-.*"]
    topology = parse_topology(config)
    acls = flow_acls(topology, topology.flows[0])
    assert not [a for a in acls["primary"] | acls["dr"] if a.resource is AclResource.CLUSTER]
    assert {(a.name, a.pattern) for a in acls["dr"] if a.resource is AclResource.GROUP} == {("billing-", PRE)}


def test_identity_flow_owns_the_source_names_on_the_target() -> None:
    config = secure_config()
    config["flows"]["primary->dr"]["replicationPolicy"] = {"class": "identity"}
    topology = parse_topology(config)
    names = {(a.name, a.pattern) for a in flow_acls(topology, topology.flows[0])["dr"] if a.operation is W}
    assert ("orders", LIT) in names and ("payments", LIT) in names
    assert ("primary.heartbeats", LIT) in names
    assert ("primary.", PRE) not in names


def test_worker_user_owns_only_its_storage_and_group() -> None:
    topology = parse_topology(secure_config())
    w = "User:connect-mm2"
    own = (C, R, W, D, DC)
    assert worker_acls(topology, topology.worker_groups["mm2"]) == (
        topic(w, "mm2-mm2-configs", LIT, *own)
        | topic(w, "mm2-mm2-offsets", LIT, *own)
        | topic(w, "mm2-mm2-status", LIT, *own)
        | group(w, "mm2-mm2", LIT, R, D)
    )
    assert set(cluster_acls(topology, "dr")) >= worker_acls(topology, topology.worker_groups["mm2"])


def test_brokers_reference_every_password_through_the_config_provider() -> None:
    topology = parse_topology(secure_config())
    props = broker_properties(topology.clusters["dr"], 0, "/d", secrets_file="/run/s.properties")
    assert props["listener.security.protocol.map"] == "CLIENT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
    assert props["listener.name.client.sasl.enabled.mechanisms"] == "SCRAM-SHA-512,PLAIN"
    assert props["listener.name.controller.sasl.enabled.mechanisms"] == "PLAIN"
    assert props["sasl.mechanism.inter.broker.protocol"] == "PLAIN"
    assert props["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert props["super.users"] == "User:admin"
    assert props["listener.name.client.plain.sasl.jaas.config"] == (
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="${file:/run/s.properties:dr.admin.password}" '
        'user_admin="${file:/run/s.properties:dr.admin.password}";'
    )
    assert props["listener.name.client.scram-sha-512.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    )


def test_worker_connects_as_its_own_user() -> None:
    topology = parse_topology(secure_config())
    props = worker_properties(topology, topology.worker_groups["mm2"], 0, worker_secrets_file="/w/s.properties")
    assert props["sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="connect-mm2" password="${file:/w/s.properties:mm2.worker.password}";'
    )
    assert props["connector.client.config.override.policy"] == "All"
    assert props["rest.extension.classes"].endswith("BasicAuthSecurityRestExtension")


def test_admin_may_not_be_the_mm2_user() -> None:
    config = secure_config()
    config["clusters"]["dr"]["security"] = {"protocol": "SASL_PLAINTEXT", "username": "admin"}
    problems = security_problems(parse_topology(config))
    assert len(problems) == 1 and "mm2:clusters.dr.security.username" in problems[0]


def test_render_secrets_escapes_properties_syntax() -> None:
    assert render_secrets({"b.key": "p=w:1", "a key": " lead"}) == "a\\ key=\\ lead\nb.key=p=w:1\n"


def test_reverse_heartbeats_let_the_source_mm2_user_create_and_write_heartbeats_there() -> None:
    from components.topology.security import Acl, AclOperation, AclPattern, AclResource, flow_acls

    config = secure_config()
    before = flow_acls(parse_topology(config), parse_topology(config).flows[0])
    config["flows"]["primary->dr"]["reverseHeartbeats"] = True
    topology = parse_topology(config)
    after = flow_acls(topology, topology.flows[0])
    added = after["primary"] - before["primary"]
    assert added == {
        Acl("User:mm2", AclResource.TOPIC, "heartbeats", AclPattern.LITERAL, op)
        for op in (AclOperation.CREATE, AclOperation.WRITE)
    }
    assert after["dr"] == before["dr"]


def test_exactly_once_grants_the_transactional_rights_kip_618_lists() -> None:
    config = secure_config()
    config["flows"]["primary->dr"]["exactlyOnce"] = True
    topology = parse_topology(config)
    txn = AclResource.TRANSACTIONAL_ID
    mm2_dr = flow_acls(topology, topology.flows[0])["dr"]
    # Task producers `<group.id>-<connector>-<task>` (and fencing them), idempotence, and the
    # worker group's offsets topic (on dr, the group's own cluster) written in the transaction.
    # On exactly-once workers every source task is transactional: checkpoint and heartbeat too.
    assert {(a.name, a.pattern, a.operation) for a in mm2_dr if a.resource is txn} == {
        (f"mm2-mm2-mm2-primary-to-dr-{role}-", PRE, op)
        for role in ("source", "checkpoint", "heartbeat")
        for op in (W, D)
    }
    assert cluster("User:mm2", AclOperation.IDEMPOTENT_WRITE) <= mm2_dr
    # Written in each transaction and read back by the task (found on real workers: "Not
    # authorized to read from partition mm2-mm2-offsets-N" kept tasks from starting).
    assert topic("User:mm2", "mm2-mm2-offsets", LIT, R, W, D) <= mm2_dr
    # The source side needs nothing transactional: it is read with read_committed.
    assert not [a for a in flow_acls(topology, topology.flows[0])["primary"] if a.resource is txn]
    worker = worker_acls(topology, topology.worker_groups["mm2"])
    assert {(a.name, a.pattern, a.operation) for a in worker if a.resource is txn} == {
        ("connect-cluster-mm2-mm2", LIT, W),
        ("connect-cluster-mm2-mm2", LIT, D),
    }


def test_at_least_once_flows_grant_nothing_transactional() -> None:
    topology = parse_topology(secure_config())
    assert not [a for a in cluster_acls(topology, "dr") if a.resource is AclResource.TRANSACTIONAL_ID]


def test_turning_exactly_once_off_keeps_the_transactional_grants_until_no_worker_runs_with_it() -> None:
    # Found on real workers: removed at once, the workers still at `enabled` during the roll to
    # disabled could not read their offsets back, and retried (and logged) without end.
    config = secure_config()
    config["flows"]["primary->dr"]["exactlyOnce"] = True
    on = parse_topology(config)
    config["flows"]["primary->dr"]["exactlyOnce"] = False
    disabling = with_exactly_once_stage(parse_topology(config), "mm2", "disabling")
    txn = AclResource.TRANSACTIONAL_ID
    assert [a for a in cluster_acls(disabling, "dr") if a.resource is txn]
    assert flow_acls(disabling, disabling.flows[0])["dr"] == flow_acls(on, on.flows[0])["dr"]
    assert worker_acls(disabling, disabling.worker_groups["mm2"]) == worker_acls(on, on.worker_groups["mm2"])
    off = parse_topology(config)
    assert not [a for a in cluster_acls(off, "dr") if a.resource is txn]


def _sasl(user: str, alias: str) -> dict[str, object]:
    password = {"secret": f"{alias}.{user}.password"}
    return {"protocol": "SASL_PLAINTEXT", "saslMechanism": "SCRAM-SHA-512", "username": user, "password": password}


def _kubernetes_config() -> dict[str, Any]:
    """secure_config on the kubernetes platform: the stack runs the brokers and the workers there."""
    config = secure_config()
    for alias, body in config["clusters"].items():
        body["platform"] = "kubernetes"
        body.pop("port", None)
        body["security"] = _sasl("mm2", alias)
    config["workerGroups"]["mm2"].update(platform="kubernetes", url="http://127.0.0.1:30083")
    config["workerGroups"]["mm2"].pop("restPort", None)
    return config


def test_kubernetes_clusters_get_the_stack_users_and_the_workers_their_grants() -> None:
    topology = parse_topology(_kubernetes_config())
    assert [u.name for u in cluster_users(topology, "dr")] == ["admin", "mm2", "connect-mm2"]
    group_ = topology.worker_groups["mm2"]
    assert worker_acls(topology, group_) and set(cluster_acls(topology, "dr")) >= worker_acls(topology, group_)
    # The lag exporter reads MM2's committed offsets as the cluster's MM2 user there.
    assert lag_reader_acls(topology, group_) == topic("User:mm2", "mm2-mm2-offsets", LIT, R, D)
    local = parse_topology(secure_config())
    assert lag_reader_acls(local, local.worker_groups["mm2"]) == set()  # there it reads as admin


def test_no_stack_user_may_take_the_brokers_own_name() -> None:
    config = _kubernetes_config()
    config["clusters"]["dr"]["security"] = _sasl("kafka-broker", "dr")
    problems = security_problems(parse_topology(config))
    assert len(problems) == 1 and "'kafka-broker' is a super user" in problems[0]


def _with(topology: Any, alias: str, **security: Any) -> Any:
    cluster = topology.clusters[alias]
    changed = dataclasses.replace(cluster, security=dataclasses.replace(cluster.security, **security))
    return dataclasses.replace(topology, clusters={**topology.clusters, alias: changed})


def test_a_kubernetes_admin_password_rotates_only_over_scram_and_tls() -> None:
    plaintext = parse_topology(_kubernetes_config())  # SASL_PLAINTEXT, SCRAM-SHA-512
    (problem,) = rotation_problems(plaintext, {"dr.admin.password": "2", "dr.mm2.password": "2"})
    assert problem.startswith("mm2:rotate.dr.admin.password: the admin password of kubernetes cluster dr cannot")
    assert "without TLS, admin is also how the brokers log in to each other" in problem
    assert "Fix: remove the key from mm2:rotate" in problem
    tls = _with(plaintext, "dr", protocol=SecurityProtocol.SASL_SSL)
    assert rotation_problems(tls, {"dr.admin.password": "2"}) == []
    assert admin_rotation_refusal(tls.clusters["dr"]) is None
    plain_users = _with(tls, "dr", sasl_mechanism=SaslMechanism.PLAIN)
    (problem,) = rotation_problems(plain_users, {"dr.admin.password": "2"})
    assert "its users are PLAIN" in problem and "SCRAM-SHA-512" in problem
    local = parse_topology(secure_config())
    assert rotation_problems(local, {"dr.admin.password": "2"}) == []  # local brokers restart at once
    assert admin_rotation_refusal(local.clusters["dr"]) is None
