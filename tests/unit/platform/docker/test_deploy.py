"""The docker platform under Pulumi's mocks: what `deploy_docker` registers."""

from __future__ import annotations

from typing import Any

import pulumi

from components.platform.docker.deploy import deploy_docker
from components.platform.settings import docker_settings

from ..helpers import DOCKER, SECRET_VALUES, topology
from ..mocks import Parent, RecordingMonitor, regs, settle, urn_of


@pulumi.runtime.test
def test_docker_single_host_graph(monitor: RecordingMonitor) -> Any:
    topo = topology(DOCKER)
    parent = Parent("mm2:index:Platform", "docker")
    deployment = deploy_docker(
        parent,
        "docker",
        topo,
        stack="unit",
        settings=docker_settings({"kafkaUi": {"enabled": True}}),
        # Plain on purpose: uploads rendered from secrets must be marked secret regardless.
        secret_values=SECRET_VALUES,
    )
    assert set(deployment.clusters) == {"kafka1", "kafka2"}
    assert deployment.kafka_ui is not None

    def check(_: Any) -> None:
        r = regs(monitor)
        containers = {n: x for n, x in r.items() if x.type == "docker:index/container:Container"}
        assert set(containers) == {
            "docker-kafka1-broker-0",
            "docker-kafka2-broker-0",
            "docker-kafka2-broker-1",
            "docker-connect-connect-worker-0",
            "docker-connect-connect-worker-1",
            "docker-kafka-ui",
        }
        assert r["docker-network"].type == "docker:index/network:Network"
        for c in containers.values():
            assert c.parent == urn_of(monitor, "docker")
            # Secret files reach the containers only as uploads marked secret.
            assert c.secret_paths and all(p.startswith(".uploads") for p in c.secret_paths)
        worker_deps = set(containers["docker-connect-connect-worker-0"].dependencies)
        assert {urn_of(monitor, n) for n in ("docker-kafka1-broker-0", "docker-kafka2-broker-1")} <= worker_deps
        ui_deps = set(containers["docker-kafka-ui"].dependencies)
        assert urn_of(monitor, "docker-connect-connect-worker-1") in ui_deps
        state = {u.rsplit("::", 1)[-1]: s.state for u, s in monitor.resources.items()}
        broker = state["docker-kafka2-broker-1"]
        assert broker["ports"] == [{"internal": 9092, "external": 29194, "ip": "127.0.0.1"}]
        assert broker["networksAdvanced"][0]["aliases"] == ["mm2-unit-kafka2-1"]
        assert state["docker-connect-connect-worker-0"]["networkMode"] == "host"
        for name, s in state.items():
            for env in s.get("envs", []) or []:
                assert not any(v in env for v in SECRET_VALUES.values()), name

    everything: list[pulumi.Resource] = [deployment.network]
    for part in (*deployment.clusters.values(), *deployment.groups.values()):
        everything += part.resources
    if deployment.kafka_ui is not None:
        everything.append(deployment.kafka_ui)
    return settle([deployment.network.name], everything).apply(check)
