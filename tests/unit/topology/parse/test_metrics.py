"""metricsPort and lagPort: opt-in scraped ports of local brokers, workers and lag exporters, checked at preview."""

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


def test_lag_port_is_opt_in_and_parsed() -> None:
    assert parse_topology(dev_config()).worker_groups["mm2"].lag_port is None
    config = dev_config()
    config["workerGroups"]["mm2"]["lagPort"] = 19420
    assert parse_topology(config).worker_groups["mm2"].lag_port == 19420


def test_lag_port_on_another_platform_is_refused_pointing_at_the_exporters_service() -> None:
    config = dev_config()
    config["workerGroups"]["mm2"]["platform"] = "kubernetes"
    config["workerGroups"]["mm2"]["lagPort"] = 19420
    problem = problem_at(config, "mm2:workerGroups.mm2.lagPort")
    assert "local platform only" in problem.message and "kubernetes" in problem.message
    assert "own Service" in problem.fix


def test_lag_port_out_of_range_or_not_a_number_names_the_key() -> None:
    for given in (80, 70000, "soon"):
        config = dev_config()
        config["workerGroups"]["mm2"]["lagPort"] = given
        problem = problem_at(config, "mm2:workerGroups.mm2.lagPort")
        assert problem.fix, given
    config["workerGroups"]["mm2"]["lagPort"] = 80
    assert "between 1024 and 65535" in problem_at(config, "mm2:workerGroups.mm2.lagPort").fix


def test_lag_port_colliding_with_any_other_port_of_the_stack_names_the_key() -> None:
    def problem_with(lag_port: int) -> str:
        config = dev_config()
        config["workerGroups"]["mm2"]["lagPort"] = lag_port
        problem = problem_at(config, "mm2:workerGroups.mm2.lagPort")
        assert "Pick a lagPort outside" in problem.fix
        return problem.message

    assert "mm2:workerGroups.mm2.restPort (18083..18084)" in problem_with(18084)  # worker 1's REST port
    assert "mm2:clusters.dr.port (19192..19193)" in problem_with(19193)  # dr's controller port
    # Against a metrics port range: reported once, on the metricsPort key, naming the lagPort.
    config = dev_config()
    config["workerGroups"]["mm2"].update(lagPort=19411, metricsPort=19410)
    (problem,) = problems(config)
    assert problem.key == "mm2:workerGroups.mm2.metricsPort"
    assert "mm2:workerGroups.mm2.lagPort (19411..19411)" in problem.message
    # A free port is no problem at all.
    config = dev_config()
    config["workerGroups"]["mm2"].update(lagPort=19420, metricsPort=19410)
    parse_topology(config)


def test_two_groups_on_one_lag_port_collide() -> None:
    config = dev_config()
    config["workerGroups"]["mm2"]["lagPort"] = 19420
    config["workerGroups"]["other"] = {"cluster": "primary", "restPort": 18093, "lagPort": 19420}
    found = [p for p in problems(config) if p.key.endswith(".lagPort")]
    assert len(found) == 1, found  # reported once, on one of the two keys, naming the other
    (problem,) = found
    other = {"mm2:workerGroups.mm2.lagPort", "mm2:workerGroups.other.lagPort"} - {problem.key}
    assert f"{other.pop()} (19420..19420)" in problem.message
