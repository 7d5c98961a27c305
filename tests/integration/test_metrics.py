"""MM2 metrics and alert rules on real parts: a dev-style stack with `metricsPort` on, scraped by
a real Prometheus (Debian's package) on loopback, loaded with the same rules every platform gets
(components/monitoring), only with short windows. Its scrape jobs and a second rule file, the
rules with their default thresholds, are what `bin/prometheus-config` wrote from the stack's
config and outputs, as an operator would run it; the config passed `promtool check config`.

In order: the latency, heartbeat, task and broker metric names the rules use exist; Prometheus
loaded the jobs and rule groups bin/prometheus-config wrote, and every target is up; while
records flow no alert is pending or firing over a window of many rule evaluations; stopping the
source connector through the declared state
(`connectorStates: {source: stopped}`, then `pulumi up`) makes the throughput or heartbeat alert
fire within a bound.
"""

from __future__ import annotations

import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.monitoring import jmx_exporter as names
from components.monitoring.prometheus import rule_groups
from components.monitoring.rules import Thresholds
from components.ops.prometheus_config import RULES_FILE, SCRAPE_FILE
from components.topology.objectives import parse_duration
from tests.integration.harness import (
    ROOT,
    TestStack,
    dev_config_with_free_ports,
    free_port_block,
    kafka_conf,
    running,
    stays_false,
    wait_until,
    write_outputs,
)
from tests.integration.prometheus import Prometheus

pytestmark = pytest.mark.integration

FLOW = "primary->dr"
SCRAPE = "2s"
FAST = Thresholds(window="30s", latency_for="10s", failure_for="6s")
FIRE_BOUND_S = 120  # window 30 s + for 6 s + scrapes, evaluations and the connector's stop, on 2 busy cores
SETTLE_S = 180  # a fresh stack: until every rule's window holds scraped data and its alerts resolved
QUIET_S = 40  # longer than the rules' 30 s window: 20 evaluations at 2 s
MIN_EVALUATIONS = 10  # of every rule group seen within QUIET_S: half of those due, on 2 busy cores


def metrics_config() -> dict[str, Any]:
    cfg = dev_config_with_free_ports()
    config = cfg["config"]
    config["mm2:workerGroups"]["mm2"]["workers"] = 1
    config["mm2:workerGroups"]["mm2"]["metricsPort"] = free_port_block(1)
    for cluster in config["mm2:clusters"].values():
        cluster["metricsPort"] = free_port_block(1)
    return cfg


class Producing(threading.Thread):
    """Keeps the source producing into `orders` (about 20 records a second) until stopped."""

    def __init__(self, outputs: dict[str, Any]) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Producer

        self.producer = Producer(kafka_conf(outputs, "primary", **{"linger.ms": 5}))
        self.done = threading.Event()
        self.sent = 0

    def run(self) -> None:
        run = uuid.uuid4().hex[:6]
        while not self.done.wait(0.05):
            self.producer.produce("orders", key=f"{run}-{self.sent}".encode(), value=b"metrics")
            self.producer.poll(0)
            self.sent += 1
        self.producer.flush(10)


def prometheus_config(stack: TestStack, outputs: dict[str, Any], tmp: Path) -> Path:
    """`bin/prometheus-config` on the deployed stack, as an operator runs it: the stack's config
    file and a saved copy of its outputs (for the lag exporter's job). The directory it wrote."""
    saved, out = write_outputs(outputs, tmp / "outputs.json"), tmp / "monitoring"
    args = ["--config-file", str(stack.config_file), "--outputs", str(saved), "--interval", SCRAPE, "--out", str(out)]
    run = subprocess.run([str(ROOT / "bin" / "prometheus-config"), *args], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "lag exporters: 1 job(s)" in run.stdout, run.stdout
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestStack, Prometheus, Producing]]:
    with running(tmp_path_factory.mktemp("metrics"), metrics_config()) as stack:
        outputs = stack.outputs()
        producing = Producing(outputs)
        producing.start()
        topology = stack.topology()
        # The jobs include the lag exporter's (from the outputs): the lag rules are loaded for a
        # local group with a flow, and unscraped MM2LagExporterDown is pending from the start.
        written = prometheus_config(stack, outputs, tmp_path_factory.mktemp("prometheus-config"))
        scrape = yaml.safe_load((written / SCRAPE_FILE).read_text())["scrape_configs"]
        prometheus = Prometheus(
            tmp_path_factory.mktemp("prometheus"),
            rule_groups(topology, FAST),
            scrape,
            SCRAPE,
            rule_files=[written / RULES_FILE],
        )
        try:
            yield stack, prometheus, producing
        finally:
            prometheus.stop()
            producing.done.set()
            producing.join(30)


def test_metric_names_the_rules_use_exist(world: tuple[TestStack, Prometheus, Producing]) -> None:
    stack, prometheus, _ = world
    heartbeat = stack.outputs()["flows"][FLOW]["connectors"]["heartbeat"]
    wanted = {
        "replication latency": f'{names.REPLICATION_LATENCY_MAX}{{topic="primary.orders"}}',
        "replicated records": f'{names.RECORD_COUNT}{{topic="primary.orders"}}',
        "heartbeats emitted": f'{names.SOURCE_RECORDS_WRITTEN}{{connector="{heartbeat}"}}',
        "failed tasks": names.FAILED_TASK_COUNT,
        "connector status": f'{names.CONNECTOR_STATUS}{{status="running"}}',
        "source broker intake": f'{names.BROKER_MESSAGES_IN}{{mm2_cluster="primary",topic="orders"}}',
    }
    missing: dict[str, str] = dict(wanted)

    def all_there() -> bool:
        for what, expr in list(missing.items()):
            if prometheus.query(expr):
                del missing[what]
        return not missing

    try:
        wait_until(all_there, 180, "every metric the rules use to be scraped", poll_s=2)
    except AssertionError:
        up = prometheus.query("up")
        raise AssertionError(f"metrics never scraped: {missing}; targets: {up}") from None
    # Every target up: the worker, both clusters' brokers and the group's lag exporter. Each
    # appears in `up` after its own first scrape, which need not come before the metrics above
    # (seen in CI: dr's not yet there).

    def all_up() -> bool:
        targets = prometheus.query("up")
        return len(targets) == 4 and all(t["value"][1] == "1" for t in targets)

    try:
        wait_until(all_up, 60, "all four scrape targets up", poll_s=1)
    except AssertionError:
        raise AssertionError(f"scrape targets: {prometheus.query('up')}") from None


def test_prometheus_loaded_what_bin_prometheus_config_wrote(world: tuple[TestStack, Prometheus, Producing]) -> None:
    _, prometheus, _ = world
    [rules_file] = [path for path in prometheus.rule_files if path.name == RULES_FILE]
    jobs = yaml.safe_load((rules_file.parent / SCRAPE_FILE).read_text())["scrape_configs"]
    written = {j["job_name"]: {t for c in j["static_configs"] for t in c["targets"]} for j in jobs}
    assert set(written) == {"mm2-cluster-primary", "mm2-cluster-dr", "mm2-workers-mm2", "mm2-lag-mm2"}
    assert str(rules_file) in yaml.safe_load(prometheus.api("status/config")["yaml"])["rule_files"]

    def scraped() -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for target in prometheus.targets():
            if target["health"] == "up":
                found.setdefault(target["labels"]["job"], set()).add(target["labels"]["instance"])
        return found

    try:
        wait_until(lambda: scraped() == written, 60, "every target bin/prometheus-config wrote scraped as up", poll_s=1)
    except AssertionError:
        raise AssertionError(f"written {written}; targets {prometheus.targets()}") from None
    # Its rule groups, with their default `for:`, evaluated without error.
    groups = yaml.safe_load(rules_file.read_text())["groups"]
    expected = {g["name"]: [(r["alert"], parse_duration(r["for"])) for r in g["rules"]] for g in groups}

    def loaded() -> dict[str, list[tuple[str, int | None]]]:
        from_file = [g for g in prometheus.rule_groups() if g["file"] == str(rules_file)]
        assert all(r["health"] in ("ok", "unknown") for g in from_file for r in g["rules"]), from_file
        return {
            g["name"]: [(r["name"], int(r["duration"])) for r in g["rules"]]
            for g in from_file
            if all(r["health"] == "ok" for r in g["rules"])
        }

    try:
        wait_until(lambda: loaded() == expected, 60, f"the rule groups of {rules_file} loaded and evaluated", poll_s=1)
    except AssertionError:
        raise AssertionError(f"written {expected}; loaded and evaluated {loaded()}") from None


def test_stopping_the_source_connector_fires_an_alert(world: tuple[TestStack, Prometheus, Producing]) -> None:
    stack, prometheus, producing = world
    # Healthy first: nothing pending or firing while records flow and heartbeats are written.
    sent_before = producing.sent
    evaluations = stays_quiet(prometheus)
    print(f"\nno alert pending or firing for {QUIET_S}s: rule evaluations seen {sorted(evaluations.values())}")
    assert producing.is_alive() and producing.sent > sent_before
    replicated = f'sum(increase({names.RECORD_COUNT}{{topic="primary.orders"}}[{QUIET_S}s])) > 0'
    assert prometheus.query(replicated), "the rules were evaluated on a flow that replicated nothing"

    stack.config["config"]["mm2:flows"][FLOW]["connectorStates"] = {"source": "stopped"}
    stack.write_config()
    stack.up()
    stopped_at = time.monotonic()
    wanted = {"MM2NoRecordsWhileSourceProducing", "MM2HeartbeatStale"}
    fired = wait_until(
        lambda: (f := prometheus.firing()) and wanted & set(f) and f, FIRE_BOUND_S, "the throughput or heartbeat alert"
    )
    elapsed = time.monotonic() - stopped_at
    print(f"\nalerts firing {elapsed:.0f}s after `pulumi up` stopped the source connector: {sorted(fired)}")
    assert "MM2NoRecordsWhileSourceProducing" in fired, fired
    [labels] = fired["MM2NoRecordsWhileSourceProducing"]
    assert labels["flow"] == FLOW and labels["mm2_worker_group"] == "mm2"


def rule_snapshot(prometheus: Prometheus) -> tuple[dict[tuple[str, str], str], list[str]]:
    """From one answer of Prometheus's rules API: each loaded rule group's (file, name) and its last
    evaluation time ("" before its first), and every alerting rule not inactive or not healthy."""
    evaluated: dict[tuple[str, str], str] = {}
    active: list[str] = []
    for group in prometheus.rule_groups():
        at = group["lastEvaluation"]
        evaluated[(group["file"], group["name"])] = "" if at.startswith("0001-") else at  # Go's zero time
        for rule in group["rules"]:
            if rule.get("type") == "alerting" and (rule["state"] != "inactive" or rule["health"] != "ok"):
                labels = [a["labels"] for a in rule.get("alerts") or []]
                active.append(f"{rule['name']} {rule['state']} ({rule['health']} {rule.get('lastError', '')}) {labels}")
    return evaluated, active


def stays_quiet(prometheus: Prometheus) -> dict[tuple[str, str], int]:
    """Waits (bounded) for an evaluation of every rule group of every rule file Prometheus was given
    with every alert inactive, then asserts that no answer for QUIET_S shows one pending or firing
    (polled at half the evaluation interval, so no evaluation's outcome goes unseen), and that each
    group was evaluated at least MIN_EVALUATIONS times meanwhile: an idle or stuck Prometheus shows
    no alert either. Returns the evaluations seen per group."""
    groups = {
        (str(path), group["name"])
        for path in prometheus.rule_files
        for group in yaml.safe_load(path.read_text())["groups"]
    }

    def settled() -> bool:
        evaluated, active = rule_snapshot(prometheus)
        return set(evaluated) == groups and all(evaluated.values()) and not active

    wait_until(settled, SETTLE_S, f"rule groups {sorted(groups)} evaluated with every alert inactive", poll_s=1)
    seen: dict[tuple[str, str], set[str]] = {group: set() for group in groups}

    def active_alerts() -> list[str]:
        evaluated, active = rule_snapshot(prometheus)
        for group, at in evaluated.items():
            seen.setdefault(group, set()).add(at)
        return active

    stays_false(active_alerts, QUIET_S, "an alert pending or firing while the flow runs", poll_s=1)
    counts = {group: len(times - {""}) for group, times in seen.items()}
    assert set(counts) == groups and min(counts.values()) >= MIN_EVALUATIONS, f"evaluations in {QUIET_S}s: {counts}"
    return counts
