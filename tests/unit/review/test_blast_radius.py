"""The blast radius a preview reports, from old and new connector configs and process diffs."""

from __future__ import annotations

from typing import Any

import pytest

from components.review.blast_radius import (
    IDENTITY_POLICY,
    Severity,
    connector_impacts,
    process_impacts,
)

SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
CHECKPOINT = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"


def config(cls: str = SOURCE, **extra: str) -> dict[str, str]:
    return {
        "connector.class": cls,
        "source.cluster.alias": "a",
        "replication.policy.separator": ".",
        "topics": "orders,payments",
        **{k.replace("_", "."): v for k, v in extra.items()},
    }


def impacts(old: dict[str, str], new: dict[str, str], changed: dict[str, str], **kw: Any) -> list[tuple[str, str]]:
    args: dict[str, Any] = {"old_state": "RUNNING", "new_state": "RUNNING", "replaced": False, "tasks": 2, **kw}
    return [i.as_pair() for i in connector_impacts("mm2-a-to-b-source", old, new, changed, **args)]


def test_a_changed_key_names_it_and_says_the_tasks_restart() -> None:
    found = impacts(config(), config(tasks_max="4"), {'config["tasks.max"]': "update"})
    assert found == [
        (
            "info",
            "connector mm2-a-to-b-source: config keys tasks.max change; Connect restarts the connector and its "
            "tasks (2 at the last up)",
        )
    ]


def test_a_separator_change_warns_that_remote_topic_names_change() -> None:
    new = config(**{"replication.policy.separator": "_"})
    found = impacts(config(), new, {'config["replication.policy.separator"]': "update"})
    assert ("warning", found[1][1]) == found[1]
    assert "remote topic names change (a.orders -> a_orders, a.payments -> a_payments)" in found[1][1]


def test_switching_to_identity_keeps_names_and_says_so() -> None:
    new = config(**{"replication.policy.class": IDENTITY_POLICY})
    found = impacts(config(), new, {'config["replication.policy.class"]': "add"})
    assert "(a.orders -> orders, a.payments -> payments)" in found[1][1]


def test_a_checkpoint_naming_change_says_offsets_and_checkpoints_move() -> None:
    old, new = config(CHECKPOINT), config(CHECKPOINT, **{"replication.policy.separator": "-"})
    found = impacts(old, new, {'config["replication.policy.separator"]': "update"})
    assert found[1][0] == "warning"
    assert "checkpoints move to a-checkpoints-internal (was a.checkpoints.internal)" in found[1][1]


def test_group_settings_re_translate_offsets_on_the_checkpoint_connector_only() -> None:
    changed = {'config["sync.group.offsets.enabled"]': "add"}
    checkpoint = impacts(config(CHECKPOINT), config(CHECKPOINT, **{"sync.group.offsets.enabled": "true"}), changed)
    assert [sev for sev, _ in checkpoint] == ["info", "warning"]
    assert "offsets are re-translated (sync.group.offsets.enabled change)" in checkpoint[1][1]
    assert len(impacts(config(), config(), changed)) == 1  # the source connector only restarts


@pytest.mark.parametrize(
    ("new_state", "severity", "words"),
    [("PAUSED", "warning", "paused (RUNNING -> PAUSED)"), ("STOPPED", "warning", "tasks shut down")],
)
def test_pausing_or_stopping_a_flow_warns(new_state: str, severity: str, words: str) -> None:
    (found,) = impacts(config(), config(), {"desired_state": "update"}, new_state=new_state)
    assert found[0] == severity and words in found[1]


def test_resuming_is_information() -> None:
    (found,) = impacts(config(), config(), {"desired_state": "update"}, old_state="PAUSED")
    assert found == ("info", "connector mm2-a-to-b-source: resumed (PAUSED -> RUNNING)")


def test_a_replaced_connector_says_its_tasks_stop() -> None:
    (found,) = impacts(config(), config(), {"connect_url": "update"}, replaced=True)
    assert found[0] == "warning" and "deleted and created again (connect_url changed)" in found[1]


def test_auth_or_timeout_alone_restarts_nothing() -> None:
    assert impacts(config(), config(), {"auth": "update", "timeout_seconds": "update"}) == []


def test_a_worker_of_several_rolls() -> None:
    (found,) = process_impacts("ConnectWorkerGroup 'mm2', worker 1", ['properties["x"]'], replaced=False, group_size=3)
    assert found.severity is Severity.INFO
    assert 'worker 1: restarts (properties["x"] changed), rolling: one of 3 at a time' in found.text
    assert "workers take over its connectors' tasks" in found.text


def test_a_two_broker_cluster_rolls_but_warns_that_its_quorum_pauses() -> None:
    (found,) = process_impacts("KafkaCluster 'a', broker 1", ["heap"], replaced=False, group_size=2)
    assert found.severity is Severity.WARNING
    assert "rolling, one of 2 at a time, but its 2 brokers are its 2 KRaft controllers" in found.text
    (three,) = process_impacts("KafkaCluster 'a', broker 1", ["heap"], replaced=False, group_size=3)
    assert three.severity is Severity.INFO and "brokers keep serving its partitions" in three.text


def test_a_single_broker_restarts_all_at_once_and_warns() -> None:
    (found,) = process_impacts("KafkaCluster 'a', broker 0", ["heap"], replaced=False, group_size=1)
    assert found.severity is Severity.WARNING
    assert "all at once: it is the only one, so replication from and to the cluster stops" in found.text


def test_a_group_that_asks_for_all_at_once_says_so() -> None:
    from components.topology.model import RestartMode

    component = "ConnectWorkerGroup 'mm2', worker 0"
    (found,) = process_impacts(component, ["heap"], replaced=False, group_size=2, mode=RestartMode.ALL_AT_ONCE)
    assert found.severity is Severity.WARNING
    assert "all at once: all 2 together (restarts: all-at-once), so every connector of the group stops" in found.text


def test_a_replaced_process_warns_its_data_goes() -> None:
    (found,) = process_impacts("KafkaCluster 'a', broker 0", ["cluster_id"], replaced=True, group_size=1)
    assert found.severity is Severity.WARNING and "data removed" in found.text


def test_a_process_found_dead_is_started_again() -> None:
    (found,) = process_impacts("KafkaCluster 'a', broker 0", ["running"], replaced=False, group_size=2, found_dead=True)
    assert found.text == "KafkaCluster 'a', broker 0: found stopped by refresh; starts it again"


def test_a_connector_without_tasks_is_not_said_to_restart_them() -> None:
    (found,) = impacts(
        config(CHECKPOINT), config(CHECKPOINT, groups="orders-.*"), {'config["groups"]': "update"}, tasks=0
    )[:1]
    assert found[1].endswith("Connect restarts the connector and would start its tasks (it ran none at the last up)")
