"""Replication benchmark: MM2 with the seed's settings and with the project's tuned defaults, against
a plain consume-and-produce copy loop, on this machine, in one run.

    python bench/replication/run.py [--sizes 100,1024] [--repeats 3] [--partitions 4]

Two single-broker KRaft clusters (`src`, `dst`, PLAINTEXT on 127.0.0.1, free ports) and two
single-worker Connect groups on `dst` are started with the project's own code (broker and worker
properties from components/topology/runtime_config.py, JVMs through components/platform/local/process.py,
connectors through components/connect/client.py). Three setups copy the same source topic:

  a  copy ceiling: Kafka's own Java clients (bench/replication/BenchTool.java), one
     consumer+producer pair per thread, no Connect, no MM2; the best of the settings tried
  b  MM2 with seed 001's connector JSONs as written there (tasks.max=1, no client overrides) on a
     worker configured like seed 001's connect.properties
  c  MM2 as this tool generates it: `flow_connectors()` output for a flow parsed from stack config
     with no tuning of its own, on a worker from `worker_properties()`
  d  (c) with `exactlyOnce: true`: a worker group of its own at exactly.once.source.support=enabled,
     the source connector transactional (exactly.once.support=required, read_committed source)

Throughput: for each record size the source topic is pre-loaded with a backlog; each setup
replicates it into a fresh remote topic and the clock runs from the first record seen on the target
to the last (target end offsets polled every 0.1 s), so connector start-up is not counted.
Latency: with the pipeline running, a producer sends at half of (c)'s median throughput for a fixed
time; latency is the target broker's append time (the remote topic is pre-created with
message.timestamp.type=LogAppendTime) minus the send time the producer wrote into each value.
Both clocks are this machine's. The first 2 s of each latency run are warm-up and not counted.

Runs are interleaved (a, b, c per size per repeat) so a slow spell of the shared machine hits
every setup alike. Per-process CPU time (brokers, workers, load generator) is sampled over each
timed window. Prints figures with the machine and writes bench/results/replication-<date>.{json,md}.
Everything started here is stopped on exit, failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from confluent_kafka import Consumer, KafkaException, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from bench.machine import hardware, hardware_text  # noqa: E402
from bench.proc_stats import cpu_seconds, machine_cpu  # noqa: E402
from components.connect.client import ConnectClient  # noqa: E402
from components.platform.local import process as proc  # noqa: E402
from components.platform.local.deploy import CONNECT_MAIN, KAFKA_MAIN  # noqa: E402
from components.platform.readiness import connect_answers, kafka_answers  # noqa: E402
from components.platform.topology_facts import kraft_cluster_id  # noqa: E402
from components.topology.connectors import flow_connectors  # noqa: E402
from components.topology.model import Topology  # noqa: E402
from components.topology.parse import parse_topology  # noqa: E402
from components.topology.runtime_config import broker_properties, worker_properties  # noqa: E402
from tests.integration.harness import free_port_block  # noqa: E402

SETUPS = ("a", "b", "c", "d")
SETUP_NAMES = {
    "a": "copy ceiling (Kafka clients, no MM2)",
    "b": "MM2, seed 001 settings",
    "c": "MM2, tuned defaults",
    "d": "MM2, tuned defaults, exactly-once",
}
STACK = f"bench-{uuid.uuid4().hex[:6]}"
LATENCY_WARMUP_MS = 2000

# The copy loop runs one consumer+producer pair per partition (as MM2 runs one task per partition)
# with the client settings the generated source connector carries. The load generator's producer:
LOADGEN_PRODUCER = ("producer.linger.ms=5", "producer.batch.size=131072", "producer.acks=all")


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


@contextmanager
def pipeline(rig: Rig, setup: str, alias: str, topic: str, partitions: int, count: int) -> Iterator[dict[str, int]]:
    """Start setup `setup` copying `topic` into `<alias>.<topic>` on dst; yields extra pids to
    account CPU to; stops it afterwards (connectors deleted, copy loop ended)."""
    remote = f"{alias}.{topic}"
    create_topic(rig.dst, remote, partitions, {"message.timestamp.type": "LogAppendTime"})
    if setup == "a":
        child = java_tool(rig, "copy", rig.src, topic, rig.dst, remote, str(partitions), str(count), *tuned_client(rig))
        try:
            yield {"copy-loop": child.pid}
            if count > 0:
                finish(child, 600)
        finally:
            if child.poll() is None:
                child.terminate()
                with suppress(subprocess.TimeoutExpired):
                    child.wait(15)
        return
    if setup == "b":
        url, configs = f"http://127.0.0.1:{rig.rest_seed}", seed_connectors(rig, alias, topic)
    else:
        make, port = (tuned_topology, rig.rest_tuned) if setup == "c" else (eos_topology, rig.rest_eos)
        topology = make(rig, alias, topic, partitions)
        specs = flow_connectors(topology, topology.flows[0]).all()
        url, configs = f"http://127.0.0.1:{port}", {s.name: dict(s.config) for s in specs}
    with ConnectClient(url, timeout=30, retry_budget_s=120) as client:
        try:
            for name, config in configs.items():
                client.put_config(name, config)
            source = next(n for n in configs if n.endswith("-source"))
            client.wait_running(source, timeout_s=120, poll_s=0.5)
            yield {}
        finally:
            for name in configs:
                with suppress(Exception):
                    client.delete(name, timeout_s=60, poll_s=0.5)


def tuned_client(rig: Rig) -> list[str]:
    """The copy loop gets the client settings the generated source connector carries."""
    topology = tuned_topology(rig, "src", "probe", 1)
    config = flow_connectors(topology, topology.flows[0]).source.config
    out = []
    for key, value in config.items():
        if key.startswith("producer.override.") and "bootstrap" not in key and "security" not in key:
            out.append(f"producer.{key[len('producer.override.') :]}={value}")
        elif key.startswith("source.consumer."):
            out.append(f"consumer.{key[len('source.consumer.') :]}={value}")
    return out


def throughput_run(
    rig: Rig, setup: str, alias: str, topic: str, partitions: int, count: int, size: int
) -> dict[str, Any]:
    remote = f"{alias}.{topic}"
    t_start = time.monotonic()
    with pipeline(rig, setup, alias, topic, partitions, count) as extra_pids:
        watch = EndOffsets(rig.dst, remote, partitions)
        try:
            deadline = time.monotonic() + 600
            first_t, first_n = 0.0, 0
            before: dict[str, float] | None = None
            after: dict[str, float] = {}
            while time.monotonic() < deadline:
                n = watch.count()
                now = time.monotonic()
                if n > 0 and before is None:
                    first_t, first_n, before = now, n, cpu_snapshot(rig, extra_pids)
                if n >= count:
                    after = cpu_snapshot(rig, extra_pids)
                    break
                time.sleep(0.1)
            else:
                raise RuntimeError(f"setup {setup}: only {n}/{count} records on {remote} after 600 s")
        finally:
            watch.close()
        seconds = now - first_t
    delete_topics(rig.dst, [remote])
    rate = (count - first_n) / seconds
    return {
        "records": count,
        "seconds": round(seconds, 3),
        "records_per_s": round(rate),
        "mb_per_s": round(rate * size / 1e6, 2),
        "start_to_first_record_s": round(first_t - t_start, 2),
        "cpu_cores": cpu_share(before or {}, after),
    }


def latency_run(
    rig: Rig, setup: str, alias: str, size: int, partitions: int, rate: float, seconds: int
) -> dict[str, Any]:
    topic = f"lat-{alias}"
    create_topic(rig.src, topic, partitions)
    count = int(rate * seconds)
    with pipeline(rig, setup, alias, topic, partitions, -1) as extra_pids:
        time.sleep(3 if setup == "a" else 5)  # consumers assigned and fetching before the clock starts
        producer = java_tool(rig, "produce", rig.src, topic, str(count), str(size), f"{rate:.0f}", *LOADGEN_PRODUCER)
        before = cpu_snapshot(rig, extra_pids)
        sent = finish(producer, seconds * 3 + 60)
        after = cpu_snapshot(rig, extra_pids)
        reader = java_tool(rig, "latency", rig.dst, f"{alias}.{topic}", str(count), "60", str(LATENCY_WARMUP_MS))
        result = finish(reader, 90)
    delete_topics(rig.dst, [f"{alias}.{topic}"])
    delete_topics(rig.src, [topic])
    cpu = cpu_share(before, after)
    cpu["load-generator"] = round(sent["cpu_s"] / (after["_wall"] - before["_wall"]), 2)
    return {
        "target_rate": round(rate),
        "achieved_send_rate": round(sent["acked"] / sent["seconds"]),
        **result,
        "cpu_cores": cpu,
    }


# ---- report --------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    return hardware()


def median_of(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def median_cpu(runs: list[dict[str, Any]]) -> dict[str, float]:
    keys = sorted({k for r in runs for k in r["cpu_cores"]})
    return {k: round(statistics.median(r["cpu_cores"].get(k, 0.0) for r in runs), 2) for k in keys}


def render(report: dict[str, Any], command: str) -> str:
    info, sizes = report["machine"], report["sizes"]
    tp, lat, ratios = report["throughput_medians"], report["latency_medians"], report["ratios"]
    lines = [
        f"# Replication benchmark ({report['date']})",
        "",
        f"Machine: {hardware_text(info)}; load average at start "
        f"{', '.join(map(str, info['load_avg_at_start']))}; Kafka {info['kafka']}, {info['java']}. "
        f"Command: `{command}`.",
        "",
        f"Two single-broker KRaft clusters and the Connect workers on this machine (PLAINTEXT, loopback); "
        f"source topic of {report['partitions']} partitions; values of random letters (compressible like "
        f"text). Medians of {report['repeats']} interleaved runs per cell; throughput is the backlog copy "
        f"from first to last record on the target, start-up excluded. (d) counts the target's end offsets "
        f"like the others, so its transaction markers (one per task per committed poll) count as records; "
        f"its latency is the append time of records later committed, so it leaves out the commit itself.",
        "",
        "| setup | " + " | ".join(f"{s} B rec/s | {s} B MB/s" for s in sizes) + " |",
        "|---|" + "---:|---:|" * len(sizes),
    ]
    for setup in SETUPS:
        cells = " | ".join(
            f"{tp[setup][str(s)]['records_per_s']:,.0f} | {tp[setup][str(s)]['mb_per_s']:.1f}" for s in sizes
        )
        lines.append(f"| ({setup}) {SETUP_NAMES[setup]} | {cells} |")
    lines += [
        "",
        "| ratio | " + " | ".join(f"{s} B" for s in sizes) + " | goal |",
        "|---|" + "---:|" * len(sizes) + "---|",
    ]
    lines.append("| (c)/(a) | " + " | ".join(f"{ratios['c_over_a'][str(s)]:.2f}" for s in sizes) + " | >= 0.8 |")
    lines.append("| (c)/(b) | " + " | ".join(f"{ratios['c_over_b'][str(s)]:.2f}" for s in sizes) + " | >= 1.5 |")
    lines.append(
        "| (d)/(c) exactly-once cost | " + " | ".join(f"{ratios['d_over_c'][str(s)]:.2f}" for s in sizes) + " | - |"
    )
    lines += [
        "",
        f"End-to-end latency at half of (c)'s median throughput, {report['latency_seconds']} s of steady sends "
        "per run, first 2 s not counted; target append time (LogAppendTime) minus the producer's send time "
        f"written into the record; medians of {report['latency_repeats']} runs:",
        "",
        "| setup | " + " | ".join(f"{s} B rate | {s} B p50 ms | {s} B p99 ms" for s in report["latency_sizes"]) + " |",
        "|---|" + "---:|---:|---:|" * len(report["latency_sizes"]),
    ]
    for setup in SETUPS:
        cells = " | ".join(
            f"{m['target_rate']:,.0f}/s | {m['p50_ms']:.0f} | {m['p99_ms']:.0f}"
            for m in (lat[setup][str(s)] for s in report["latency_sizes"])
        )
        lines.append(f"| ({setup}) | {cells} |")
    goals = report["goals"]
    lines += [
        "",
        f"Goals: (c)/(a) >= 0.8: {goals['c_over_a']}; (c)/(b) >= 1.5: {goals['c_over_b']}; p99 < 1 s for (c): "
        f"{goals['p99_c']}.",
        "",
        "Where the CPU went during the timed copy (cores busy, medians; 2.0 = both cores):",
        "",
        "| setup, size | " + " | ".join(report["cpu_columns"]) + " |",
        "|---|" + "---:|" * len(report["cpu_columns"]),
    ]
    for setup in SETUPS:
        for s in sizes:
            cpu = tp[setup][str(s)]["cpu_cores"]
            lines.append(
                f"| ({setup}) {s} B | " + " | ".join(f"{cpu.get(c, 0.0):.2f}" for c in report["cpu_columns"]) + " |"
            )
    lines += ["", "Settings of (c), as generated (source connector, tuning keys only):", ""]
    lines += [f"- `{k}={v}`" for k, v in report["tuned_settings"].items()]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,1024", help="record sizes in bytes")
    parser.add_argument(
        "--records",
        default="100:1500000,1024:300000",
        help="backlog per record size, size:count,... (sizes without a count get 150 MB)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--latency-sizes", default="1024")
    parser.add_argument("--latency-seconds", type=int, default=20)
    parser.add_argument("--latency-repeats", type=int, default=1)
    parser.add_argument("--no-write", action="store_true", help="print only (development runs)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    lat_sizes = [int(s) for s in args.latency_sizes.split(",") if s]
    backlog = {int(k): int(v) for k, v in (item.split(":") for item in args.records.split(",") if item)}
    command = "python bench/replication/run.py " + " ".join(sys.argv[1:])
    libs = os.environ.get("MM2_KAFKA_LIBS")
    if not libs:
        sys.exit("MM2_KAFKA_LIBS is not set: `source .mm2/env` first")
    info = machine()
    print(f"machine: {json.dumps(info)}", flush=True)

    tmp = Path(tempfile.mkdtemp(prefix="mm2-bench-replication-"))
    tool_dir = tmp / "tool"
    tool_dir.mkdir()
    subprocess.run(
        ["javac", "-d", str(tool_dir), "-cp", f"{libs}/*", str(Path(__file__).with_name("BenchTool.java"))],
        check=True,
    )
    rig = Rig(tmp=tmp, libs=libs, tool_cp=str(tool_dir))
    # SIGTERM (a CI timeout, `kill`) unwinds through the finally below like Ctrl-C does.
    signal.signal(signal.SIGTERM, _interrupt)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {s: {str(z): [] for z in sizes} for s in SETUPS}
    lat_runs: dict[str, dict[str, list[dict[str, Any]]]] = {s: {str(z): [] for z in lat_sizes} for s in SETUPS}
    counter = iter(range(1, 10_000))
    try:
        t0 = time.monotonic()
        start_rig(rig, args.partitions)
        print(f"rig up in {time.monotonic() - t0:.0f}s", flush=True)
        counts = {}
        for size in sizes:
            topic, count = f"bench-{size}", backlog.get(size, int(150e6 / size))
            create_topic(rig.src, topic, args.partitions)
            loaded = finish(
                java_tool(rig, "produce", rig.src, topic, str(count), str(size), "0", *LOADGEN_PRODUCER), 900
            )
            counts[size] = count
            print(f"pre-loaded {count:,} x {size} B in {loaded['seconds']:.1f}s", flush=True)
        for rep in range(args.repeats):
            for size in sizes:
                for setup in SETUPS:
                    alias = f"{setup}{next(counter)}"
                    r = throughput_run(rig, setup, alias, f"bench-{size}", args.partitions, counts[size], size)
                    runs[setup][str(size)].append(r)
                    print(
                        f"[{rep + 1}/{args.repeats}] {size:>5} B ({setup}): {r['records_per_s']:>9,} rec/s "
                        f"{r['mb_per_s']:7.1f} MB/s  cpu {r['cpu_cores']}",
                        flush=True,
                    )
        tp = {s: {str(z): _summary(runs[s][str(z)]) for z in sizes} for s in SETUPS}
        for rep in range(args.latency_repeats):
            for size in lat_sizes:
                rate = tp["c"][str(size)]["records_per_s"] / 2 if str(size) in tp["c"] else 1000.0
                for setup in SETUPS:
                    alias = f"{setup}{next(counter)}"
                    r = latency_run(rig, setup, alias, size, args.partitions, rate, args.latency_seconds)
                    lat_runs[setup][str(size)].append(r)
                    print(
                        f"[latency {rep + 1}/{args.latency_repeats}] {size:>5} B ({setup}) at {r['target_rate']:,}/s "
                        f"(sent {r['achieved_send_rate']:,}/s): p50 {r['p50_ms']} ms p99 {r['p99_ms']} ms "
                        f"({r['measured']:,} measured)  cpu {r['cpu_cores']}",
                        flush=True,
                    )
    finally:
        rig.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    lat = {
        s: {
            str(z): {
                "target_rate": median_of(lat_runs[s][str(z)], "target_rate"),
                "achieved_send_rate": median_of(lat_runs[s][str(z)], "achieved_send_rate"),
                "p50_ms": median_of(lat_runs[s][str(z)], "p50_ms"),
                "p99_ms": median_of(lat_runs[s][str(z)], "p99_ms"),
            }
            for z in lat_sizes
        }
        for s in SETUPS
    }
    ratios = {
        "c_over_a": {str(z): tp["c"][str(z)]["records_per_s"] / tp["a"][str(z)]["records_per_s"] for z in sizes},
        "c_over_b": {str(z): tp["c"][str(z)]["records_per_s"] / tp["b"][str(z)]["records_per_s"] for z in sizes},
        "d_over_c": {str(z): tp["d"][str(z)]["records_per_s"] / tp["c"][str(z)]["records_per_s"] for z in sizes},
    }

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    columns = sorted({k for s in SETUPS for z in sizes for k in tp[s][str(z)]["cpu_cores"]}, key=_cpu_order)
    topology = tuned_topology(rig, "src", f"bench-{sizes[0]}", args.partitions)
    source_config = flow_connectors(topology, topology.flows[0]).source.config
    report = {
        "date": f"{datetime.now(timezone.utc):%Y-%m-%d}",
        "command": command,
        "machine": info,
        "sizes": sizes,
        "partitions": args.partitions,
        "repeats": args.repeats,
        "records": {str(z): counts[z] for z in sizes},
        "latency_sizes": lat_sizes,
        "latency_seconds": args.latency_seconds,
        "latency_repeats": args.latency_repeats,
        "throughput_runs": runs,
        "throughput_medians": tp,
        "latency_runs": lat_runs,
        "latency_medians": lat,
        "ratios": ratios,
        "goals": {
            "c_over_a": verdict(all(v >= 0.8 for v in ratios["c_over_a"].values())),
            "c_over_b": verdict(all(v >= 1.5 for v in ratios["c_over_b"].values())),
            "p99_c": verdict(all(0 <= lat["c"][str(z)]["p99_ms"] < 1000 for z in lat_sizes)),
        },
        "cpu_columns": columns,
        "tuned_settings": {k: v for k, v in source_config.items() if _is_tuning(k)},
        "copy_loop": {"threads": args.partitions, "settings": tuned_client(rig)},
        "load_generator": list(LOADGEN_PRODUCER),
    }
    text = render(report, command)
    print("\n" + text)
    if not args.no_write:
        out = ROOT / "bench" / "results"
        out.mkdir(parents=True, exist_ok=True)
        stamp = f"{datetime.now(timezone.utc):%Y%m%d}"
        (out / f"replication-{stamp}.json").write_text(json.dumps(report, indent=2) + "\n")
        (out / f"replication-{stamp}.md").write_text(text + "\n")
    return 0


def _interrupt(*_: Any) -> None:
    raise KeyboardInterrupt


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "records_per_s": median_of(runs, "records_per_s"),
        "mb_per_s": median_of(runs, "mb_per_s"),
        "cpu_cores": median_cpu(runs),
    }


def _cpu_order(name: str) -> tuple[int, str]:
    order = [
        "broker-src",
        "broker-dst",
        "worker-seed",
        "worker-tuned",
        "worker-eos",
        "copy-loop",
        "bench-python",
        "machine",
    ]
    return (order.index(name) if name in order else len(order), name)


def _is_tuning(key: str) -> bool:
    return key == "tasks.max" or (
        (key.startswith("producer.override.") or key.startswith("source.consumer."))
        and "bootstrap" not in key
        and "security" not in key
    )


if __name__ == "__main__":
    sys.exit(main())
