"""Secure by default, on real parts: SCRAM brokers with ACLs, Connect REST basic auth, config providers.

One deployment of the dev stack (SASL_PLAINTEXT + SCRAM-SHA-512, restAuth) per module; the tests
run in order against it. Passwords come from the stack's secret outputs and are never printed:
assertion messages name where a password was found, never the password.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from components.platform.local.layout import GROUP_SECRETS, group_path
from tests.integration.harness import (
    TestStack,
    arrives,
    connect_auth,
    deployed,
    kafka_conf,
    produce_one,
    stack_passwords,
    wait_until,
)
from tests.integration.security_checks import Refusal, assert_whole, gather, metadata_refusal

pytestmark = pytest.mark.integration

FLOW = "primary->dr"
PRIVATE_TOPIC = "ledger-private"  # on primary, outside the flow's topics


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with deployed(tmp_path_factory.mktemp("security")) as s:
        up = s.up()
        # Kept for the leak scans: the one output every test of the module can count on.
        s.up_output = up.stdout + up.stderr  # type: ignore[attr-defined]
        yield s
    assert s.markers() == [], f"processes left behind: {s.markers()}"
    assert not s.run_dir.exists(), f"data directory left behind: {s.run_dir}"


def _admin(out: dict[str, Any], alias: str, **extra: Any) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(kafka_conf(out, alias, **extra))


def _as_user(out: dict[str, Any], alias: str, user: str, password: str | None = None, **extra: Any) -> dict[str, Any]:
    cluster = out["clusters"][alias]
    return {
        "bootstrap.servers": cluster["bootstrap"],
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": cluster["users"][user] if password is None else password,
        "log_level": 0,
        **extra,
    }


def _refusal(conf: dict[str, Any]) -> Refusal | None:
    """How the broker refuses these settings, None when it answers (security_checks.metadata_refusal:
    known at the first refusal librdkafka reports; no answer within 8 s fails the test)."""
    return metadata_refusal(conf)[0]


def _produce(out: dict[str, Any], alias: str, topic: str, key: bytes) -> None:
    produce_one(out, alias, topic, key, b"secure " + key)


def _arrives(out: dict[str, Any], alias: str, topic: str, key: bytes, timeout_s: float = 120) -> bool:
    return arrives(out, alias, topic, key, timeout_s, "it-sec")


def _topic_error(conf: dict[str, Any], topic: str) -> str | None:
    """The metadata error these credentials get for `topic` (None: visible, so describable)."""
    from confluent_kafka.admin import AdminClient

    md = AdminClient(conf).list_topics(topic=topic, timeout=10)
    error = md.topics[topic].error
    return error.name() if error is not None else None


NO_ANSWER = "no record and no error"  # what _read_error reports when the bound passes in silence


def _read_error(conf: dict[str, Any], topic: str, timeout_s: float = 20) -> str | None:
    """The error a consumer with `conf` gets reading `topic` from the start, by assignment (no
    group: the MM2 user may join none); None if it reads a record, NO_ANSWER if it gets neither.
    Every partition the metadata shows is read: which partition a record lands in is the
    partitioner's business, not this test's. A topic these credentials may not describe shows
    none, and librdkafka then waits for a leader it cannot see, silently: see _subscribe_error."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**conf, "group.id": f"it-acl-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False})
    try:
        shown = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, 0) for p in (sorted(shown) or [0])])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error() is not None:
                return msg.error().name()
            return None
    finally:
        consumer.close()
    return NO_ANSWER


def _subscribe_error(conf: dict[str, Any], topic: str, timeout_s: float = 20) -> str | None:
    """The first answer a consumer with `conf` subscribing to `topic` gets: an error's name, None
    for a record, NO_ANSWER for neither within the bound. A subscriber, unlike an assigned
    consumer, is told when the broker refuses it the topic's metadata."""
    from confluent_kafka import Consumer

    group = f"it-acl-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({**conf, "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None:
                return msg.error().name() if msg.error() is not None else None
    finally:
        consumer.close()
    return NO_ANSWER


def test_flow_replicates_over_scram(stack: TestStack) -> None:
    out = stack.outputs()
    assert out["clusters"]["primary"]["securityProtocol"] == "SASL_PLAINTEXT"
    assert out["clusters"]["primary"]["client"]["sasl.mechanism"] == "SCRAM-SHA-512"
    assert set(out["flows"][FLOW]["states"].values()) == {"RUNNING"}
    key = f"scram-{uuid.uuid4().hex}".encode()
    _produce(out, "primary", "orders", key)
    assert _arrives(out, "dr", "primary.orders", key), "record did not replicate to primary.orders on dr"


@pytest.mark.parametrize("alias", ["primary", "dr"])
def test_brokers_refuse_anonymous_and_wrong_password(stack: TestStack, alias: str) -> None:
    out = stack.outputs()
    bootstrap = out["clusters"][alias]["bootstrap"]
    # A client without SASL: the broker answers ApiVersions, then closes the connection on the
    # first request that is not a SASL handshake.
    assert _refusal({"bootstrap.servers": bootstrap, "log_level": 0}) is Refusal.DISCONNECT, "PLAINTEXT client"
    wrong = _as_user(out, alias, "mm2", password="not-the-password")
    assert _refusal(wrong) is Refusal.AUTHENTICATION, "wrong password"
    assert _refusal(_as_user(out, alias, "nobody", password="whatever")) is Refusal.AUTHENTICATION, "unknown user"
    # The admin's PLAIN bootstrap path knows no one but admin.
    plain_mm2 = {**_as_user(out, alias, "mm2"), "sasl.mechanism": "PLAIN"}
    assert _refusal(plain_mm2) is Refusal.AUTHENTICATION, "PLAIN for a user other than admin"
    assert _refusal(_as_user(out, alias, "mm2")) is None, "the MM2 user's real credentials were refused"


def test_rest_api_requires_basic_auth(stack: TestStack) -> None:
    out = stack.outputs()
    auth = connect_auth(out)
    assert auth is not None, "dev stack should have restAuth"
    port = int(stack.config["config"]["mm2:workerGroups"]["mm2"]["restPort"])
    for worker in (0, 1):
        url = f"http://127.0.0.1:{port + worker}"
        assert httpx.get(f"{url}/connectors", timeout=10).status_code == 401
        assert httpx.get(f"{url}/connectors", auth=(auth[0], "wrong"), timeout=10).status_code == 401
        assert httpx.put(f"{url}/connectors/evil/config", json={}, timeout=10).status_code == 401
        assert httpx.get(f"{url}/connectors", auth=auth, timeout=10).status_code == 200


def test_mm2_user_is_limited_to_its_flow(stack: TestStack) -> None:
    from confluent_kafka import KafkaError, KafkaException, Producer
    from confluent_kafka.admin import NewTopic

    out = stack.outputs()
    admin = _admin(out, "primary")
    admin.create_topics([NewTopic(PRIVATE_TOPIC, num_partitions=1, replication_factor=1)])[PRIVATE_TOPIC].result(30)
    _produce(out, "primary", PRIVATE_TOPIC, b"private")
    _produce(out, "primary", "orders", b"acl-control")

    mm2_on_primary = _as_user(out, "primary", "mm2")
    assert _read_error(mm2_on_primary, "orders") is None, "the MM2 user cannot read its flow's topic"
    assert _topic_error(mm2_on_primary, PRIVATE_TOPIC) == "TOPIC_AUTHORIZATION_FAILED"
    # Reading it, a subscriber is told so: librdkafka joins no group while the subscription
    # matches no topic it may see, so the topic's refusal is all it gets (measured).
    assert _subscribe_error(mm2_on_primary, PRIVATE_TOPIC) == "TOPIC_AUTHORIZATION_FAILED"
    assert _read_error(kafka_conf(out, "primary"), PRIVATE_TOPIC) is None, "admin control read failed"
    # Nor may it write into topics it only replicates from, on the source.
    producer = Producer({**mm2_on_primary, "message.timeout.ms": 10000})
    errors: list[str] = []
    producer.produce("orders", value=b"x", on_delivery=lambda err, _m: errors.append(err.name() if err else "OK"))
    producer.flush(20)
    assert errors == ["TOPIC_AUTHORIZATION_FAILED"], errors
    # The Connect worker user owns its storage topics only.
    worker = _as_user(out, "dr", "connect-mm2")
    assert _topic_error(worker, "mm2-mm2-configs") is None
    assert _topic_error(worker, "primary.orders") == "TOPIC_AUTHORIZATION_FAILED"
    # The private topic is not replicated: it does not match the flow's patterns.
    md = _admin(out, "dr").list_topics(timeout=10)
    assert f"primary.{PRIVATE_TOPIC}" not in md.topics
    # Nor create topics on the source: CreateTopics answers the topic with an authorization error.
    mm2_admin = _admin(out, "primary", **{"sasl.username": "mm2", "sasl.password": mm2_on_primary["sasl.password"]})
    created = mm2_admin.create_topics([NewTopic("mm2-not-allowed", num_partitions=1, replication_factor=1)])
    with pytest.raises(KafkaException) as refused:
        created["mm2-not-allowed"].result(30)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, refused.value.args[0]
    assert "mm2-not-allowed" not in _admin(out, "primary").list_topics(timeout=10).topics


def _adopting_config(stack: TestStack, out: dict[str, Any]) -> dict[str, Any]:
    """A second stack that adopts this one's clusters and workers (`external`) and makes the flow
    exactly-once: the stack grants nothing there, so the target's ACLs must already hold it all.
    The adopted workers' secrets file is the one this stack wrote for them."""
    clusters = {
        alias: {
            "platform": "external",
            "bootstrap": out["clusters"][alias]["bootstrap"],
            "brokers": 1,
            "security": {
                "protocol": "SASL_PLAINTEXT",
                "saslMechanism": "SCRAM-SHA-512",
                "username": "mm2",
                "password": {"secret": f"{alias}.mm2.password"},
            },
        }
        for alias in ("primary", "dr")
    }
    group = {
        "url": out["connect"]["mm2"]["url"],
        "cluster": "dr",
        "restAuth": {"username": connect_auth(out)[0]},
        "secretsFile": str(stack.run_dir / group_path("mm2") / GROUP_SECRETS),
    }
    flow = {"workerGroup": "mm2", "topics": ["orders"], "exactlyOnce": True}
    return {"config": {"mm2:clusters": clusters, "mm2:workerGroups": {"mm2": group}, "mm2:flows": {FLOW: flow}}}


def _transactional_grants(out: dict[str, Any]) -> list[Any]:
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    def allow(restype: Any, name: str, pattern: Any, op: Any) -> Any:
        return AclBinding(restype, name, pattern, "User:mm2", "*", op, AclPermissionType.ALLOW)

    offsets = out["connect"]["mm2"]["offsetTopic"]
    return [
        allow(ResourceType.TRANSACTIONAL_ID, "mm2-", ResourcePatternType.PREFIXED, AclOperation.WRITE),
        allow(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, AclOperation.IDEMPOTENT_WRITE),
        allow(ResourceType.TOPIC, offsets, ResourcePatternType.LITERAL, AclOperation.READ),
        allow(ResourceType.TOPIC, offsets, ResourcePatternType.LITERAL, AclOperation.WRITE),
    ]


def test_exactly_once_into_a_target_lacking_its_grants_fails_at_preview_naming_them(
    stack: TestStack, tmp_path: Path
) -> None:
    from confluent_kafka.admin import AclBindingFilter

    out = stack.outputs()
    with deployed(tmp_path, _adopting_config(stack, out)) as adopting:
        for alias in ("primary", "dr"):
            adopting.set_secret(f"{alias}.mm2.password", out["clusters"][alias]["users"]["mm2"])
        adopting.set_secret("mm2.rest.password", connect_auth(out)[1])
        refused = adopting.pulumi("preview", check=False)
        text = refused.stdout + refused.stderr
        assert refused.returncode != 0, text[-3000:]
        assert "flow primary->dr is exactly-once, but on cluster 'dr'" in text, text[-4000:]
        assert "User:mm2 lacks:" in text and "WRITE on TRANSACTIONAL_ID prefixed 'mm2-mm2-mm2-primary-to-dr-" in text
        assert "kafka-acls.sh" in text and "or set exactlyOnce: false" in text
        assert not stack_passwords(out) & set(text.split()), "a password reached the preview output"

        grants = _transactional_grants(out)
        admin = _admin(out, "dr")
        for future in admin.create_acls(grants, request_timeout=30).values():
            future.result(30)
        try:
            granted = adopting.pulumi("preview", check=False)
            text = granted.stdout + granted.stderr
            assert "lacks:" not in text, text[-4000:]
            # The preview did ask: the workers, at exactly-once support `disabled`, are still refused.
            assert "exactly.once.source.support=enabled" in text, text[-4000:]
        finally:
            filters = [AclBindingFilter(g.restype, g.name, g.resource_pattern_type, g.principal, g.host, g.operation,
                                        g.permission_type) for g in grants]  # fmt: skip
            for future in admin.delete_acls(filters, request_timeout=30).values():
                future.result(30)


def test_topic_acls_sync_across_the_flow(stack: TestStack) -> None:
    """MM2 copies the source topic's ACLs (but WRITE) onto the remote topic: its cluster rights suffice."""
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    out = stack.outputs()
    admin = _admin(out, "dr")
    remote = AclBindingFilter(
        ResourceType.TOPIC,
        "primary.orders",
        ResourcePatternType.LITERAL,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )

    def synced() -> Any:
        bindings = admin.describe_acls(remote).result()
        # MM2 creates the bindings one by one: poll until the one asserted is there, and check
        # on every sample that WRITE never is.
        assert all(b.operation != AclOperation.WRITE for b in bindings), bindings
        return bindings if {(b.principal, b.operation) for b in bindings} >= {("User:mm2", AclOperation.READ)} else None

    bindings = wait_until(synced, 90, "the READ grant of User:mm2 synced onto primary.orders")
    assert {(b.principal, b.operation) for b in bindings} >= {("User:mm2", AclOperation.READ)}, bindings
    assert all(b.operation != AclOperation.WRITE for b in bindings), bindings


def _leaks(stack: TestStack, out: dict[str, Any], **outputs: str) -> dict[str, int]:
    """Where any of the stack's passwords appears, as {place: how many passwords}; never the values.
    The scan reads every place now (security_checks.gather): the module fixture's `pulumi up`
    output and `outputs` (name: text) the caller captured, state, REST, the config topic, `ps`,
    every process's log, and checks it read them all."""
    passwords = stack_passwords(out)
    assert len(passwords) >= 6, "expected admin, mm2 (x2), worker, admin (x2) and REST passwords"
    captured = {"pulumi up (module setup)": stack.up_output, **outputs}  # type: ignore[attr-defined]
    corpus = gather(stack, out, passwords, captured)
    assert_whole(stack, out, corpus)
    return corpus.leaks(passwords)


def test_no_password_in_state_rest_topics_processes_or_logs(stack: TestStack) -> None:
    out = stack.outputs()
    # Connector configs reference credentials through the config provider only.
    source = httpx.get(
        f"{out['connect']['mm2']['url']}/connectors/mm2-primary-to-dr-source/config", auth=connect_auth(out), timeout=10
    ).json()
    assert "${file:" in source["source.cluster.sasl.jaas.config"]
    assert "${file:" in source["producer.override.sasl.jaas.config"]
    assert _leaks(stack, out) == {}


def test_rotating_the_mm2_password_keeps_replication(stack: TestStack) -> None:
    before = stack.outputs()
    old = before["clusters"]["primary"]["users"]["mm2"]
    new = f"rotated-{uuid.uuid4().hex}"
    stack.set_secret("primary.mm2.password", new)
    up = stack.up()
    out = stack.outputs()
    assert out["clusters"]["primary"]["users"]["mm2"] == new
    # A SCRAM change reaches each broker through the cluster metadata, not at once: poll.
    old_conf, new_conf = _as_user(out, "primary", "mm2", password=old), _as_user(out, "primary", "mm2")
    wait_until(lambda: _refusal(old_conf) is Refusal.AUTHENTICATION, 60, "the old password refused")
    wait_until(lambda: _refusal(new_conf) is None, 60, "the new password accepted")
    # The connectors were restarted with the new credential: new records still arrive.
    key = f"rotated-{uuid.uuid4().hex}".encode()
    _produce(out, "primary", "orders", key)
    assert _arrives(out, "dr", "primary.orders", key), "replication stopped after the rotation"
    states = wait_until(
        lambda: all(
            httpx.get(
                f"{out['connect']['mm2']['url']}/connectors/{n}/status", auth=connect_auth(out), timeout=10
            ).json()["connector"]["state"]
            == "RUNNING"
            for n in out["flows"][FLOW]["connectors"].values()
        ),
        60,
        "connectors RUNNING after rotation",
    )
    assert states
    # The new password leaks nowhere either, nor does the old one in this `up`'s output; the
    # config file holds only its ciphertext.
    assert _leaks(stack, out, **{"pulumi up (rotation)": up.stdout + up.stderr}) == {}
    assert old not in up.stdout + up.stderr, "the old password in the rotation's `pulumi up` output"
    assert new not in Path(stack.config_file).read_text()


def test_refresh_finds_a_deleted_user_and_acl_and_up_restores_them(stack: TestStack) -> None:
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
        ScramMechanism,
        UserScramCredentialDeletion,
    )

    out = stack.outputs()
    admin = _admin(out, "primary")
    # Behind the stack's back: drop the MM2 user on the source and its READ grants there.
    admin.alter_user_scram_credentials([UserScramCredentialDeletion("mm2", ScramMechanism.SCRAM_SHA_512)])[
        "mm2"
    ].result(30)
    reads = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, "User:mm2", None, AclOperation.READ, AclPermissionType.ALLOW
    )
    assert admin.delete_acls([reads])[reads].result(30), "the MM2 user had no READ binding to delete"
    # The deletion reaches each broker through the cluster metadata, not at once: poll.
    mm2 = _as_user(out, "primary", "mm2")
    wait_until(lambda: _refusal(mm2) is Refusal.AUTHENTICATION, 60, "the deleted MM2 user refused")

    stack.pulumi("refresh", "--yes", "--skip-preview")
    steps = [s for s in stack.preview_json().get("steps", []) if s.get("op") not in ("same", None)]
    changed = sorted((s["op"], s["urn"].rsplit("::", 1)[-1]) for s in steps)
    assert changed == [("update", "kafka-primary-acls"), ("update", "kafka-primary-scram-users")], changed

    stack.up()
    # Restored user and grant reach each broker through the cluster metadata: poll (bounded).
    wait_until(lambda: _refusal(mm2) is None, 60, "the MM2 user restored")
    wait_until(lambda: _read_error(mm2, "orders") is None, 90, "its READ grant restored")
    stack.pulumi("up", "--yes", "--expect-no-changes")
