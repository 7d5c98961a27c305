"""An in-memory stand-in for confluent_kafka's AdminClient, as the Kafka providers use it.

Every call answers with `concurrent.futures.Future`s that are already resolved, keyed as the
real client keys them (topic name, ConfigResource, AclBinding, user name). State lives in plain
dicts and sets so a test can arrange the cluster and read it back; `failures[method]` makes every
future that method returns fail with that exception, `unreachable` makes the call itself raise.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    ConfigEntry,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialsDescription,
)
from pulumi.runtime import rpc

BOOTSTRAP = "primary-0:9092"


def resolved(value: Any) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(value)
    return future


def failed(exc: BaseException) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_exception(exc)
    return future


def kafka_error(code: int) -> KafkaException:
    return KafkaException(KafkaError(code))


def secret(value: Any) -> dict[str, Any]:
    """`value` as the engine may hand it over: wrapped in Pulumi's secret signature."""
    return {rpc._special_sig_key: rpc._special_secret_sig, "value": value}


@dataclass
class FakeAdmin:
    """Topics as name -> replicas per partition, topic configs, ALLOW bindings, SCRAM users."""

    topics: dict[str, list[list[int]]] = field(default_factory=dict)
    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    acls: set[AclBinding] = field(default_factory=set)
    users: dict[str, dict[ScramMechanism, bytes]] = field(default_factory=dict)
    failures: dict[str, BaseException] = field(default_factory=dict)
    unreachable: set[str] = field(default_factory=set)
    topic_errors: dict[str, int] = field(default_factory=dict)  # topic -> error code its metadata carries
    calls: list[tuple[str, Any]] = field(default_factory=list)
    clients: list[Mapping[str, Any]] = field(default_factory=list)

    def factory(self, props: Mapping[str, Any]) -> FakeAdmin:
        """Stands in for the module's client factory, remembering which props built each client."""
        self.clients.append(props)
        return self

    def _answer(self, method: str, arg: Any, value: Any) -> Future[Any]:
        self.calls.append((method, arg))
        return failed(self.failures[method]) if method in self.failures else resolved(value)

    def _enter(self, method: str) -> None:
        if method in self.unreachable:
            raise kafka_error(KafkaError._TRANSPORT)

    # -- topics -----------------------------------------------------------------------------------

    def list_topics(self, topic: str, timeout: float) -> SimpleNamespace:
        self._enter("list_topics")
        self.calls.append(("list_topics", timeout))
        if topic in self.topic_errors:
            meta = SimpleNamespace(partitions={}, error=KafkaError(self.topic_errors[topic]))
        elif topic not in self.topics:
            meta = SimpleNamespace(partitions={}, error=KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))
        else:
            parts = {i: SimpleNamespace(replicas=r) for i, r in enumerate(self.topics[topic])}
            meta = SimpleNamespace(partitions=parts, error=None)
        return SimpleNamespace(topics={topic: meta})

    def describe_configs(self, resources: list[Any]) -> dict[Any, Future[Any]]:
        return {
            r: self._answer("describe_configs", r.name, {k: ConfigEntry(k, v) for k, v in self.configs[r.name].items()})
            for r in resources
        }

    def create_topics(self, new: list[Any], operation_timeout: float) -> dict[str, Future[Any]]:
        out = {}
        for t in new:
            out[t.topic] = self._answer("create_topics", t, None)
            if "create_topics" not in self.failures:
                self.topics[t.topic] = [[1] * t.replication_factor for _ in range(t.num_partitions)]
                self.configs[t.topic] = dict(t.config)
        return out

    def create_partitions(self, new: list[Any]) -> dict[str, Future[Any]]:
        return {p.topic: self._answer("create_partitions", (p.topic, p.new_total_count), None) for p in new}

    def incremental_alter_configs(self, resources: list[Any]) -> dict[Any, Future[Any]]:
        return {r: self._answer("incremental_alter_configs", r, None) for r in resources}

    def delete_topics(self, names: list[str], operation_timeout: float) -> dict[str, Future[Any]]:
        return {n: self._answer("delete_topics", n, None) for n in names}

    # -- ACLs -------------------------------------------------------------------------------------

    def create_acls(self, bindings: list[AclBinding], request_timeout: float) -> dict[AclBinding, Future[Any]]:
        out = {b: self._answer("create_acls", b, None) for b in bindings}
        if "create_acls" not in self.failures:
            self.acls |= set(bindings)
        return out

    def delete_acls(self, bindings: list[AclBinding], request_timeout: float) -> dict[AclBinding, Future[Any]]:
        if not all(isinstance(b, AclBindingFilter) for b in bindings):  # as the real client checks
            raise TypeError(f"Expected list of {AclBindingFilter}")
        out = {b: self._answer("delete_acls", b, [b] if b in self.acls else []) for b in bindings}
        if "delete_acls" not in self.failures:
            self.acls -= set(bindings)
        return out

    def describe_acls(self, _filter: Any, request_timeout: float) -> Future[Any]:
        return self._answer("describe_acls", None, sorted(self.acls, key=str))

    # -- SCRAM users ------------------------------------------------------------------------------

    def alter_user_scram_credentials(self, changes: list[Any], request_timeout: float) -> dict[str, Future[Any]]:
        out: dict[str, Future[Any]] = {}
        for change in changes:
            password = getattr(change, "password", None)
            if "alter_user_scram_credentials" in self.failures:
                out[change.user] = self._answer("alter_user_scram_credentials", change, None)
            elif password is not None:
                mech = change.scram_credential_info.mechanism
                self.users.setdefault(change.user, {})[mech] = password
                out[change.user] = self._answer("upsert", change.user, None)
            elif change.mechanism in self.users.get(change.user, {}):
                del self.users[change.user][change.mechanism]
                out[change.user] = self._answer("delete", change.user, None)
            else:
                self.calls.append(("delete", change.user))
                out[change.user] = failed(kafka_error(KafkaError.RESOURCE_NOT_FOUND))
        return out

    def describe_user_scram_credentials(self, names: list[str], request_timeout: float) -> dict[str, Future[Any]]:
        self._enter("describe_user_scram_credentials")
        out: dict[str, Future[Any]] = {}
        for name in names:
            if "describe_user_scram_credentials" in self.failures or self.users.get(name):
                infos = [ScramCredentialInfo(m, 8192) for m in self.users.get(name, {})]
                out[name] = self._answer(
                    "describe_user_scram_credentials", name, UserScramCredentialsDescription(name, infos)
                )
            else:
                out[name] = failed(kafka_error(KafkaError.RESOURCE_NOT_FOUND))
        return out
