"""The replication benchmark's rig (bench/replication/run.py): two single-broker KRaft clusters
and the Connect workers of setups (b), (c) and (d), started with the project's own code, the
BenchTool JVM, and what a run reads off them (end offsets, CPU time)."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.proc_stats import cpu_seconds, machine_cpu
from components.platform.local import process as proc
from components.platform.local.deploy import CONNECT_MAIN, KAFKA_MAIN
from components.platform.readiness import connect_answers, kafka_answers
from components.platform.topology_facts import kraft_cluster_id
from components.topology.model import Topology
from components.topology.parse import parse_topology
from components.topology.runtime_config import broker_properties, worker_properties
from tests.integration.harness import free_port_block

STACK = f"bench-{uuid.uuid4().hex[:6]}"


@dataclass
class Rig:
    """Everything started for one benchmark run; `stop()` undoes all of it."""

    tmp: Path
    libs: str
    tool_cp: str
    src_port: int = 0
    dst_port: int = 0
    rest_tuned: int = 0
    rest_seed: int = 0
    rest_eos: int = 0
    markers: list[str] = field(default_factory=list)
    pids: dict[str, int] = field(default_factory=dict)
    children: list[subprocess.Popen[str]] = field(default_factory=list)

    @property
    def src(self) -> str:
        return f"127.0.0.1:{self.src_port}"

    @property
    def dst(self) -> str:
        return f"127.0.0.1:{self.dst_port}"

    def stop(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.terminate()
                with suppress(subprocess.TimeoutExpired):
                    child.wait(10)
                if child.poll() is None:
                    child.kill()
        for marker in reversed(self.markers):
            proc.stop(marker, grace_s=20)


# ---- topology: what a user's stack config would say ----------------------------------------


def stack_config(rig: Rig, alias: str, topic: str, partitions: int) -> dict[str, Any]:
    """Stack config for one flow `<alias>->dst` replicating `topic`, with no tuning of its own: what
    the model generates from it is setup (c). `alias` names the source cluster (always the same
    broker) so every run gets fresh connector names, offsets and remote topic."""
    plaintext = {"protocol": "PLAINTEXT"}
    return {
        "clusters": {
            alias: {
                "platform": "local",
                "brokers": 1,
                "port": rig.src_port,
                "security": plaintext,
                "topics": {topic: {"partitions": partitions}},
            },
            "dst": {"platform": "local", "brokers": 1, "port": rig.dst_port, "security": plaintext},
        },
        "workerGroups": {"mm2": {"cluster": "dst", "workers": 1, "restPort": rig.rest_tuned}},
        "flows": {f"{alias}->dst": {"topics": [topic], "groups": [".*"]}},
    }


def tuned_topology(rig: Rig, alias: str, topic: str, partitions: int) -> Topology:
    """The config sets no tasksMax: (c) runs the derived default, as users get it."""
    topology = parse_topology(stack_config(rig, alias, topic, partitions))
    assert topology.flows[0].tasks_max is None
    return topology


def eos_topology(rig: Rig, alias: str, topic: str, partitions: int) -> Topology:
    """(d): the same flow with `exactlyOnce: true`, on a group of its own (a new group starts
    at exactly.once.source.support=enabled)."""
    config = stack_config(rig, alias, topic, partitions)
    config["workerGroups"] = {"eos": {"cluster": "dst", "workers": 1, "restPort": rig.rest_eos}}
    config["flows"][f"{alias}->dst"].update({"exactlyOnce": True, "workerGroup": "eos"})
    return parse_topology(config)


def seed_connectors(rig: Rig, alias: str, topic: str) -> dict[str, dict[str, str]]:
    """Seed 001's three connector JSONs, PLAINTEXT instead of SASL (both sides are loopback)."""
    common = {
        "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "source.cluster.alias": alias,
        "source.cluster.bootstrap.servers": rig.src,
        "target.cluster.alias": "dst",
        "target.cluster.bootstrap.servers": rig.dst,
    }
    return {
        f"seed-{alias}-source": {
            **common,
            "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
            "topics": topic,
            "sync.topic.acls.enabled": "false",
            "sync.topic.configs.enabled": "false",
            "replication.factor": "1",
            "replication.policy.class": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
            "offset-syncs.topic.replication.factor": "1",
            "offset-syncs.topic.location": "source",
            "tasks.max": "1",
        },
        f"seed-{alias}-checkpoint": {
            **common,
            "connector.class": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
            "replication.policy.class": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
            "emit.checkpoint.enabled": "true",
            "emit.checkpoints.interval.seconds": "60",
            "sync.group.offsets.enabled": "true",
            "sync.group.offsets.interval.seconds": "60",
            "group.filter.class": "org.apache.kafka.connect.mirror.DefaultGroupFilter",
            "groups": ".*",
            "groups.exclude": "console-consumer-.*, connect-.*, __.*",
            "refresh.groups.enabled": "true",
            "refresh.groups.interval.seconds": "60",
            "checkpoints.topic.replication.factor": "1",
        },
        f"seed-{alias}-heartbeat": {
            **common,
            "connector.class": "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
            "emit.heartbeat.enabled": "true",
            "emit.heartbeat.interval.seconds": "1",
            "heartbeats.topic.replication.factor": "1",
        },
    }


def seed_worker_properties(rig: Rig) -> dict[str, str]:
    """Seed 001's connect.properties without SASL and REST auth, on loopback."""
    return {
        "bootstrap.servers": rig.dst,
        "group.id": "connect-cluster-seed",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "key.converter.schemas.enable": "false",
        "value.converter.schemas.enable": "false",
        "offset.storage.topic": "connect-offsets-seed",
        "offset.storage.replication.factor": "1",
        "offset.storage.partitions": "1",
        "config.storage.topic": "connect-configs-seed",
        "config.storage.replication.factor": "1",
        "status.storage.topic": "connect-status-seed",
        "status.storage.replication.factor": "1",
        "status.storage.partitions": "1",
        "listeners": f"http://127.0.0.1:{rig.rest_seed}",
        "rest.advertised.host.name": "127.0.0.1",
        "rest.advertised.port": str(rig.rest_seed),
    }


# ---- processes ---------------------------------------------------------------------------


def start_jvm(
    rig: Rig, name: str, main: str, props: Mapping[str, str], heap: str, probe: Any, cluster_id: str = ""
) -> None:
    spec = proc.JvmSpec(
        component=f"bench {name}",
        marker=f"{STACK}/{name}",
        main_class=main,
        classpath_dir=rig.libs,
        run_dir=str(rig.tmp / name),
        properties=dict(props),
        heap=heap,
        java=proc.find_java(),
    )
    proc.prepare_run_dir(spec)
    if cluster_id:
        proc.format_storage(spec, cluster_id)
    rig.markers.append(spec.marker)
    pid = proc.start(spec)
    proc.wait_ready(spec, pid, probe, timeout_s=240)
    rig.pids[name] = pid


def start_rig(rig: Rig, partitions: int) -> None:
    rig.src_port, rig.dst_port = free_port_block(2), 0
    rig.dst_port = free_port_block(2)
    while rig.dst_port == rig.src_port:
        rig.dst_port = free_port_block(2)
    rig.rest_tuned = free_port_block(1)
    rig.rest_seed = free_port_block(1)
    rig.rest_eos = free_port_block(1)
    while rig.rest_eos in (rig.rest_tuned, rig.rest_seed):
        rig.rest_eos = free_port_block(1)
    topology = tuned_topology(rig, "src", "probe", partitions)
    for alias, port in (("src", rig.src_port), ("dst", rig.dst_port)):
        cluster = topology.clusters[alias]
        props = broker_properties(cluster, 0, str(rig.tmp / f"broker-{alias}" / "data"))
        bootstrap = f"127.0.0.1:{port}"
        start_jvm(
            rig,
            f"broker-{alias}",
            KAFKA_MAIN,
            props,
            "512m",
            lambda b=bootstrap: kafka_answers(b, {}),
            kraft_cluster_id(STACK, alias),
        )
    group = topology.worker_groups["mm2"]
    start_jvm(
        rig,
        "worker-tuned",
        CONNECT_MAIN,
        worker_properties(topology, group, 0),
        "768m",
        lambda: connect_answers(f"http://127.0.0.1:{rig.rest_tuned}", None),
    )
    eos = eos_topology(rig, "src", "probe", partitions)
    start_jvm(
        rig,
        "worker-eos",
        CONNECT_MAIN,
        worker_properties(eos, eos.worker_groups["eos"], 0),
        "768m",
        lambda: connect_answers(f"http://127.0.0.1:{rig.rest_eos}", None),
    )
    start_jvm(
        rig,
        "worker-seed",
        CONNECT_MAIN,
        seed_worker_properties(rig),
        "768m",
        lambda: connect_answers(f"http://127.0.0.1:{rig.rest_seed}", None),
    )


def java_tool(rig: Rig, *args: str) -> subprocess.Popen[str]:
    cmd = [proc.find_java(), "-Xmx512m", "-cp", f"{rig.tool_cp}:{rig.libs}/*", "BenchTool", *args]
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rig.children.append(child)
    return child


def _tool(child: subprocess.Popen[str]) -> str:
    """The BenchTool's mode and target, for an error message (the args are a list here)."""
    args = child.args
    return " ".join(str(a) for a in args[5:7]) if isinstance(args, list) else str(args)


def finish(child: subprocess.Popen[str], timeout_s: float) -> dict[str, Any]:
    try:
        out, err = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        raise RuntimeError(f"BenchTool {_tool(child)} timed out after {timeout_s}s: {err[-2000:]}") from None
    if child.returncode != 0:
        raise RuntimeError(f"BenchTool {_tool(child)} failed ({child.returncode}): {err[-2000:]}")
    return json.loads(out.strip().splitlines()[-1])


# ---- topics --------------------------------------------------------------------------------


def create_topic(bootstrap: str, name: str, partitions: int, config: Mapping[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=dict(config or {}))], request_timeout=30)
    futures[name].result(timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = admin.list_topics(name, timeout=5).topics.get(name)
        if md is not None and md.error is None and len(md.partitions) == partitions:
            return
        time.sleep(0.2)
    raise RuntimeError(f"topic {name} not visible on {bootstrap} after 30 s")


def delete_topics(bootstrap: str, names: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    for future in admin.delete_topics(names, request_timeout=30).values():
        with suppress(Exception):
            future.result(timeout=60)


class EndOffsets:
    """Sum of a topic's end offsets: how many records the target holds."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watch", "log_level": 0})
        self.tps = [TopicPartition(topic, p) for p in range(partitions)]

        self.last = 0

    def count(self) -> int:
        # A just-created topic's leadership may still be settling: keep the last answer then.
        with suppress(KafkaException):
            self.last = sum(self.consumer.get_watermark_offsets(tp, timeout=5, cached=False)[1] for tp in self.tps)
        return self.last

    def close(self) -> None:
        self.consumer.close()


# ---- CPU accounting ------------------------------------------------------------------------


def cpu_snapshot(rig: Rig, extra: Mapping[str, int] | None = None) -> dict[str, float]:
    pids = {**rig.pids, **(extra or {}), "bench-python": os.getpid()}
    snap = {name: cpu_seconds(pid) for name, pid in pids.items()}
    snap["_wall"] = time.monotonic()
    snap["_machine"] = machine_cpu()
    return snap


def cpu_share(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """Cores used per process over the window (1.0 = one core busy), plus the whole machine."""
    wall = after["_wall"] - before["_wall"]
    out = {k: round((after[k] - before.get(k, 0.0)) / wall, 2) for k in after if not k.startswith("_")}
    out["machine"] = round((after["_machine"] - before["_machine"]) / wall, 2)
    return out


# ---- one run -------------------------------------------------------------------------------
