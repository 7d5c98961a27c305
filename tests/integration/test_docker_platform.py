"""The docker platform's containers on a real Docker engine (Debian's dockerd, started here).

Exactly the container specs the project renders for a two-cluster SCRAM stack (one broker per
cluster, two Connect workers with REST basic auth and the file config provider's secret files)
run from the image `bin/bootstrap --images` built, on the host network at loopback ports. The
flow's connectors are created through the project's own Connect client, records replicate, and
the Spark stage passes. Then a worker is killed: the flow keeps replicating on the other, nothing
is lost, and the engine treats each stop the way the specs' restart policy says.

What stays unit-only is the pulumi_docker wiring (`platform/docker/deploy.py`): its provider
plugin is not obtainable here (the Go module proxy refuses pulumi-docker's provider module).
"""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from components.connect.client import ConnectClient
from components.outputs.contract import ClusterExport, ConnectGroupExport
from components.platform.docker.engine import DockerEngine, missing_images
from components.platform.docker.specs import (
    RESTART_POLICY,
    ContainerSpec,
    docker_broker_specs,
    docker_connect_specs,
)
from components.platform.image_layout import KAFKA_IMAGE, WATCHER_IMAGE
from components.platform.kubernetes.watcher_objects import CODE_DIR, WATCHER_PACKAGES, WATCHER_SOURCES
from components.platform.settings import DockerSettings
from components.replication_flow import flow_export
from components.topology import bootstrap_servers, parse_topology, worker_rest_urls
from components.topology.connectors import flow_connectors
from components.topology.model import Topology
from components.topology.security import librdkafka_client
from tests.integration.dockerd import running_dockerd
from tests.integration.harness import (
    all_running,
    free_port_block,
    kafka_conf,
    kafka_retrying,
    produce_batch,
    read_keys,
    stays_false,
    wait_until,
)
from tests.integration.validation_stage import run_stage

STACK = "dockerit"
FLOW = "a->b"
# A space, `$` and `!`: the secret files, the start script's SCRAM format step and the JAAS
# configs must carry them intact.
SECRETS = {
    "a.mm2.password": "pw-a Zr71$!x",
    "b.mm2.password": "pw-b-Zr72",
    "connect.rest.password": "rest-Zr73",
}
SETTINGS = DockerSettings(broker_heap="256m", connect_heap="384m")


def _cluster(port: int, password_key: str) -> dict[str, Any]:
    return {
        "platform": "docker",
        "brokers": 1,
        "port": port,
        "security": {
            "protocol": "SASL_PLAINTEXT",
            "saslMechanism": "SCRAM-SHA-512",
            "username": "mm2",
            "password": {"secret": password_key},
        },
    }


def _topology() -> Topology:
    a, b, rest = free_port_block(2), free_port_block(2), free_port_block(2)
    source = {**_cluster(a, "a.mm2.password"), "topics": {"orders": {"partitions": 3}}}
    return parse_topology(
        {
            "clusters": {"a": source, "b": _cluster(b, "b.mm2.password")},
            "workerGroups": {"connect": {"cluster": "b", "workers": 2, "restPort": rest, "restAuth": True}},
            "flows": {FLOW: {"topics": ["orders"]}},
        }
    )


@dataclass
class Deployment:
    engine: DockerEngine
    topology: Topology
    outputs: dict[str, Any]
    workers: tuple[str, ...]  # container names, worker 0 first

    def client(self) -> ConnectClient:
        urls = worker_rest_urls(self.topology.worker_groups["connect"])
        auth = ("mm2-admin", SECRETS["connect.rest.password"])
        return ConnectClient(urls[-1], auth=auth, other_urls=urls[:-1], retry_budget_s=20)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    with running_dockerd(load=(KAFKA_IMAGE, WATCHER_IMAGE)) as engine:
        topology = _topology()
        for alias in ("a", "b"):
            for spec in docker_broker_specs(topology.clusters[alias], STACK, SETTINGS):
                engine.run_container(spec, SECRETS)
        outputs = _outputs(topology)
        for alias in ("a", "b"):
            _wait_for_broker(engine, outputs, alias)
        _create_topic(outputs, "a", "orders", 3)
        group = topology.worker_groups["connect"]
        workers = docker_connect_specs(group, topology, STACK, SETTINGS)
        for spec in workers:
            engine.run_container(spec, SECRETS)
        deployed = Deployment(engine, topology, outputs, tuple(s.name for s in workers))
        flow = topology.flow(FLOW)
        specs = flow_connectors(topology, flow)
        with deployed.client() as client:
            wait_until(lambda: _answers(topology, 0, 1), 180, "both Connect workers' REST API (basic auth)")
            for spec in specs.all():
                client.create(spec.name, spec.config)
            wait_until(lambda: _all_running(client, specs), 180, "the flow's connectors and tasks RUNNING")
        outputs["flows"] = {FLOW: flow_export(flow, topology, specs, {s.name: "RUNNING" for s in specs.all()})}
        yield deployed


def test_containers_carry_the_specs_and_no_secret_in_their_config(deployment: Deployment) -> None:
    engine = deployment.engine
    for name in (f"mm2-{STACK}-a-0", f"mm2-{STACK}-b-0", *deployment.workers):
        info = engine.inspect(name)
        assert info["HostConfig"]["NetworkMode"] == "host"
        assert info["HostConfig"]["RestartPolicy"]["Name"] == RESTART_POLICY
        assert info["Config"]["User"] == "1000:1000"  # the image's user, not root
        assert info["State"]["Running"], engine.logs(name)
        visible = repr({k: info["Config"][k] for k in ("Env", "Cmd", "Labels")})
        assert not any(secret in visible for secret in SECRETS.values()), name


def test_records_replicate_and_the_stage_passes(deployment: Deployment, tmp_path: Path) -> None:
    _replicates(deployment, "first", 300)
    run = run_stage(deployment.outputs, tmp_path / "r.json", os.environ)
    assert run.code == 0, run.summary()
    assert run.report["flows"][FLOW]["topics"]["orders"]["checks"]["completeness"]["status"] == "pass"


def test_a_killed_worker_stays_down_and_its_tasks_move(deployment: Deployment, tmp_path: Path) -> None:
    engine, (killed, survivor) = deployment.engine, deployment.workers
    survivor_id = _worker_id(deployment.topology, 1)
    engine.kill(killed)  # `docker kill`: a stop on purpose
    # unless-stopped: a container stopped on purpose stays stopped (it is not a crash).
    stays_false(lambda: engine.inspect(killed)["State"]["Running"], 15, f"{killed} came back after docker kill")
    with deployment.client() as client:
        specs = flow_connectors(deployment.topology, deployment.topology.flow(FLOW))
        wait_until(
            lambda: _all_running(client, specs, on=survivor_id), 120, f"every task of the flow running on {survivor}"
        )
    _replicates(deployment, "after-kill", 200)
    run = run_stage(deployment.outputs, tmp_path / "r.json", os.environ)
    assert run.code == 0, run.summary()
    engine.start(killed)  # started again on purpose: it rejoins the group
    wait_until(lambda: _answers(deployment.topology, 0), 120, f"{killed} answering again")


def test_a_crashed_worker_is_restarted_by_the_engine(deployment: Deployment) -> None:
    engine, (_, crashing) = deployment.engine, deployment.workers
    before = engine.inspect(crashing)
    os.kill(before["State"]["Pid"], signal.SIGKILL)  # the JVM dies on its own, as on an OOM kill
    wait_until(
        lambda: (s := engine.inspect(crashing))["RestartCount"] > before["RestartCount"] and s["State"]["Running"],
        60,
        f"the engine restarting {crashing} ({RESTART_POLICY})",
    )
    assert engine.inspect(crashing)["State"]["Pid"] != before["State"]["Pid"]
    wait_until(lambda: _answers(deployment.topology, 1), 120, f"{crashing} answering again")
    _replicates(deployment, "after-crash", 100)


def test_an_image_missing_from_the_engine_is_named_with_the_command_that_builds_it(deployment: Deployment) -> None:
    assert missing_images(deployment.engine, [KAFKA_IMAGE]) == []
    [problem] = missing_images(deployment.engine, ["mm2-iac/kafka:0.0.0-absent"])
    assert "mm2-iac/kafka:0.0.0-absent" in problem and "bin/bootstrap --images" in problem


def test_the_watcher_image_runs_the_watchers_modules_with_the_standard_library_only(deployment: Deployment) -> None:
    """The files the Kubernetes watcher pod mounts, run by the watcher image as the pod runs them."""
    root = Path(__file__).resolve().parents[2]
    files = {f"{CODE_DIR}/{p}": (root / p).read_text() for p in WATCHER_SOURCES}
    files.update({f"{CODE_DIR}/{p}": "" for p in WATCHER_PACKAGES})
    spec = ContainerSpec(
        name=f"mm2-{STACK}-watcher-check",
        image=WATCHER_IMAGE,
        command=("python", "-c", "import components.ops.watcher as w; print(w.__name__)"),
        env={"PYTHONPATH": CODE_DIR},
        uploads=files,
        restart="no",
        stack=STACK,
    )
    engine = deployment.engine
    engine.run_container(spec, {})
    assert engine.wait(spec.name) == 0, engine.logs(spec.name)
    assert engine.logs(spec.name).strip() == "components.ops.watcher"


# --- helpers -------------------------------------------------------------------------------------
def _replicates(deployment: Deployment, prefix: str, count: int) -> None:
    """`count` new records on a.orders all arrive in a.orders on b."""
    keys = [f"{prefix}-{i}-{uuid.uuid4().hex[:6]}".encode() for i in range(count)]
    produce_batch(deployment.outputs, "a", "orders", keys)
    got = read_keys(deployment.outputs, "b", "a.orders", f"{prefix}-".encode(), len(keys), timeout_s=120)
    assert set(got) == set(keys), f"{len(set(keys) - set(got))} of {count} records never arrived on b"


def _outputs(topology: Topology) -> dict[str, Any]:
    """What the program would export for this stack (its clusters and worker group)."""
    clusters = {}
    for alias, cluster in topology.clusters.items():
        password = SECRETS[f"{alias}.mm2.password"]
        clusters[alias] = ClusterExport(
            alias=alias,
            bootstrap=bootstrap_servers(cluster),
            security_protocol=cluster.security.protocol.value,
            sasl_mechanism="SCRAM-SHA-512",
            client=librdkafka_client(cluster.security, "mm2", password),
            users={"mm2": password},
        ).to_json()
    group = topology.worker_groups["connect"]
    auth = {"username": "mm2-admin", "password": SECRETS["connect.rest.password"]}
    connect = ConnectGroupExport("connect", worker_rest_urls(group)[0], "b", auth, None, group.offset_topic)
    return {"clusters": clusters, "connect": {"connect": connect.to_json()}}


def _wait_for_broker(engine: DockerEngine, outputs: dict[str, Any], alias: str) -> None:
    """Until the broker answers a SCRAM client (the user exists from the format step on)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(kafka_conf(outputs, alias))

    def answers() -> bool:
        try:
            return bool(admin.list_topics(timeout=3).brokers)
        except KafkaException:
            return False

    name = f"mm2-{STACK}-{alias}-0"
    try:
        wait_until(answers, 180, f"cluster {alias} answering with SCRAM")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- {name} log ---\n{engine.logs(name)}") from None


def _create_topic(outputs: dict[str, Any], alias: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(kafka_conf(outputs, alias))
    [future] = admin.create_topics([NewTopic(topic, partitions, 1)]).values()
    kafka_retrying(lambda: future.result(30), f"creating {topic} on {alias}")


def _worker_id(topology: Topology, index: int) -> str:
    """Connect's worker id of worker `index`: its advertised REST host:port."""
    return worker_rest_urls(topology.worker_groups["connect"])[index].split("://", 1)[1].rstrip("/")


def _answers(topology: Topology, *indexes: int) -> bool:
    """True when each worker `indexes` answers its REST API itself (with basic auth)."""
    auth = ("mm2-admin", SECRETS["connect.rest.password"])
    for url in [worker_rest_urls(topology.worker_groups["connect"])[i] for i in indexes]:
        try:
            with ConnectClient(url, auth=auth, retry_budget_s=0, timeout=5) as client:
                client.server_info()
        except Exception:
            return False
    return True


def _all_running(client: ConnectClient, specs: Any, on: str | None = None) -> bool:
    statuses = {spec.name: client.get_status(spec.name) for spec in specs.all()}
    return all_running(statuses, on=on, taskless=statuses)
