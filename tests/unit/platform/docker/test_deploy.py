"""The docker platform under Pulumi's mocks: what `DockerBackend` registers for brokers and workers."""

from __future__ import annotations

from typing import Any

import pulumi

from components.platform.contract import BrokerRequest, WorkerRequest
from components.platform.docker.deploy import DockerBackend
from components.platform.settings import docker_settings
from tests.unit.mocks import RecordingMonitor

from ..helpers import DOCKER, SECRET_VALUES, topology
from ..mocks import Parent, regs, settle, urn_of


@pulumi.runtime.test
def test_docker_backend_graph(monitor: RecordingMonitor) -> Any:
    topo = topology(DOCKER)
    # Plain on purpose: uploads rendered from secrets must be marked secret regardless.
    backend = DockerBackend(docker_settings({"image": "registry.example.com/kafka:4.3.1"}), "unit", SECRET_VALUES)
    secrets = pulumi.Output.from_input(SECRET_VALUES)
    kafka2 = Parent("mm2:index:KafkaCluster", "kafka-kafka2")
    brokers = backend.deploy_brokers(kafka2, "kafka-kafka2", BrokerRequest(topo.clusters["kafka2"], secrets, secrets))
    group = Parent("mm2:index:ConnectWorkerGroup", "connect-connect")
    workers = backend.deploy_workers(
        group, "connect-connect", WorkerRequest(topo.worker_groups["connect"], topo, secrets, kafka2)
    )

    def check(_: Any) -> None:
        r = regs(monitor)
        containers = {n: x for n, x in r.items() if x.type == "docker:index/container:Container"}
        assert set(containers) == {
            "kafka-kafka2-broker-0",
            "kafka-kafka2-broker-1",
            "connect-connect-worker-0",
            "connect-connect-worker-1",
        }
        assert not any(x.type == "docker:index/network:Network" for x in r.values())  # host network only
        for name, c in containers.items():
            owner = "kafka-kafka2" if name.startswith("kafka") else "connect-connect"
            assert c.parent == urn_of(monitor, owner)
            # Secret files reach the containers only as uploads marked secret.
            assert c.secret_paths and all(p.startswith(".uploads") for p in c.secret_paths)
        # Workers wait for the storage cluster (the engine expands the component to its children).
        brokers = {urn_of(monitor, f"kafka-kafka2-broker-{i}") for i in (0, 1)}
        assert brokers <= set(containers["connect-connect-worker-0"].dependencies)
        state = {u.rsplit("::", 1)[-1]: s.state for u, s in monitor.resources.items()}
        for name in containers:
            assert state[name]["networkMode"] == "host"
            assert state[name]["restart"] == "unless-stopped"
            assert state[name]["labels"] == [{"label": "mm2.io/stack", "value": "unit"}]
            for env in state[name].get("envs", []) or []:
                assert not any(v in env for v in SECRET_VALUES.values()), name
        assert state["kafka-kafka2-image"]["name"] == "registry.example.com/kafka:4.3.1"
        assert state["kafka-kafka2-broker-1-data"]["name"] == "mm2-unit-kafka2-1-data"

    return settle([], [*brokers.resources, *workers.resources]).apply(check)
