"""Fan-out, aggregation and a four-cluster slice of the six-cluster mesh, on real processes.

Each scenario is an examples/*.yaml copied into a stack the way a new user would (ports changed,
MM2 intervals shortened, one worker per group to stay lean on two cores), deployed once by a
class-scoped fixture (so only one stack runs at a time), checked by reading the records on every
target, validated by the Spark stage (in process, one session for the module, as
tests/integration/test_spark_validation.py runs it) and destroyed, leaving no process, port or directory.
All clusters run the secure default of the local platform: SASL/SCRAM with least-privilege ACLs.
"""

from __future__ import annotations

import copy
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.integration.harness import (
    TestStack,
    example_config_with_free_ports,
    produce_batch,
    read_keys,
    running,
    topic_names,
    wait_until,
)
from tests.integration.validation_stage import run_stage_in_process

pytestmark = pytest.mark.integration

FAST = {"refresh.topics.interval.seconds": "5"}
RECORDS = 300  # per source topic


def lean(cfg: dict[str, Any]) -> dict[str, Any]:
    """One worker per group: the examples' second worker only adds load on a two-core runner."""
    for group in cfg["config"]["mm2:workerGroups"].values():
        group["workers"] = 1
    return cfg


def assert_arrive(out: dict[str, Any], alias: str, topic: str, prefix: bytes, keys: list[bytes]) -> None:
    got = read_keys(out, alias, topic, prefix, len(keys), 120)
    assert set(got) == set(keys), f"{alias}/{topic}: {len(set(got) & set(keys))} of {len(keys)} records arrived"


@pytest.fixture(scope="module")
def spark() -> Any:
    """One Spark session for the three stacks (the validator's own setup, as bin/validate builds
    it): each stack pays for its flows, not for another JVM start."""
    from spark import validate as stage

    args = stage.parse_args(
        ["--conf", "spark.sql.shuffle.partitions=4", "--conf", "spark.ui.enabled=false", "--master", "local[2]"]
    )
    session = stage.build_session(args, stage.ensure_kafka_source_jars())
    yield session
    session.stop()


def validate(stack: TestStack, spark: Any, tmp: Path, flows: set[str]) -> None:
    """The Spark stage on every flow of the stack: exit code 0, and each topic complete."""
    run = run_stage_in_process(
        spark, stack.outputs(), tmp / "report.json", "--latency-window", "0", "--catch-up-timeout", "60"
    )
    code, result = run.code, run.report
    assert code == 0, result["failedChecks"]
    assert set(result["flows"]) == flows
    for name, flow in result["flows"].items():
        statuses = {t: v["checks"]["completeness"]["status"] for t, v in flow["topics"].items()}
        assert statuses and set(statuses.values()) == {"pass"}, (name, statuses)


# --- fan-out: one worker group on the hub produces into three other clusters ----------------------


# Class scope: each stack is destroyed when its class ends, so only one runs at a time.
@pytest.fixture(scope="class")
def fan_out(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with running(tmp_path_factory.mktemp("fan-out"), lean(example_config_with_free_ports("fan-out", FAST))) as s:
        yield s


class TestFanOut:
    def test_one_group_produces_into_three_clusters_under_acls(self, fan_out: TestStack) -> None:
        out = fan_out.outputs()
        assert {f["workerGroup"] for f in out["flows"].values()} == {"hub"}
        assert out["connect"]["hub"]["cluster"] == "k"
        for alias in ("k", "a", "b", "c"):
            assert out["clusters"][alias]["securityProtocol"] == "SASL_PLAINTEXT", alias
        run = uuid.uuid4().hex[:8].encode()
        sent = {}
        for topic in ("events-clicks", "events-views"):
            keys = [run + f"-{topic}-{i}".encode() for i in range(RECORDS)]
            produce_batch(out, "k", topic, keys)
            sent[topic] = keys
        for alias in ("a", "b", "c"):
            assert out["flows"][f"k->{alias}"]["topics"] == {t: f"k.{t}" for t in sent}
            for topic, keys in sent.items():
                assert_arrive(out, alias, f"k.{topic}", run, keys)

    def test_spark_stage_validates_every_flow(self, fan_out: TestStack, spark: Any, tmp_path: Path) -> None:
        validate(fan_out, spark, tmp_path, {"k->a", "k->b", "k->c"})


# --- aggregation: three sources into one target, one remote topic per source ----------------------


@pytest.fixture(scope="class")
def aggregation(tmp_path_factory: pytest.TempPathFactory) -> Any:
    cfg = lean(example_config_with_free_ports("aggregation", FAST))
    with running(tmp_path_factory.mktemp("aggregation"), cfg) as s:
        yield s


class TestAggregation:
    def test_each_source_lands_complete_in_its_own_remote_topic(self, aggregation: TestStack) -> None:
        out = aggregation.outputs()
        run = uuid.uuid4().hex[:8]
        sent = {}
        for source in ("a", "b", "c"):
            sent[source] = [f"{run}-{source}-{i}".encode() for i in range(RECORDS)]
            produce_batch(out, source, "metrics", sent[source])
        for source, keys in sent.items():
            assert out["flows"][f"{source}->k"]["topics"] == {"metrics": f"{source}.metrics"}
            # Only this source's records: the run prefix covers all three, so a mix-up would show.
            assert_arrive(out, "k", f"{source}.metrics", run.encode(), keys)
        topics = topic_names(out, "k")
        assert {"a.metrics", "b.metrics", "c.metrics"} <= topics
        assert "metrics" not in topics, "aggregation must not merge sources into one unprefixed topic"

    def test_spark_stage_validates_every_flow(self, aggregation: TestStack, spark: Any, tmp_path: Path) -> None:
        validate(aggregation, spark, tmp_path, {"a->k", "b->k", "c->k"})


# --- two datacenters of the six-cluster mesh ---------------------------------------------------------

MESH_CLUSTERS = ("west-1", "west-2", "east-1", "east-2")


def mesh_subset() -> dict[str, Any]:
    """examples/six-cluster-mesh.yaml without the north datacenter: west and east, each
    active/active inside, and cross-datacenter replication between west-1 and east-1."""
    cfg = copy.deepcopy(example_config_with_free_ports("six-cluster-mesh", FAST))
    config = cfg["config"]
    config["mm2:clusters"] = {a: c for a, c in config["mm2:clusters"].items() if not a.startswith("north")}
    config["mm2:workerGroups"] = {g: w for g, w in config["mm2:workerGroups"].items() if g != "connect-north"}
    config["mm2:flows"] = {f: v for f, v in config["mm2:flows"].items() if "north" not in f}
    return lean(cfg)


MESH_FLOWS = {
    "west-1->west-2",
    "west-2->west-1",
    "east-1->east-2",
    "east-2->east-1",
    "west-1->east-1",
    "east-1->west-1",
}


@pytest.fixture(scope="class")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with running(tmp_path_factory.mktemp("mesh"), mesh_subset()) as s:
        yield s


class TestMeshSubset:
    def test_every_flow_replicates_and_nothing_hops_twice(self, mesh: TestStack) -> None:
        out = mesh.outputs()
        assert set(out["flows"]) == MESH_FLOWS
        run = uuid.uuid4().hex[:8]
        sent = {}
        for alias in MESH_CLUSTERS:
            sent[alias] = [f"{run}-{alias}-{i}".encode() for i in range(RECORDS)]
            produce_batch(out, alias, "orders", sent[alias])
        for name in sorted(MESH_FLOWS):
            source, target = name.split("->")
            assert_arrive(out, target, f"{source}.orders", f"{run}-{source}-".encode(), sent[source])
        for alias in MESH_CLUSTERS:
            topics = topic_names(out, alias)
            prefixes = {t: [p for p in t.split(".")[:-1] if p in MESH_CLUSTERS] for t in topics}
            # `orders.*` matches only local topics, so a remote data topic is never replicated again.
            twice = sorted(t for t, p in prefixes.items() if len(p) > 1 and not t.endswith("heartbeats"))
            assert twice == [], f"{alias} holds data topics renamed twice: {twice}"
            # Heartbeats cross every flow whatever the filter (MM2 uses them to trace reachability),
            # so they hop; a loop would bring a cluster's own alias back to it.
            back = sorted(t for t, p in prefixes.items() if alias in p)
            assert back == [], f"{alias} got its own records back: {back}"
        # A -2 cluster's heartbeats reach the other datacenter through its -1: the path is live.
        for alias, hopped in (("west-1", "east-1.east-2.heartbeats"), ("east-1", "west-1.west-2.heartbeats")):
            wait_until(lambda a=alias, h=hopped: h in topic_names(out, a), 60, f"{hopped} on {alias}")

    def test_spark_stage_validates_every_flow(self, mesh: TestStack, spark: Any, tmp_path: Path) -> None:
        validate(mesh, spark, tmp_path, MESH_FLOWS)
