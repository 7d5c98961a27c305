"""The validation stage on a real Spark standalone cluster gives the verdicts it gives on local[*].

A master and two workers (one core, 1 GiB each) start on 127.0.0.1 from the pinned pyspark's own
launcher (`bin/spark-class`) and jars: nothing is downloaded at test time. The stage is submitted
the way the README tells users to point it at an existing cluster:

    spark-submit --master spark://HOST:7077 --jars "$(python -m spark.jars)" spark/validate.py \
        --outputs outputs.json

against a deployed copy of the dev stack (real brokers, Connect and MM2) holding a few thousand
records, then run again with `bin/validate --master local[*]`; the two reports must name the same
checks with the same statuses, and the master must have served the application with both workers'
cores. The master and workers are always stopped, also on failure.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from spark.jars import ensure_kafka_source_jars, pyspark_jars_dir
from tests.integration.harness import TestStack, free_port_block, kafka_conf, running, wait_until
from tests.integration.validation_stage import run_stage

pytestmark = pytest.mark.integration

WORKERS = 2
RECORDS = {"orders": 3000, "payments": 1000}
SPARK_BIN = pyspark_jars_dir().parent / "bin"


@dataclass
class Standalone:
    url: str  # spark://127.0.0.1:P
    ui: str  # the master's web UI, whose /json describes workers and applications
    env: dict[str, str]
    work_dirs: list[Path]  # one per worker: an executor it ran leaves app-*/<id>/stderr there

    def state(self) -> dict[str, Any]:
        response = httpx.get(f"{self.ui}/json/", timeout=5)
        # While the master starts, its UI may answer before the /json handler exists, with a 404
        # page or with its HTML page (seen in CI): an httpx.HTTPError either way, which the callers
        # polling for workers treat as "not yet".
        response.raise_for_status()
        if "json" not in response.headers.get("content-type", ""):  # Spark serves text/json
            raise httpx.HTTPError(f"{self.ui}/json/ answered {response.headers.get('content-type')}, not JSON yet")
        return dict(response.json())


def _spark_env(tmp: Path) -> dict[str, str]:
    conf_dir = tmp / "conf"  # an empty one: no spark-defaults.conf or spark-env.sh of the machine
    conf_dir.mkdir(exist_ok=True)
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_BIN.parent),
        "SPARK_CONF_DIR": str(conf_dir),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }


def _stop(children: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM each daemon's process group (a worker's executors are in it), SIGKILL after 20 s."""
    for child in reversed(children):  # workers first, then the master
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGTERM)
    for child in children:
        try:
            child.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(20)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    tmp = tmp_path_factory.mktemp("spark-standalone")
    env = _spark_env(tmp)
    port, ui_port = free_port_block(1), free_port_block(1)
    spark_class = str(SPARK_BIN / "spark-class")
    daemons = [
        ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
         "--webui-port", str(ui_port)],
    ] + [
        ["org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}", "--host", "127.0.0.1",
         "--cores", "1", "--memory", "1g", "--webui-port", str(free_port_block(1)),
         "--work-dir", str(tmp / f"worker-{i}")]
        for i in range(WORKERS)
    ]  # fmt: skip
    children: list[subprocess.Popen[bytes]] = []
    logs = []
    standalone = Standalone(
        f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}", env, [tmp / f"worker-{i}" for i in range(WORKERS)]
    )
    try:
        for i, args in enumerate(daemons):
            log = (tmp / f"daemon-{i}.log").open("wb")
            logs.append(log)
            children.append(
                subprocess.Popen([spark_class, *args], env=env, stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True)
            )  # fmt: skip

        def registered() -> int:
            dead = [c.args for c in children if c.poll() is not None]
            assert not dead, f"Spark daemon exited: {dead}; logs in {tmp}"
            try:
                workers = standalone.state().get("workers", [])
            except httpx.HTTPError:
                return 0
            return sum(1 for w in workers if w.get("state") == "ALIVE") >= WORKERS

        wait_until(registered, 120, f"{WORKERS} Spark workers registered with the master", poll_s=0.5)
        yield standalone
    finally:
        _stop(children)
        for log in logs:
            log.close()
        assert all(c.poll() is not None for c in children), "a Spark daemon is still running"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestStack]:
    with running(tmp_path_factory.mktemp("spark-cluster-stack")) as s:
        _produce(s.outputs())
        yield s


def _produce(out: dict[str, Any]) -> None:
    from confluent_kafka import Producer

    producer = Producer(kafka_conf(out, "primary", **{"enable.idempotence": True, "linger.ms": 20}))
    run = uuid.uuid4().hex[:6]
    for topic, count in RECORDS.items():
        for i in range(count):
            producer.produce(topic, key=f"{run}-{i}".encode(), value=f"{topic} record {i}".encode() * (1 + i % 4))
            if i % 1000 == 0:
                producer.poll(0)
    assert producer.flush(60) == 0, "could not produce the test records"


def test_cluster_and_local_give_the_same_verdicts(cluster: Standalone, stack: TestStack, tmp_path: Path) -> None:
    outputs = stack.outputs()
    env = {**stack.env, **{k: cluster.env[k] for k in ("SPARK_LOCAL_IP", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}}
    # Same settings for both runs; a few shuffle partitions suit a few thousand records (the
    # default 200 make every stage 200 tasks on the cluster's two cores).
    common = ("--latency-window", "2", "--conf", "spark.sql.shuffle.partitions=4")
    submit = (str(SPARK_BIN / "spark-submit"), "--master", cluster.url, "--jars",
              ensure_kafka_source_jars(log=False).spark_jars_conf(), "--conf", "spark.ui.enabled=false",
              "spark/validate.py")  # fmt: skip
    on_cluster = run_stage(outputs, tmp_path / "cluster.json", env, *common, command=submit)
    print(f"\n[spark cluster] spark-submit --master {cluster.url}: {on_cluster.summary()}")
    local = run_stage(outputs, tmp_path / "local.json", env, *common, "--master", "local[*]")
    print(f"[spark cluster] bin/validate --master local[*]: {local.summary()}")

    assert on_cluster.report["meta"]["master"] == cluster.url
    assert local.report["meta"]["master"] == "local[*]"
    assert on_cluster.verdicts() == local.verdicts(), json.dumps(
        {"cluster": on_cluster.verdicts(), "local": local.verdicts()}, indent=1
    )
    assert on_cluster.code == local.code
    # The data was really there and really compared: every record of both topics, on both runs.
    for run in (on_cluster, local):
        topics = run.report["flows"]["primary->dr"]["topics"]
        for topic, count in RECORDS.items():
            rows = topics[topic]["partitions"]
            source = sum(r.get("sourceCount", r.get("sourceRecords", 0)) for r in rows)
            assert source >= count, (topic, rows)
    # The work ran on the cluster: the master served the stage's application, and an executor of
    # it ran on each worker.
    apps = [a for a in cluster.state().get("completedapps", []) if a.get("name") == "mm2-validate"]
    assert len(apps) == 1, cluster.state().get("completedapps")
    for work_dir in cluster.work_dirs:
        assert list(work_dir.glob(f"{apps[0]['id']}/*/stderr")), f"no executor of {apps[0]['id']} in {work_dir}"
    pages = {name: (tmp_path / f"{name}.html").stat().st_size for name in ("cluster", "local")}
    print(f"[spark cluster] HTML reports (bytes): {pages}")
    assert min(pages.values()) > 10_000
