"""Two single-node KRaft clusters (source `primary`, target `dr`) on loopback, always stopped.

Started with the local platform's own process code (components/platform/local/process.py), the way
tests/integration/test_spark_validation.py starts its brokers: a marker per JVM, free ports,
bounded readiness wait, and on exit (also on failure or Ctrl-C) every marked JVM is stopped and its
data directory removed.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.platform.local import process as proc
from components.platform.readiness import kafka_answers
from tests.integration.harness import free_port_block

ALIASES = ("primary", "dr")
READY_TIMEOUT_S = 120


@dataclass(frozen=True)
class Broker:
    alias: str
    bootstrap: str
    marker: str
    run_dir: str

    def pids(self) -> list[int]:
        return proc.find_pids(self.marker)


def broker_properties(port: int, data_dir: str) -> dict[str, str]:
    """Single-node broker+controller, PLAINTEXT on loopback, replication factor 1 everywhere."""
    return {
        "process.roles": "broker,controller",
        "node.id": "0",
        "controller.quorum.voters": f"0@127.0.0.1:{port + 1}",
        "listeners": f"CLIENT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{port + 1}",
        "advertised.listeners": f"CLIENT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "CLIENT",
        "listener.security.protocol.map": "CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": data_dir,
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "false",
    }


@contextmanager
def clusters(root: Path, heap: str = "1g") -> Iterator[dict[str, Broker]]:
    """Start `primary` and `dr`; yields {alias: Broker}. Everything is stopped on the way out."""
    libs = os.environ.get("MM2_KAFKA_LIBS")
    if not libs:
        raise SystemExit("MM2_KAFKA_LIBS not set: run `source .mm2/env` first")
    tag = uuid.uuid4().hex[:8]
    specs: list[proc.JvmSpec] = []
    started: dict[str, Broker] = {}
    try:
        for alias in ALIASES:
            port = free_port_block(2)
            run_dir = str(root / alias)
            spec = proc.JvmSpec(
                component=f"bench broker {alias}",
                marker=f"mm2-bench-validation-{tag}/{alias}",
                main_class="kafka.Kafka",
                classpath_dir=libs,
                run_dir=run_dir,
                properties=broker_properties(port, f"{run_dir}/data"),
                heap=heap,
                java=proc.find_java(),
            )
            specs.append(spec)
            proc.prepare_run_dir(spec)
            proc.format_storage(spec, "YmVuY2h2YWxpZGF0aW9uMA")
            pid = proc.start(spec)
            bootstrap = f"127.0.0.1:{port}"
            proc.wait_ready(spec, pid, lambda b=bootstrap: kafka_answers(b, {}), READY_TIMEOUT_S)  # type: ignore[misc]
            started[alias] = Broker(alias, bootstrap, spec.marker, run_dir)
        yield started
    finally:
        for spec in specs:
            proc.stop(spec.marker, grace_s=20)
            proc.remove_run_dir(spec.run_dir)
        left = [s.marker for s in specs if proc.find_pids(s.marker)]
        if left:
            raise RuntimeError(f"brokers still running after stop: {left}")


def admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import NewTopic

    client = admin(bootstrap)  # keep a reference: a collected client cancels its futures
    for fut in client.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=30).values():
        fut.result(timeout=60)


def delete_topic(bootstrap: str, topic: str) -> None:
    client = admin(bootstrap)
    for fut in client.delete_topics([topic], operation_timeout=30).values():
        fut.result(timeout=60)
