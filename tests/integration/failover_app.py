"""A cluster pair (`mm2:failover.primary<->dr`) and the application that uses it, for the tests that
switch it over: the app principal's SCRAM user and grants, its producer (until the fence refuses
it) and its consumer group, and the pair's state as the stack exports it."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import httpx

from components.ops.failover import read_latest_checkpoints
from components.outputs.contract import StackExports
from tests.integration.app_user import add_scram_user
from tests.integration.harness import (
    TestStack,
    connect_auth,
    dev_config_with_free_ports,
    kafka_conf,
    wait_until,
)

PAIR = "primary<->dr"
GROUP = "billing"
APP = "app"
APP_PASSWORD = f"app-{uuid.uuid4().hex}"
LAG_MAX = 100
BOUND_S = 180


def pair_config() -> dict[str, Any]:
    cfg = dev_config_with_free_ports()
    config = cfg["config"]
    config["mm2:workerGroups"]["mm2"]["workers"] = 1
    config["mm2:clusters"]["primary"]["topics"] = {"orders": {"partitions": 2}}
    config["mm2:clusters"]["dr"]["topics"] = {"orders": {"partitions": 2}}
    forward = config["mm2:flows"]["primary->dr"]
    forward["topics"] = ["orders"]
    forward["tasksMax"] = 1
    config["mm2:flows"]["dr->primary"] = {**forward, "disasterRecovery": True}
    pair = {"active": "primary", "principals": [APP], "groups": [GROUP], "drainTimeout": "90s"}
    config["mm2:failover"] = {PAIR: pair}
    return cfg


def app_conf(outputs: dict[str, Any], alias: str, **extra: Any) -> dict[str, Any]:
    return kafka_conf(outputs, alias, **{"sasl.username": APP, "sasl.password": APP_PASSWORD, **extra})


def add_app_principal(outputs: dict[str, Any], alias: str) -> None:
    """The application's SCRAM user and its grants, made behind the stack's back as a team would."""
    grants = [("TOPIC", "*", "LITERAL", op) for op in ("WRITE", "READ", "DESCRIBE")] + [
        ("GROUP", "*", "LITERAL", "READ")
    ]
    add_scram_user(outputs, alias, APP, APP_PASSWORD, grants, iterations=4096)


def produce_as_app(outputs: dict[str, Any], alias: str, topic: str, keys: list[bytes]) -> list[str]:
    """Produce as the application; the errors of the records the brokers refused."""
    from confluent_kafka import Producer

    errors: list[str] = []
    producer = Producer(app_conf(outputs, alias, **{"message.timeout.ms": 15000}))
    for key in keys:
        producer.produce(topic, key=key, value=key, on_delivery=lambda err, _m: err and errors.append(str(err)))
    producer.flush(30)
    return errors


class App:
    """The application: a producer writing to `orders` as the app principal until the fence
    refuses it, and the consumer group reading; what each acknowledged and saw."""

    def __init__(self, outputs: dict[str, Any], alias: str, prefix: str) -> None:
        self.outputs, self.alias, self.prefix = outputs, alias, prefix
        self.acked: list[bytes] = []
        self.refused: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._produce, daemon=True)
        self.started = self.ended = 0.0

    def per_second(self) -> float:
        return len(self.acked) / max(self.ended - self.started, 1e-3)

    def _produce(self) -> None:
        from confluent_kafka import Producer

        def delivered(err: Any, msg: Any) -> None:
            if err is None:
                self.acked.append(msg.key())
            else:
                self.refused.append(str(err))

        producer = Producer(app_conf(self.outputs, self.alias, **{"linger.ms": 5, "message.timeout.ms": 10000}))
        self.started = time.monotonic()
        i = 0
        while not self.stop.is_set() and not self.refused:
            producer.produce("orders", key=f"{self.prefix}-{i}".encode(), value=b"v", on_delivery=delivered)
            producer.poll(0.05)
            i += 1
        producer.flush(30)
        self.ended = time.monotonic()


def at_end(consumer: Any) -> bool:
    """Whether the consumer's position is at the end of every partition assigned to it."""
    assigned = consumer.assignment()
    if not assigned:
        return False
    for tp in consumer.committed(assigned, timeout=10):
        end = consumer.get_watermark_offsets(tp, timeout=10, cached=False)[1]
        if tp.offset < end:
            return False
    return True


def consume(
    outputs: dict[str, Any], alias: str, topics: list[str], until: Any, timeout_s: float, to_end: bool = False
) -> list[bytes]:
    """Group GROUP reads `topics` on `alias` as the app, committing every record, until `until(seen)`
    and, with `to_end`, until its committed position is at the end of every partition."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        app_conf(outputs, alias, **{"group.id": GROUP, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    )
    consumer.subscribe(topics)
    seen: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if until(seen) and (not to_end or at_end(consumer)):
                break
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.append(msg.key())
                consumer.commit(msg, asynchronous=False)
    finally:
        consumer.close()
    return seen


def wait_checkpointed(outputs: dict[str, Any], side: str, other: str) -> None:
    """Until the flow side->other's checkpoints topic holds one for GROUP: what a switchover reads
    (MM2's own offset sync may commit on `other` before the checkpoint record is written)."""
    exports = StackExports.from_json(outputs)

    def found() -> bool:
        latest = read_latest_checkpoints(exports, other, f"{side}.checkpoints.internal", 10) or {}
        return any(g == GROUP and t == f"{side}.orders" for g, t, _p in latest)

    wait_until(found, BOUND_S, f"MM2 to checkpoint group {GROUP} onto {other}")


def switch(stack: TestStack, active: str, **pair: Any) -> None:
    declared = stack.config["config"]["mm2:failover"][PAIR]
    declared.update({"active": active, **pair})
    for key in [k for k, v in declared.items() if v is None]:
        declared.pop(key)
    stack.write_config()


def diff_preview(stack: TestStack) -> str:
    """`pulumi preview --diff` as a terminal shows it: diagnostics (the plan) go to stderr."""
    out = stack.pulumi("preview", "--diff")
    return out.stdout + out.stderr


def pair_state(stack: TestStack) -> dict[str, Any]:
    return dict(stack.outputs()["failover"][PAIR])


def connector_states(stack: TestStack, flow: str) -> dict[str, str]:
    out = stack.outputs()
    url, auth = out["connect"]["mm2"]["url"], connect_auth(out)
    names = out["flows"][flow]["connectors"].values()
    status = {n: httpx.get(f"{url}/connectors/{n}/status", auth=auth, timeout=10).json() for n in names}
    return {n: s["connector"]["state"] for n, s in status.items()}


def use_on(stack: TestStack, side: str) -> None:
    """The application on `side`: a few records written, the group reading its topics there to the
    end, until MM2 has checkpointed the group onto the other side (a switchover can move it)."""
    other = "dr" if side == "primary" else "primary"
    outputs = stack.outputs()
    keys = [f"use-{side}-{uuid.uuid4().hex[:6]}-{i}".encode() for i in range(4)]
    assert produce_as_app(outputs, side, "orders", keys) == []
    read = consume(
        outputs, side, [f"{other}.orders", "orders"], lambda seen: set(keys) <= set(seen), BOUND_S, to_end=True
    )
    assert set(keys) <= set(read)
    wait_checkpointed(outputs, side, other)
