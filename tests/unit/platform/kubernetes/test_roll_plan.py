"""components/platform/kubernetes/roll_plan.py: the order of a roll and when a broker may restart."""

from __future__ import annotations

from components.platform.kubernetes.roll_plan import (
    QUORUM_LAG_MS,
    BrokerPod,
    BrokerReading,
    PartitionState,
    back_blockers,
    preflight,
    quorum_short,
    reading_of,
    refusal_text,
    roll_order,
    step_blockers,
    would_fall_below,
)

CAUGHT_UP = BrokerReading(state=3, metadata_lag_ms=200.0)


def pod(ordinal: int, *, ready: bool = True, current: bool = False, uid: str = "") -> BrokerPod:
    return BrokerPod(ordinal, f"us-kafka-{ordinal}", uid or f"uid-{ordinal}", ready, current, f"node-{ordinal}")


def partition(isr: tuple[int, ...], replicas: tuple[int, ...] = (0, 1, 2), min_isr: int = 2) -> PartitionState:
    return PartitionState("orders", 0, replicas, isr, min_isr)


def test_highest_ordinal_first_and_the_active_controller_last() -> None:
    pods = [pod(0), pod(1), pod(2), pod(3, current=True)]
    readings = {2: BrokerReading(state=3, active_controller=True)}
    assert roll_order(pods, readings) == [1, 0, 2]
    assert roll_order([pod(0, current=True)], {}) == []


def test_a_broker_in_a_partition_at_its_minimum_may_not_restart() -> None:
    at_min = partition(isr=(0, 1))
    assert would_fall_below(1, [at_min]) == [at_min]
    assert would_fall_below(2, [at_min]) == []  # not in the ISR: its restart takes nothing away
    assert would_fall_below(0, [partition(isr=(0, 1, 2))]) == []
    # A single replica is offline while its broker restarts whatever the roll waits for.
    assert would_fall_below(0, [partition(isr=(0,), replicas=(0,), min_isr=1)]) == []


def test_the_quorum_needs_a_majority_caught_up_without_the_broker() -> None:
    assert quorum_short(0, 3, {1: CAUGHT_UP, 2: CAUGHT_UP}) is None
    behind = BrokerReading(state=3, metadata_lag_ms=QUORUM_LAG_MS + 1)
    short = quorum_short(0, 3, {1: CAUGHT_UP, 2: behind})
    assert short is not None and "broker(s) 2 behind" in short and "needs 2 of 3" in short
    assert quorum_short(0, 3, {1: CAUGHT_UP}) is not None  # broker 2 not answering
    assert quorum_short(0, 1, {}) is None  # one voter: its restart is its outage, nothing to keep


def test_a_step_names_every_reason_to_wait() -> None:
    pods = [pod(0), pod(1, ready=False), pod(2)]
    at_min = partition(isr=(0, 2))
    blockers = step_blockers(0, pods, 3, [at_min], {2: CAUGHT_UP})
    assert blockers[0] == "broker 1 (pod us-kafka-1 on node node-1) is not ready"
    assert (
        "1 partition(s) would fall below min.insync.replicas without it: orders-0 (replicas 0,1,2, in sync 0,2)"
        in (blockers[1])
    )
    assert "quorum needs 2 of 3" in blockers[2]
    healthy = [pod(0), pod(1), pod(2)]
    assert step_blockers(0, healthy, 3, [partition(isr=(0, 1, 2))], {1: CAUGHT_UP, 2: CAUGHT_UP}) == []


def test_a_roll_does_not_start_with_a_broker_down_or_a_partition_short() -> None:
    assert preflight([pod(0), pod(2)], 3, []) == ["broker 1 has no pod"]
    (short,) = preflight([pod(0), pod(1), pod(2)], 3, [partition(isr=(0, 1))])
    assert short.startswith("1 partition(s) under-replicated: orders-0")
    assert preflight([pod(0), pod(1), pod(2)], 3, [partition(isr=(0, 1, 2))]) == []


def test_a_restarted_broker_is_back_when_running_in_sync_and_caught_up() -> None:
    old = "uid-1"
    assert back_blockers(pod(1, uid=old, current=True), old, CAUGHT_UP, []) == ["its new pod to be created"]
    assert back_blockers(pod(1, uid="new"), old, CAUGHT_UP, []) == ["pod us-kafka-1 to run the new revision"]
    starting = pod(1, uid="new", current=True, ready=False)
    assert back_blockers(starting, old, None, []) == ["pod us-kafka-1 to be ready (broker RUNNING)"]
    running = pod(1, uid="new", current=True)
    waiting = back_blockers(running, old, BrokerReading(state=3), [partition(isr=(0, 2))])
    assert waiting[0].startswith("1 partition(s) to be in sync again") and "catch up" in waiting[1]
    assert back_blockers(running, old, CAUGHT_UP, [partition(isr=(0, 1, 2))]) == []


def test_the_exporter_answer_gives_state_controller_and_lag() -> None:
    text = (
        "# TYPE kafka_server_kafkaserver_brokerstate gauge\n"
        "kafka_server_kafkaserver_brokerstate 3.0\n"
        "kafka_controller_kafkacontroller_activecontrollercount 1.0\n"
        "kafka_controller_kafkacontroller_lastappliedrecordlagms 174.0\n"
        'kafka_server_brokertopicmetrics_messagesin_count{topic="orders"} 12.0\n'
    )
    assert reading_of(text) == BrokerReading(state=3, active_controller=True, metadata_lag_ms=174.0)
    assert reading_of("") == BrokerReading()


def test_the_refusal_says_what_was_restarted_and_the_override() -> None:
    text = refusal_text("us", "mm2-platform:kubernetes.clusters.us.rollOverride", ["broker 1 has no pod"], [])
    assert text.startswith("the roll of us's brokers did not start (no broker was restarted): broker 1 has no pod.")
    assert "mm2-platform:kubernetes.clusters.us.rollOverride: true rolls anyway" in text
    assert "stopped after restarting broker(s) 2,1" in refusal_text("us", "k", ["x"], [2, 1])
