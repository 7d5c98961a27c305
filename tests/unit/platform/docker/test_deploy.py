"""The docker platform under Pulumi's mocks: what `DockerBackend` registers for brokers and workers."""

from __future__ import annotations

from typing import Any

import pulumi

from components.platform.contract import BrokerRequest, WorkerRequest
from components.platform.docker.deploy import DockerBackend
from components.platform.settings import docker_settings
from tests.unit.mocks import RecordingMonitor

from ..helpers import DOCKER, SECRET_VALUES, topology
from ..mocks import Parent, regs, settle, states, urn_of

CONTAINER = "pulumi-python:dynamic/docker:Container"


@pulumi.runtime.test
def test_docker_backend_graph(monitor: RecordingMonitor) -> Any:
    topo = topology(DOCKER)
    # Plain on purpose: files rendered from secrets must be marked secret regardless.
    backend = DockerBackend(
        docker_settings({"image": "mm2-iac/kafka:4.3.1"}), "unit", SECRET_VALUES, lock_root="/run/unit"
    )
    secrets = pulumi.Output.from_input(SECRET_VALUES)
    kafka2 = Parent("mm2:index:KafkaCluster", "kafka-kafka2")
    brokers = backend.deploy_brokers(kafka2, "kafka-kafka2", BrokerRequest(topo.clusters["kafka2"], secrets, secrets))
    group = Parent("mm2:index:ConnectWorkerGroup", "connect-connect")
    workers = backend.deploy_workers(
        group, "connect-connect", WorkerRequest(topo.worker_groups["connect"], topo, secrets, kafka2)
    )

    def check(_: Any) -> None:
        r = regs(monitor)
        containers = {n: x for n, x in r.items() if x.type == CONTAINER}
        assert set(containers) == {
            "kafka-kafka2-broker-0",
            "kafka-kafka2-broker-1",
            "connect-connect-worker-0",
            "connect-connect-worker-1",
        }
        for name, c in containers.items():
            owner = "kafka-kafka2" if name.startswith("kafka") else "connect-connect"
            assert c.parent == urn_of(monitor, owner)
            # Secret files and the readiness probe's credentials are stored encrypted.
            assert {".secret_files", ".ready"} <= set(c.secret_paths), name
        # Workers wait for the storage cluster (the engine expands the component to its children).
        brokers = {urn_of(monitor, f"kafka-kafka2-broker-{i}") for i in (0, 1)}
        assert brokers <= set(containers["connect-connect-worker-0"].dependencies)
        state = states(monitor)
        for name in containers:
            assert state[name]["restart"] == "unless-stopped" and state[name]["stack"] == "unit"
            assert state[name]["image"] == "mm2-iac/kafka:4.3.1"
            visible = repr({k: state[name][k] for k in ("env", "command", "uploads")})
            assert not any(v in visible for v in SECRET_VALUES.values()), name
        assert state["kafka-kafka2-broker-1"]["volume"] == "mm2-unit-kafka2-1-data"
        assert state["kafka-kafka2-broker-1"]["config_key"] == "mm2:clusters.kafka2.port"
        # Two brokers and two workers: each group restarts one container at a time.
        assert state["connect-connect-worker-1"]["rolling"] == {
            "lock": "/run/unit/docker/connect-connect",
            "processes": 2,
        }
        assert state["kafka-kafka2-broker-1"]["rolling"]["node_id"] == 1

    return settle([], [*brokers.resources, *workers.resources]).apply(check)
