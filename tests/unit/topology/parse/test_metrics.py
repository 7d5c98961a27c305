"""metricsPort: opt-in exporter ports of local brokers and workers, checked at preview."""

from __future__ import annotations

from components.topology import parse_topology

from ..helpers import dev_config, problem_at, problems


def test_metrics_ports_are_opt_in_and_parsed() -> None:
    assert parse_topology(dev_config()).clusters["primary"].metrics_port is None
    config = dev_config()
    config["clusters"]["primary"]["metricsPort"] = 19400
    config["workerGroups"]["mm2"]["metricsPort"] = 19410
    topology = parse_topology(config)
    assert topology.clusters["primary"].metrics_port == 19400
    assert topology.worker_groups["mm2"].metrics_port == 19410


def test_metrics_port_colliding_with_a_rest_port_names_the_key() -> None:
    config = dev_config()
    config["workerGroups"]["mm2"]["metricsPort"] = 18084  # worker 1's REST port (restPort 18083, 2 workers)
    problem = problem_at(config, "mm2:workerGroups.mm2.metricsPort")
    assert "workerGroups.mm2.restPort" in problem.message and "18083..18084" in problem.message


def test_metrics_port_colliding_with_a_broker_port_names_the_key() -> None:
    config = dev_config()
    config["clusters"]["dr"]["metricsPort"] = 19193  # dr's controller port
    problem = problem_at(config, "mm2:clusters.dr.metricsPort")
    assert "clusters.dr.port" in problem.message


def test_metrics_ports_colliding_with_each_other() -> None:
    config = dev_config()
    config["clusters"]["primary"]["metricsPort"] = 19400
    config["workerGroups"]["mm2"]["metricsPort"] = 19399  # workers 19399..19400
    found = problems(config)
    assert any("metricsPort" in p.key and "19400" in p.message for p in found)


def test_metrics_port_on_another_platform_is_refused() -> None:
    config = dev_config()
    config["clusters"]["dr"] = {"platform": "external", "bootstrap": "kafka:9092", "brokers": 3, "metricsPort": 19400}
    config["workerGroups"]["mm2"]["cluster"] = "primary"
    problem = problem_at(config, "mm2:clusters.dr.metricsPort")
    assert "local platform only" in problem.message


def test_metrics_port_range_past_65535() -> None:
    config = dev_config()
    config["workerGroups"]["mm2"]["metricsPort"] = 65535
    assert "past 65535" in problem_at(config, "mm2:workerGroups.mm2.metricsPort").message
