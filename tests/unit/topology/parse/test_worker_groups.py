"""components/topology/parse/worker_groups.py: worker group problems name the key path and the fix."""

from __future__ import annotations

from components.topology import (
    parse_topology,
)
from tests.unit.topology.helpers import dev_config, problem_at, tls_config


def test_rest_tls_on_an_adopted_connect_is_rejected() -> None:
    config = dev_config()
    config["workerGroups"]["mm2"] = {"cluster": "dr", "url": "http://connect.dr:8083", "restTls": True}
    assert "https://" in problem_at(config, "mm2:workerGroups.mm2.restTls").fix


def test_rest_tls_must_be_a_bool() -> None:
    config = tls_config()
    config["workerGroups"]["mm2"]["restTls"] = "maybe"
    problem_at(config, "mm2:workerGroups.mm2.restTls")


def test_unknown_cluster_in_worker_group() -> None:
    config = dev_config()
    config["workerGroups"]["mm2"]["cluster"] = "disaster"
    problem = problem_at(config, "mm2:workerGroups.mm2.cluster")
    assert "disaster" in problem.message


def test_plain_text_secret_in_worker_config_but_placeholders_pass() -> None:
    config = dev_config()
    config["workerGroups"]["mm2"]["workerConfig"] = {"some.secret": "hunter2"}
    problem_at(config, 'mm2:workerGroups.mm2.workerConfig["some.secret"]')
    config["workerGroups"]["mm2"]["workerConfig"] = {"some.secret": "${file:/etc/mm2/secrets.properties:x}"}
    parse_topology(config)


def test_external_worker_group_needs_a_url() -> None:
    config = dev_config()
    config["clusters"]["dr"] = {"platform": "external", "brokers": 3, "bootstrap": "dr:9092"}
    problem_at(config, "mm2:workerGroups.mm2.url")
    config["workerGroups"]["mm2"] = {"cluster": "dr", "url": "http://connect.dr:8083"}
    assert parse_topology(config).worker_groups["mm2"].url == "http://connect.dr:8083"


def test_restarts_is_rolling_or_all_at_once() -> None:
    from components.topology.model import RestartMode

    config = dev_config()
    assert parse_topology(config).worker_groups["mm2"].restarts is None
    config["workerGroups"]["mm2"]["restarts"] = "all-at-once"
    assert parse_topology(config).worker_groups["mm2"].restarts is RestartMode.ALL_AT_ONCE
    config["workerGroups"]["mm2"]["restarts"] = "sometimes"
    problem = problem_at(config, "mm2:workerGroups.mm2.restarts")
    assert "rolling, all-at-once" in problem.fix
