"""The kubernetes platform under Pulumi's mocks: the autoRestart watcher's objects."""

from __future__ import annotations

import copy
from typing import Any

import pulumi

from components.platform.contract import WorkerRequest
from components.platform.kubernetes.helper_deploy import deploy_watcher_kubernetes
from components.platform.settings import KubernetesSettings, kubernetes_settings
from tests.unit.mocks import RecordingMonitor

from ..helpers import SASL_KUBERNETES, SECRET_VALUES, topology
from ..mocks import Parent, regs, settle, states, urn_of


def request(auto_restart: dict[str, Any] | None) -> WorkerRequest:
    config = copy.deepcopy(SASL_KUBERNETES)
    if auto_restart is not None:
        for flow in config["flows"].values():
            flow["autoRestart"] = auto_restart
    topo = topology(config)
    parent = Parent("mm2:index:KafkaCluster", "kafka-b")
    return WorkerRequest(topo.worker_groups["mm2"], topo, pulumi.Output.secret(SECRET_VALUES), parent)


@pulumi.runtime.test
def test_auto_restart_renders_the_watcher_with_its_password_secret(monitor: RecordingMonitor) -> Any:
    parent = Parent("mm2:index:ConnectWorkerGroup", "connect-mm2")
    resources = deploy_watcher_kubernetes(
        parent,
        "connect-mm2",
        request({"enabled": True, "maxRestarts": 3}),
        kubernetes_settings({"namespace": "kafka", "connect": {"watcherImage": "registry.internal/python:3.11-slim"}}),
        SECRET_VALUES,
    )

    def check(_: Any) -> None:
        r = regs(monitor)
        children = {n: x.type for n, x in r.items() if x.parent == urn_of(monitor, "connect-mm2")}
        assert children == {
            "connect-mm2-watcher-rest": "kubernetes:core/v1:Secret",
            "connect-mm2-watcher-config": "kubernetes:core/v1:ConfigMap",
            "connect-mm2-watcher": "kubernetes:apps/v1:Deployment",
            "connect-mm2-watcher-pods-started": "pulumi-python:dynamic/kubernetes:PodsStarted",
        }
        assert r["connect-mm2-watcher-rest"].secret_paths, "the REST password must be stored as a secret"
        # Its pod not placed or not started is reported at once: its requests are fixed, its image is a setting.
        watch = states(monitor)["connect-mm2-watcher-pods-started"]
        assert (watch["what"], watch["resources_key"], watch["replicas"]) == ("the auto-restart watcher of mm2", "", 1)
        assert watch["image_key"] == "mm2-platform:kubernetes.connect.watcherImage"
        assert urn_of(monitor, "connect-mm2-watcher") not in r["connect-mm2-watcher-pods-started"].dependencies
        assert urn_of(monitor, "connect-mm2-watcher-config") in r["connect-mm2-watcher"].dependencies
        state = states(monitor)
        plan = state["connect-mm2-watcher-config"]["data"]["plan.json"]
        assert '"url": "http://mm2-connect-api.kafka.svc:8083"' in plan and '"maxRestarts": 3' in plan
        (container,) = state["connect-mm2-watcher"]["spec"]["template"]["spec"]["containers"]
        assert container["image"] == "registry.internal/python:3.11-slim"  # a mirror, for an air-gapped cluster

    return settle([], resources).apply(check)


@pulumi.runtime.test
def test_no_auto_restart_no_watcher(monitor: RecordingMonitor) -> Any:
    parent = Parent("mm2:index:ConnectWorkerGroup", "connect-mm2")
    assert deploy_watcher_kubernetes(parent, "connect-mm2", request(None), KubernetesSettings(), SECRET_VALUES) == []
