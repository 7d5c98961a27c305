"""`mm2:flows.<flow>.autoRestart`: per flow, per role on top, refused where no watcher runs."""

from __future__ import annotations

from components.topology import parse_topology
from components.topology.model import AutoRestart, ConnectorRole
from tests.unit.topology.helpers import dev_config, problem_at, problems

FLOW = "primary->dr"
WHERE = "mm2:flows.primary->dr.autoRestart"


def policies(auto_restart: object) -> dict[ConnectorRole, AutoRestart]:
    config = dev_config()
    config["flows"][FLOW]["autoRestart"] = auto_restart
    return dict(parse_topology(config).flow(FLOW).auto_restart)


def test_without_auto_restart_no_role_is_watched() -> None:
    assert dict(parse_topology(dev_config()).flow(FLOW).auto_restart) == {}


def test_flow_level_policy_covers_every_role() -> None:
    assert policies({"enabled": True, "maxRestarts": 4}) == dict.fromkeys(ConnectorRole, AutoRestart(True, 4))


def test_role_overrides_sit_on_top_of_the_flow_level() -> None:
    found = policies({"enabled": True, "maxRestarts": 5, "heartbeat": {"enabled": False}, "source": {"maxRestarts": 2}})
    assert found == {
        ConnectorRole.SOURCE: AutoRestart(True, 2),
        ConnectorRole.CHECKPOINT: AutoRestart(True, 5),
    }


def test_one_role_alone_and_no_limit_by_default() -> None:
    assert policies({"source": {"enabled": "true"}}) == {ConnectorRole.SOURCE: AutoRestart(True, None)}


def test_bad_values_name_their_keys() -> None:
    config = dev_config()
    config["flows"][FLOW]["autoRestart"] = {"enabled": "yes", "maxRestart": 3, "sink": {}, "source": {"maxRestarts": 0}}
    found = {p.key for p in problems(config)}
    assert {f"{WHERE}.enabled", f"{WHERE}.maxRestart", f"{WHERE}.sink", f"{WHERE}.source.maxRestarts"} <= found


def test_external_worker_group_has_nothing_to_run_the_watcher() -> None:
    config = dev_config()
    config["clusters"]["dr"] = {"platform": "external", "brokers": 1, "bootstrap": "dr:9092"}
    config["workerGroups"]["mm2"] = {"cluster": "dr", "url": "http://connect.dr:8083"}
    config["flows"][FLOW]["autoRestart"] = {"enabled": True}
    problem = problem_at(config, WHERE)
    assert "platform external" in problem.message and "no auto-restart watcher" in problem.message
    assert "bin/watcher" in problem.fix and "local, kubernetes" in problem.fix
    # Disabled everywhere is no request for a watcher: nothing to refuse.
    config["flows"][FLOW]["autoRestart"] = {"enabled": False}
    assert dict(parse_topology(config).flow(FLOW).auto_restart) == {}
