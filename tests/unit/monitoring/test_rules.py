"""The shared alert rules, proven with `promtool test rules` (Debian's `prometheus` package,
installed by `bin/bootstrap --test-tools`; missing, the promtool tests fail with that fix): each
alert fires on the series that mean trouble and stays quiet on healthy ones. Here with the short
thresholds the integration tests use (FAST); the defaults every stack gets are proven to fire
after their own `for:` and not before in test_rules_defaults.py."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from components.monitoring.rules import Selectors, Thresholds, alert_groups
from components.topology import parse_topology

from ..topology.helpers import dev_config
from .promtool import (
    EXPIRED,
    FLOW,
    FLOW_LAG,
    HEARTBEAT_WRITES,
    LAG,
    LAST_READ,
    MESSAGES_IN,
    READ_ERRORS,
    RECORDS,
    RECREATIONS,
    RuleFile,
    W,
    case,
)

FAST = Thresholds(
    replication_latency_ms=1000, checkpoint_latency_ms=1000, window="1m", latency_for="1m", failure_for="1m"
)


def groups(config: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    topology = parse_topology(config or dev_config())
    return alert_groups(topology, topology.worker_groups["mm2"], Selectors(), FAST)


FAST_RULES = RuleFile(groups())
expected, assert_promtool = FAST_RULES.expected, FAST_RULES.assert_tests


def run_promtool(tmp_path: Path, tests: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    return FAST_RULES.test(tmp_path, tests)


def test_rules_pass_promtool_check(tmp_path: Path) -> None:
    out = FAST_RULES.check(tmp_path)
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


def test_lag_above_rpo_fires_and_clears(tmp_path: Path) -> None:
    # The flow pauses at 0: its oldest record not copied ages with the clock (RPO 5m, `for` 1m);
    # it resumes at 10m15s and catches up.
    above = expected("MM2FlowLagAboveRPO", "420")
    assert_promtool(
        tmp_path,
        [
            case(
                {FLOW_LAG: "0+15x40 0x20"},
                [
                    {"eval_time": "5m", "alertname": "MM2FlowLagAboveRPO", "exp_alerts": []},  # at the RPO
                    {"eval_time": "6m", "alertname": "MM2FlowLagAboveRPO", "exp_alerts": []},  # not yet `for`
                    {"eval_time": "7m", "alertname": "MM2FlowLagAboveRPO", "exp_alerts": [above]},
                    {"eval_time": "11m", "alertname": "MM2FlowLagAboveRPO", "exp_alerts": []},
                ],
            )
        ],
    )


def test_lag_below_rpo_does_not_fire(tmp_path: Path) -> None:
    other = 'mm2_flow_lag_seconds{mm2_lag_exporter="other",flow="x->y",source="x",target="y"}'
    assert_promtool(
        tmp_path,
        [
            case(
                {FLOW_LAG: "299x40", other: "9000x40"},  # just below the RPO; another group's flow far above
                [{"eval_time": "9m", "alertname": "MM2FlowLagAboveRPO", "exp_alerts": []}],
            )
        ],
    )


def test_records_expired_before_replication_fire_at_once(tmp_path: Path) -> None:
    # Every known partition is exposed at 0 from the start; retention deletes 40 records of
    # partition 0 before MM2 copied them at 5m15s.
    series = {
        EXPIRED.format(lag=LAG, flow=FLOW, p=0, reason="deleted"): "0x20 40x40",
        EXPIRED.format(lag=LAG, flow=FLOW, p=1, reason="deleted"): "0x60",
    }
    fired = expected("MM2RecordsExpiredBeforeReplication", topic="orders", partition="0", reason="deleted")
    assert_promtool(
        tmp_path,
        [
            case(
                series,
                [
                    {"eval_time": "5m", "alertname": "MM2RecordsExpiredBeforeReplication", "exp_alerts": []},
                    {"eval_time": "5m15s", "alertname": "MM2RecordsExpiredBeforeReplication", "exp_alerts": [fired]},
                    {"eval_time": "6m", "alertname": "MM2RecordsExpiredBeforeReplication", "exp_alerts": [fired]},
                    # A window (1m here) later the loss is old news (still listed by /expired and bin/status).
                    {"eval_time": "6m30s", "alertname": "MM2RecordsExpiredBeforeReplication", "exp_alerts": []},
                ],
            )
        ],
    )


def test_expired_counter_that_first_appears_above_zero_fires(tmp_path: Path) -> None:
    # A `recreated` series exists only once records were lost with a re-created topic, and an
    # exporter's first reading can already count expiries: their first sample is above 0.
    recreated = EXPIRED.format(lag=LAG, flow=FLOW, p=0, reason="recreated")
    fired = expected("MM2RecordsExpiredBeforeReplication", topic="orders", partition="0", reason="recreated")
    assert_promtool(
        tmp_path,
        [
            case(
                {recreated: "_x20 12x40"},
                [
                    {"eval_time": "4m", "alertname": "MM2RecordsExpiredBeforeReplication", "exp_alerts": []},
                    {"eval_time": "5m", "alertname": "MM2RecordsExpiredBeforeReplication", "exp_alerts": [fired]},
                    {"eval_time": "5m45s", "alertname": "MM2RecordsExpiredBeforeReplication", "exp_alerts": [fired]},
                    {"eval_time": "7m", "alertname": "MM2RecordsExpiredBeforeReplication", "exp_alerts": []},
                ],
            ),
            case(
                {recreated: "12x40"},
                [{"eval_time": "30s", "alertname": "MM2RecordsExpiredBeforeReplication", "exp_alerts": [fired]}],
            ),
        ],
    )


def test_expired_counter_after_a_scrape_gap_or_a_reset_fires_only_if_it_counted_more(tmp_path: Path) -> None:
    # 5 records lost long ago; the exporter is not scraped from 3m to 10m (down, or a new port).
    lost = EXPIRED.format(lag=LAG, flow=FLOW, p=0, reason="deleted")
    fired = expected("MM2RecordsExpiredBeforeReplication", topic="orders", partition="0", reason="deleted")
    assert_promtool(
        tmp_path,
        [
            case(
                {lost: "5x12 _x28 5x20"},
                [{"eval_time": "10m30s", "alertname": "MM2RecordsExpiredBeforeReplication", "exp_alerts": []}],
            ),
            case(
                {lost: "5x12 _x28 9x20"},  # 4 more deleted while nobody looked
                [{"eval_time": "10m30s", "alertname": "MM2RecordsExpiredBeforeReplication", "exp_alerts": [fired]}],
            ),
            # The counter starts over (an exporter without its state file) and counts 8 new ones:
            # below the 50 seen before, still a loss.
            case(
                {lost: "50x10 8x20"},
                [{"eval_time": "3m", "alertname": "MM2RecordsExpiredBeforeReplication", "exp_alerts": [fired]}],
            ),
        ],
    )


def test_source_topic_recreated_fires_at_once(tmp_path: Path) -> None:
    fired = expected("MM2SourceTopicRecreated", topic="orders")
    assert_promtool(
        tmp_path,
        [
            case(
                {RECREATIONS: "0x20 1x40"},
                [
                    {"eval_time": "5m", "alertname": "MM2SourceTopicRecreated", "exp_alerts": []},
                    {"eval_time": "5m15s", "alertname": "MM2SourceTopicRecreated", "exp_alerts": [fired]},
                    {"eval_time": "7m", "alertname": "MM2SourceTopicRecreated", "exp_alerts": []},
                ],
            )
        ],
    )


def test_lag_exporter_down_fires_when_it_is_not_up_or_not_scraped(tmp_path: Path) -> None:
    exporter = f"up{{{LAG}}}"
    worker = f'up{{job="mm2-workers-mm2",{W},instance="127.0.0.1:19410"}}'
    down = expected("MM2LagExporterDown")
    assert_promtool(
        tmp_path,
        [
            case(
                {exporter: "1x8 0x30", worker: "1x40"},  # it dies at 2m15s
                [
                    {"eval_time": "2m", "alertname": "MM2LagExporterDown", "exp_alerts": []},
                    {"eval_time": "3m", "alertname": "MM2LagExporterDown", "exp_alerts": []},  # not yet `for`
                    {"eval_time": "4m", "alertname": "MM2LagExporterDown", "exp_alerts": [down]},
                ],
            ),
            # Not scraped at all (no job written for it): as blind as down.
            case({worker: "1x20"}, [{"eval_time": "2m", "alertname": "MM2LagExporterDown", "exp_alerts": [down]}]),
        ],
    )


def scraped(value: Callable[[int], float], seconds: int, at: int = 1) -> str:
    """A series as Prometheus scrapes it every 15 s, `at` s into each evaluation interval (so the
    next evaluation reads a sample 15 - `at` s old), for `interval="1s"`: `value(t)` at each
    scrape t, nothing between."""
    return " ".join(f"{value(t):g}" if t % 15 == at else "_" for t in range(seconds + 1))


def test_lag_readings_stale_fires_when_the_last_reading_stops_advancing(tmp_path: Path) -> None:
    # A reading every 5 s until 2m, then none until 4m40s; no read error counted (only the
    # timestamp can tell). The last is 15 s old at 2m15s (three intervals: not yet stale), stale
    # from 2m30s, firing `for` (1m) later; it clears at the first evaluation after readings resume.
    stale = expected("MM2LagReadingsStale")
    assert_promtool(
        tmp_path,
        [
            case(
                {LAST_READ: "0+5x24 120x30 280+5x30", READ_ERRORS: "0x86"},
                [
                    {"eval_time": "2m15s", "alertname": "MM2LagReadingsStale", "exp_alerts": []},
                    {"eval_time": "3m15s", "alertname": "MM2LagReadingsStale", "exp_alerts": []},  # not yet `for`
                    {"eval_time": "3m30s", "alertname": "MM2LagReadingsStale", "exp_alerts": [stale]},
                    {"eval_time": "4m30s", "alertname": "MM2LagReadingsStale", "exp_alerts": [stale]},
                    {"eval_time": "4m45s", "alertname": "MM2LagReadingsStale", "exp_alerts": []},
                ],
                interval="5s",
            )
        ],
    )


def test_lag_readings_stale_means_older_than_three_reading_intervals(tmp_path: Path) -> None:
    # Each scraped reading exactly 15 s old (3 x POLL_S) is not stale; 16 s old is.
    stale = expected("MM2LagReadingsStale")
    assert_promtool(
        tmp_path,
        [
            case(
                {LAST_READ: "-15+5x60", READ_ERRORS: "0x60"},
                [{"eval_time": "4m", "alertname": "MM2LagReadingsStale", "exp_alerts": []}],
                interval="5s",
            ),
            case(
                {LAST_READ: "-16+5x60", READ_ERRORS: "0x60"},
                [{"eval_time": "4m", "alertname": "MM2LagReadingsStale", "exp_alerts": [stale]}],
                interval="5s",
            ),
        ],
    )


def test_lag_readings_stale_fires_when_read_errors_grow_and_nothing_was_read(tmp_path: Path) -> None:
    # The exporter started while the flow's source did not answer: every reading fails (an error
    # every 5 s) and there is no last-reading timestamp at all to go stale.
    stale = expected("MM2LagReadingsStale")
    assert_promtool(
        tmp_path,
        [
            case(
                {READ_ERRORS: "0+1x60"},
                [
                    {"eval_time": "1m", "alertname": "MM2LagReadingsStale", "exp_alerts": []},  # not yet `for`
                    {"eval_time": "1m15s", "alertname": "MM2LagReadingsStale", "exp_alerts": [stale]},
                ],
                interval="5s",
            )
        ],
    )


def test_lag_readings_stale_stays_quiet_while_readings_advance(tmp_path: Path) -> None:
    # A reading every 5 s and no error. Scraped every 5 s; and scraped every 15 s, 14 s before the
    # evaluation that reads the sample, the reading then 4 s old (readings at 5j + 2 s): its age
    # at the evaluation, `time() - timestamp`, would be 18 s, and it is still fresh.
    every_5s = {LAST_READ: "0+5x120", READ_ERRORS: "0x120"}
    late = {LAST_READ: scraped(lambda t: t - (t - 2) % 5, 600), READ_ERRORS: scraped(lambda t: 0, 600)}
    quiet = [{"eval_time": at, "alertname": "MM2LagReadingsStale", "exp_alerts": []} for at in ("2m", "5m", "9m")]
    assert_promtool(tmp_path, [case(every_5s, quiet, interval="5s"), case(late, quiet, interval="1s")])


def test_lag_readings_stale_ignores_failed_readings_among_good_ones(tmp_path: Path) -> None:
    # Every sixth reading fails (counted; the timestamp skips it) from 1m on: errors grow in every
    # window, yet the last good reading is never more than 10 s old.
    def failed(k: int) -> bool:
        return k >= 12 and k % 6 == 5

    last = [max(j for j in range(k + 1) if not failed(j)) * 5 for k in range(121)]
    errors = [sum(failed(j) for j in range(k + 1)) for k in range(121)]
    series = {LAST_READ: " ".join(map(str, last)), READ_ERRORS: " ".join(map(str, errors))}
    quiet = [{"eval_time": at, "alertname": "MM2LagReadingsStale", "exp_alerts": []} for at in ("3m", "5m", "9m")]
    assert_promtool(tmp_path, [case(series, quiet, interval="5s")])


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
    selectors = Selectors(workers='job="w-{group}"', lag='job="lag-{group}"')
    [group] = alert_groups(topology, topology.worker_groups["mm2"], selectors, FAST)
    lag_rules = {"MM2LagExporterDown", "MM2FlowLagAboveRPO", "MM2RecordsExpiredBeforeReplication"}
    lag_rules |= {"MM2SourceTopicRecreated", "MM2LagReadingsStale"}
    assert lag_rules <= {r["alert"] for r in group["rules"]}
    for r in group["rules"]:
        assert ('job="lag-mm2"' if r["alert"] in lag_rules else 'job="w-mm2"') in r["expr"], r["alert"]


def test_no_lag_rules_where_the_platform_runs_no_lag_exporter() -> None:
    topology = parse_topology(dev_config())
    [group] = alert_groups(topology, topology.worker_groups["mm2"], Selectors(lag=None), FAST)
    assert not [r for r in group["rules"] if "mm2_lag" in r["expr"] or r["alert"].startswith("MM2LagExporter")]


def test_no_lag_rules_for_a_group_without_enabled_flows() -> None:
    # The stack runs no exporter for it (components/connect_group.py): its down alert would never clear.
    config = dev_config()
    config["flows"]["primary->dr"]["enabled"] = False
    topology = parse_topology(config)
    [group] = alert_groups(topology, topology.worker_groups["mm2"], Selectors(), FAST)
    assert "MM2LagExporterDown" not in {r["alert"] for r in group["rules"]}


def test_rpo_rule_takes_each_flows_declared_rpo() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["rpo"] = "2m"
    config["flows"]["primary->dr"]["outageBudget"] = "6h"
    topology = parse_topology(config)
    [group] = alert_groups(topology, topology.worker_groups["mm2"], Selectors(), FAST)
    [above] = [r for r in group["rules"] if r["alert"] == "MM2FlowLagAboveRPO"]
    assert above["expr"].endswith(" > 120") and 'flow="primary->dr"' in above["expr"]
    assert "RPO 2m (120 s)" in above["annotations"]["description"]
    [expired] = [r for r in group["rules"] if r["alert"] == "MM2RecordsExpiredBeforeReplication"]
    assert "outage budget (6h)" in expired["annotations"]["description"]


def test_lag_rules_read_the_exporters_metrics() -> None:
    from components.monitoring import rules
    from components.watch.lag import METRICS

    for name in (rules.FLOW_LAG_SECONDS, rules.EXPIRED_RECORDS, rules.TOPIC_RECREATIONS, rules.LAST_READ):
        assert name in METRICS, name
    assert METRICS[rules.EXPIRED_RECORDS][0] == METRICS[rules.TOPIC_RECREATIONS][0] == "counter"
    assert METRICS[rules.READ_ERRORS][0] == "counter" and METRICS[rules.LAST_READ][0] == "gauge"


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
    assert all('mm2_worker_group="mm2"' in r["expr"] or 'mm2_lag_exporter="mm2"' in r["expr"] for r in group["rules"])
