"""Dynamic provider for Kafka topics (type ``pulumi-python:dynamic/kafka:Topic``) over the Admin API.

Changes that would lose data are refused at preview with the manual fix, never done by replacing
the topic: fewer partitions, or a different replication factor (which needs a reassignment).
More partitions and topic-config changes are in-place updates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    DiffResult,
    ReadResult,
    Resource,
    ResourceProvider,
    UpdateResult,
)

from components.kafka.admin import ADMIN_TIMEOUT_S, READ_TIMEOUT_S, KafkaAdminError, admin_client
from components.rpc_values import plain

# The one metadata error that means "no such topic"; any other is a failure to find out.
_UNKNOWN_TOPIC = "UNKNOWN_TOPIC_OR_PART"


class TopicError(KafkaAdminError):
    """A topic could not be created, read, changed or deleted."""


class ClusterUnreachable(TopicError):
    """A topic's cluster does not answer: the message says which and what to do (no traceback)."""

    refusal = True


def _admin(props: Mapping[str, Any]) -> Any:
    return admin_client(props)


def _describe(props: Mapping[str, Any], timeout_s: float = ADMIN_TIMEOUT_S) -> dict[str, Any] | None:
    """The topic's live shape, None when the cluster says it does not exist; raises TopicError otherwise."""
    from confluent_kafka.admin import ConfigResource, ResourceType

    admin = _admin(props)
    md = admin.list_topics(topic=props["name"], timeout=timeout_s)
    topic = md.topics.get(props["name"])
    if topic is None:
        return None
    if topic.error is not None:
        if _error_name(topic.error) == _UNKNOWN_TOPIC:
            return None
        raise TopicError(
            f"{_where(props)}: the cluster could not describe it: {topic.error}. "
            "Fix: check that the stack's admin user may DESCRIBE the topic and the brokers are healthy."
        )
    partitions = len(topic.partitions)
    rf = max((len(p.replicas) for p in topic.partitions.values()), default=0)
    wanted = dict(props.get("config") or {})
    config: dict[str, str] = {}
    if wanted:
        res = ConfigResource(ResourceType.TOPIC, props["name"])
        entries = admin.describe_configs([res])[res].result(timeout=timeout_s)
        config = {k: entries[k].value for k in wanted if k in entries}
    return {"partitions": partitions, "replication_factor": rf, "config": config}


def _error_name(error: Any) -> str:
    name = getattr(error, "name", None)
    return name() if callable(name) else str(error)


def _where(props: Mapping[str, Any]) -> str:
    return f"topic {props.get('name', '?')!r} on cluster {props.get('cluster', '?')!r}"


def _count(props: Mapping[str, Any], key: str) -> int | None:
    """`props[key]` as an int, None when absent or not a whole number."""
    try:
        return int(props[key])
    except (KeyError, TypeError, ValueError):
        return None


class TopicProvider(ResourceProvider):
    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        partitions, rf = _count(news, "partitions"), _count(news, "replication_factor")
        failures = []
        if partitions is None or partitions < 1:
            failures.append(
                CheckFailure(
                    "partitions",
                    f"{_where(news)}: partitions must be a whole number of at least 1, got "
                    f"{news.get('partitions')!r}. Fix: set topics.<name>.partitions to e.g. 3.",
                )
            )
        if rf is None or rf < 1:
            failures.append(
                CheckFailure(
                    "replication_factor",
                    f"{_where(news)}: the replication factor must be a whole number of at least 1, got "
                    f"{news.get('replication_factor')!r}. Fix: set it to at most the cluster's broker count.",
                )
            )
        old_partitions, old_rf = _count(olds, "partitions"), _count(olds, "replication_factor")
        if partitions is not None and old_partitions is not None and partitions < old_partitions:
            failures.append(
                CheckFailure(
                    "partitions",
                    f"{_where(news)}: Kafka cannot reduce partitions ({old_partitions} -> {partitions}) "
                    "without deleting the topic and its data. Fix: keep the partition count, or create a new topic.",
                )
            )
        if rf is not None and old_rf is not None and rf != old_rf:
            failures.append(
                CheckFailure(
                    "replication_factor",
                    f"{_where(news)}: changing the replication factor needs a partition reassignment "
                    "(kafka-reassign-partitions), which this tool does not do; replacing the topic would "
                    "delete its data. Fix: restore the previous value, then reassign by hand.",
                )
            )
        return CheckResult(news, failures)

    def create(self, props: dict[str, Any]) -> CreateResult:
        from confluent_kafka.admin import NewTopic

        existing = _describe(props)
        if existing is None:
            topic = NewTopic(
                props["name"],
                num_partitions=int(props["partitions"]),
                replication_factor=int(props["replication_factor"]),
                config=dict(props.get("config") or {}),
            )
            # Keep the client referenced until the future resolves: a collected client aborts it.
            admin = _admin(props)
            future = admin.create_topics([topic], operation_timeout=ADMIN_TIMEOUT_S)[props["name"]]
            try:
                future.result(timeout=ADMIN_TIMEOUT_S)
            except Exception as exc:
                raise TopicError(f"{_where(props)}: create failed: {exc}") from exc
        elif existing["partitions"] != int(props["partitions"]):
            # Adopting a topic that exists with another shape would silently diverge from the config.
            raise TopicError(
                f"{_where(props)} already exists with {existing['partitions']} partitions, config says "
                f"{props['partitions']}. Fix: set partitions to {existing['partitions']} in the stack config, "
                "or `pulumi import` it."
            )
        return CreateResult(id_=f"{props.get('cluster', '')}/{props['name']}", outs=props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        keys = ("partitions", "replication_factor", "config")
        changed = [k for k in keys if olds.get(k) != news.get(k)]
        # A rotated admin password is an update too, so delete later uses the current one.
        if plain(olds.get("client")) != plain(news.get("client")):
            changed.append("client")
        replaces = [k for k in ("name", "bootstrap") if olds.get(k) != news.get(k)]
        return DiffResult(changes=bool(changed or replaces), replaces=replaces, delete_before_replace=True)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        admin = _admin(news)
        if int(news["partitions"]) > int(olds["partitions"]):
            _apply(news, "adding partitions", lambda: _add_partitions(admin, news))
        if olds.get("config") != news.get("config"):
            _apply(news, "changing its config", lambda: _alter_config(admin, olds, news))
        return UpdateResult(outs=news)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        try:
            live = _describe(props, READ_TIMEOUT_S)
        except Exception:
            return ReadResult(id_=id_, outs=props)
        if live is None:
            return ReadResult(id_="", outs={})
        return ReadResult(id_=id_, outs={**props, **{k: v for k, v in live.items() if k != "config" or v}})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        admin = _admin(props)
        try:
            fut = admin.delete_topics([props["name"]], operation_timeout=ADMIN_TIMEOUT_S)[props["name"]]
            fut.result(timeout=ADMIN_TIMEOUT_S)
        except Exception as exc:
            if "UNKNOWN_TOPIC" in str(exc):
                return
            try:
                admin.list_topics(props["name"], timeout=READ_TIMEOUT_S)
            except Exception:
                raise ClusterUnreachable(
                    f"{_where(props)}: not deleted: the cluster at {props.get('bootstrap')} does not answer ({exc}). "
                    "Fix: start it and run the command again; if it is gone for good, drop the topic from the stack "
                    "with `pulumi state delete <urn of the topic>`."
                ) from None
            raise TopicError(f"{_where(props)}: delete failed: {exc}") from exc


def _apply(props: Mapping[str, Any], what: str, change: Any) -> None:
    """Run one Admin change; a refusal becomes a TopicError naming the topic, the step and the fix."""
    try:
        change()
    except Exception as exc:
        raise TopicError(
            f"{_where(props)}: {what} failed: {exc}. The topic keeps its previous shape for what did not "
            "apply. Fix: check the stack admin user's ALTER/ALTER_CONFIGS rights and the value, then "
            "run `pulumi up` again."
        ) from exc


def _add_partitions(admin: Any, props: Mapping[str, Any]) -> None:
    from confluent_kafka.admin import NewPartitions

    fut = admin.create_partitions([NewPartitions(props["name"], int(props["partitions"]))])[props["name"]]
    fut.result(timeout=ADMIN_TIMEOUT_S)


def _alter_config(admin: Any, olds: Mapping[str, Any], news: Mapping[str, Any]) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    old_cfg, new_cfg = dict(olds.get("config") or {}), dict(news.get("config") or {})
    ops = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in new_cfg.items()]
    ops += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in old_cfg if k not in new_cfg]
    res = ConfigResource(ResourceType.TOPIC, news["name"], incremental_configs=ops)
    admin.incremental_alter_configs([res])[res].result(timeout=ADMIN_TIMEOUT_S)


class Topic(Resource, module="kafka", name="Topic"):
    """A topic the stack owns on one cluster."""

    def __init__(
        self,
        resource_name: str,
        *,
        cluster: str,
        bootstrap: pulumi.Input[str],
        name: str,
        partitions: int,
        replication_factor: int,
        config: Mapping[str, str] | None = None,
        client: pulumi.Input[Mapping[str, str]] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        # `client` authenticates the stack's admin: stored encrypted, inputs and outputs alike.
        opts = pulumi.ResourceOptions.merge(pulumi.ResourceOptions(additional_secret_outputs=["client"]), opts)
        super().__init__(
            TopicProvider(),
            resource_name,
            {
                "cluster": cluster,
                "bootstrap": bootstrap,
                "name": name,
                "partitions": partitions,
                "replication_factor": replication_factor,
                "config": dict(config or {}),
                "client": pulumi.Output.secret(client or {}),
            },
            opts,
        )
