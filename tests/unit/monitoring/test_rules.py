"""The shared alert rules, proven with `promtool test rules` (Debian's `prometheus` package,
installed by `bin/bootstrap --test-tools`): each alert fires on the series that mean trouble and
stays quiet on healthy ones. Without promtool the promtool tests skip, except under CI."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.monitoring.rules import Selectors, Thresholds, alert_groups
from components.topology import parse_topology

from ..topology.helpers import dev_config

FAST = Thresholds(
    replication_latency_ms=1000, checkpoint_latency_ms=1000, window="1m", latency_for="1m", failure_for="1m"
)
W = 'mm2_worker_group="mm2"'
HEARTBEAT_WRITES = f'kafka_connect_source_task_records_written{{{W},connector="mm2-primary-to-dr-heartbeat",task="0"}}'
RECORDS = 'kafka_connect_mirror_source_connector_record_count{{{w},target="dr",topic="{topic}",partition="0"}}'
MESSAGES_IN = 'kafka_server_brokertopicmetrics_messagesin_count{{mm2_cluster="primary",topic="{topic}"}}'


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is missing under CI: bin/bootstrap --test-tools installs Debian's prometheus package")
        pytest.skip("promtool not on PATH: run `bin/bootstrap --test-tools` (installs Debian's prometheus package)")
    return found


def groups(config: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    topology = parse_topology(config or dev_config())
    return alert_groups(topology, topology.worker_groups["mm2"], Selectors(), FAST)


def rule(name: str, **labels: str) -> dict[str, Any]:
    [group] = groups()
    found = [
        r for r in group["rules"] if r["alert"] == name and all(r["labels"].get(k) == v for k, v in labels.items())
    ]
    assert len(found) == 1, (name, labels)
    return found[0]


def expected(name: str, value: str = "", match: dict[str, str] | None = None, **labels: str) -> dict[str, Any]:
    """What promtool reports for alert `name` (the rule whose labels include `match`) firing with
    the rule's labels plus `labels`, its annotations rendered."""
    r = rule(name, **(match or {}))
    all_labels = {**r["labels"], **labels}

    def render(text: str) -> str:
        text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: all_labels[m.group(1)], text)
        return text.replace("{{ $value }}", value)

    return {"exp_labels": all_labels, "exp_annotations": {k: render(v) for k, v in r["annotations"].items()}}


def run_promtool(tmp_path: Path, tests: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": groups()}, sort_keys=False))
    (tmp_path / "tests.yml").write_text(
        yaml.safe_dump({"rule_files": ["rules.yml"], "evaluation_interval": "15s", "tests": tests}, sort_keys=False)
    )
    return subprocess.run(
        [promtool(), "test", "rules", "tests.yml"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )


def assert_promtool(tmp_path: Path, tests: list[dict[str, Any]]) -> None:
    out = run_promtool(tmp_path, tests)
    assert out.returncode == 0, out.stdout + out.stderr


def case(series: dict[str, str], checks: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "interval": "15s",
        "input_series": [{"series": s, "values": v} for s, v in series.items()],
        "alert_rule_test": checks,
    }


def test_rules_pass_promtool_check(tmp_path: Path) -> None:
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": groups()}))
    out = subprocess.run([promtool(), "check", "rules", "rules.yml"], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_heartbeat_stale_fires_for_a_one_way_flow_when_its_heartbeats_stop(tmp_path: Path) -> None:
    # One heartbeat per second (15 per sample) for 5 minutes, then none.
    series = {HEARTBEAT_WRITES: "0+15x20 300x40"}
    stale = expected("MM2HeartbeatStale", match={"flow": "primary->dr"})
    assert_promtool(
        tmp_path,
        [
            case(
                series,
                [
                    {"eval_time": "4m", "alertname": "MM2HeartbeatStale", "exp_alerts": []},
                    {"eval_time": "9m", "alertname": "MM2HeartbeatStale", "exp_alerts": [stale]},
                ],
            )
        ],
    )


def test_heartbeat_stale_fires_when_the_series_never_existed(tmp_path: Path) -> None:
    stale = expected("MM2HeartbeatStale", match={"flow": "primary->dr"})
    other = (
        'kafka_connect_worker_connector_failed_task_count{mm2_worker_group="mm2",connector="mm2-primary-to-dr-source"}'
    )
    assert_promtool(
        tmp_path,
        [case({other: "0x20"}, [{"eval_time": "3m", "alertname": "MM2HeartbeatStale", "exp_alerts": [stale]}])],
    )


def test_failed_tasks_and_connectors_fire(tmp_path: Path) -> None:
    failed_tasks = f'kafka_connect_worker_connector_failed_task_count{{{W},connector="mm2-primary-to-dr-source"}}'
    status = f'kafka_connect_connector_status{{{W},connector="mm2-primary-to-dr-checkpoint",status="failed"}}'
    other = 'kafka_connect_worker_connector_failed_task_count{mm2_worker_group="other",connector="mm2-x-to-y-source"}'
    assert_promtool(
        tmp_path,
        [
            case(
                {failed_tasks: "0x8 1x20", status: "1x20", other: "5x20", HEARTBEAT_WRITES: "0+15x40"},
                [
                    {"eval_time": "1m", "alertname": "MM2ConnectorTasksFailed", "exp_alerts": []},
                    {
                        "eval_time": "4m",
                        "alertname": "MM2ConnectorTasksFailed",
                        "exp_alerts": [expected("MM2ConnectorTasksFailed", "1", connector="mm2-primary-to-dr-source")],
                    },
                    {
                        "eval_time": "4m",
                        "alertname": "MM2ConnectorFailed",
                        "exp_alerts": [expected("MM2ConnectorFailed", connector="mm2-primary-to-dr-checkpoint")],
                    },
                ],
            )
        ],
    )


def test_replication_latency_fires_above_the_threshold_only(tmp_path: Path) -> None:
    latency = (
        "kafka_connect_mirror_source_connector_replication_latency_ms_max"
        f'{{{W},source="primary",target="dr",topic="TOPIC",partition="0"}}'
    ).replace
    assert_promtool(
        tmp_path,
        [
            case(
                {
                    latency("TOPIC", "primary.orders"): "5000x20",
                    latency("TOPIC", "primary.payments"): "10x20",
                    latency("TOPIC", "primary.heartbeats"): "9000x20",
                },
                [
                    {
                        "eval_time": "3m",
                        "alertname": "MM2ReplicationLatencyHigh",
                        "exp_alerts": [
                            expected(
                                "MM2ReplicationLatencyHigh",
                                "5000",
                                source="primary",
                                target="dr",
                                topic="primary.orders",
                            )
                        ],
                    }
                ],
            )
        ],
    )


def test_no_records_fires_only_while_the_source_produces(tmp_path: Path) -> None:
    producing = {
        MESSAGES_IN.format(topic="orders"): "0+10x40",
        RECORDS.format(w=W, topic="primary.orders"): "0+10x12 120x28",  # replication stops at 3m
        HEARTBEAT_WRITES: "0+15x40",
    }
    idle = {
        MESSAGES_IN.format(topic="orders"): "50x40",  # the source takes nothing
        RECORDS.format(w=W, topic="primary.orders"): "50x40",
        HEARTBEAT_WRITES: "0+15x40",
    }
    fired = expected("MM2NoRecordsWhileSourceProducing", match={"flow": "primary->dr"})
    assert_promtool(
        tmp_path,
        [
            case(
                producing,
                [
                    {"eval_time": "2m", "alertname": "MM2NoRecordsWhileSourceProducing", "exp_alerts": []},
                    {"eval_time": "7m", "alertname": "MM2NoRecordsWhileSourceProducing", "exp_alerts": [fired]},
                ],
            ),
            case(idle, [{"eval_time": "7m", "alertname": "MM2NoRecordsWhileSourceProducing", "exp_alerts": []}]),
        ],
    )


def test_worker_group_down_fires_when_no_worker_is_up_or_none_is_scraped(tmp_path: Path) -> None:
    worker = 'up{{job="mm2-workers-mm2",{w},instance="127.0.0.1:{port}"}}'
    first, second = worker.format(w=W, port=19410), worker.format(w=W, port=19411)
    other = 'up{job="mm2-workers-other",mm2_worker_group="other",instance="127.0.0.1:19420"}'
    down = expected("MM2WorkerGroupDown")
    assert_promtool(
        tmp_path,
        [
            # One worker dies at 2m (the group lives on), the second at 4m: the group is down.
            case(
                {first: "1x8 0x30", second: "1x16 0x30", other: "0x40"},
                [
                    {"eval_time": "3m", "alertname": "MM2WorkerGroupDown", "exp_alerts": []},
                    {"eval_time": "4m30s", "alertname": "MM2WorkerGroupDown", "exp_alerts": []},  # not yet `for`
                    {"eval_time": "6m", "alertname": "MM2WorkerGroupDown", "exp_alerts": [down]},
                ],
            ),
            # Both come back (a restart): it clears.
            case(
                {first: "0x8 1x8", second: "0x8 1x8"},
                [
                    {"eval_time": "1m30s", "alertname": "MM2WorkerGroupDown", "exp_alerts": [down]},
                    {"eval_time": "3m", "alertname": "MM2WorkerGroupDown", "exp_alerts": []},
                ],
            ),
            # No target of the group at all (only another group's): down.
            case(
                {other: "1x20"},
                [{"eval_time": "2m", "alertname": "MM2WorkerGroupDown", "exp_alerts": [down]}],
            ),
        ],
    )


def test_promtool_tests_can_fail(tmp_path: Path) -> None:
    # A healthy heartbeat series and an expectation that the alert fires: promtool must say no.
    out = run_promtool(
        tmp_path,
        [
            case(
                {HEARTBEAT_WRITES: "0+15x40"},
                [
                    {
                        "eval_time": "8m",
                        "alertname": "MM2HeartbeatStale",
                        "exp_alerts": [expected("MM2HeartbeatStale", match={"flow": "primary->dr"})],
                    }
                ],
            )
        ],
    )
    assert out.returncode != 0 and "MM2HeartbeatStale" in out.stdout + out.stderr


def test_replicated_heartbeats_rule_per_two_way_flow() -> None:
    config = dev_config()
    config["flows"]["dr->primary"] = {**config["flows"]["primary->dr"], "topics": ["orders"]}
    [group] = groups(config)
    replicated = {
        r["labels"]["topic"] for r in group["rules"] if r["alert"] == "MM2HeartbeatStale" and "flow" not in r["labels"]
    }
    emitted = {
        r["labels"]["flow"] for r in group["rules"] if r["alert"] == "MM2HeartbeatStale" and "flow" in r["labels"]
    }
    assert replicated == {"primary.heartbeats", "dr.heartbeats"}
    assert emitted == {"primary->dr", "dr->primary"}


def test_selectors_scope_every_expression() -> None:
    topology = parse_topology(dev_config())
    [group] = alert_groups(topology, topology.worker_groups["mm2"], Selectors(workers='job="w-{group}"'), FAST)
    for r in group["rules"]:
        assert 'job="w-mm2"' in r["expr"], r["alert"]


def test_scrape_jobs_label_targets_as_the_rules_select_them() -> None:
    from components.monitoring.prometheus import rule_groups, scrape_configs

    config = dev_config()
    config["clusters"]["primary"]["metricsPort"] = 19400
    config["workerGroups"]["mm2"]["metricsPort"] = 19410
    topology = parse_topology(config)
    jobs = {j["job_name"]: j for j in scrape_configs(topology, "2s")}
    assert set(jobs) == {"mm2-cluster-primary", "mm2-workers-mm2"}  # dr has no metricsPort
    [workers] = jobs["mm2-workers-mm2"]["static_configs"]
    assert workers == {"targets": ["127.0.0.1:19410", "127.0.0.1:19411"], "labels": {"mm2_worker_group": "mm2"}}
    assert jobs["mm2-cluster-primary"]["static_configs"][0]["labels"] == {"mm2_cluster": "primary"}
    [group] = rule_groups(topology)
    assert all('mm2_worker_group="mm2"' in r["expr"] for r in group["rules"])
