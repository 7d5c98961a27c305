"""components/platform/kubernetes/broker_roll.py against a simulated cluster: one broker at a time
in roll_plan's order, each only when the cluster can spare it; refusals name what they waited for."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from components.platform.kubernetes import broker_roll
from components.platform.kubernetes.broker_roll import BrokerRollProvider, roll
from components.platform.kubernetes.roll_plan import BrokerPod, BrokerReading, PartitionState
from components.rpc_values import Refused
from tests.unit.clock import Clock

PROPS = {
    "cluster": "us",
    "namespace": "mm2",
    "statefulset": "us-kafka",
    "replicas": 3,
    "template": "t2",
    "context": "",
    "bound": "60s",
    "override": False,
    "override_key": "mm2-platform:kubernetes.clusters.us.rollOverride",
    "admin": {"bootstrap": "127.0.0.1:30090", "client": {}},
}


class Cluster:
    """Three brokers on the old revision; a deleted pod is back RUNNING `restart_s` later, and its
    partitions in sync `sync_s` after that. Broker 1 is the active controller."""

    def __init__(self, clock: Clock, *, down: int | None = None, restart_s: float = 10, sync_s: float = 6) -> None:
        self.clock, self.restart_s, self.sync_s = clock, restart_s, sync_s
        self.pod = {o: BrokerPod(o, f"us-kafka-{o}", f"old-{o}", o != down, False, f"n{o}") for o in range(3)}
        self.deleted_at: dict[int, float] = {}
        self.deleted: list[int] = []
        self.down_during_delete: list[int] = []

    def _now(self, o: int) -> tuple[BrokerPod | None, bool]:
        """(pod, in sync) of broker o now."""
        if o not in self.deleted_at:
            return self.pod[o], self.pod[o].ready
        gone = self.clock() - self.deleted_at[o]
        if gone < 2:
            return None, False
        new = replace(self.pod[o], uid=f"new-{o}", current=True, ready=gone >= self.restart_s)
        return new, gone >= self.restart_s + self.sync_s

    def pods(self) -> list[BrokerPod]:
        return [p for o in range(3) if (p := self._now(o)[0]) is not None]

    def readings(self, pods: list[BrokerPod]) -> dict[int, BrokerReading]:
        return {p.ordinal: r for p in pods if p.ready and (r := self.reading(p.name)) is not None}

    def reading(self, name: str) -> BrokerReading | None:
        o = int(name[-1])
        pod, in_sync = self._now(o)
        if pod is None or not pod.ready:
            return None
        return BrokerReading(state=3, active_controller=o == 1, metadata_lag_ms=100.0 if in_sync else 9_000.0)

    def partitions(self) -> list[PartitionState]:
        isr = tuple(o for o in range(3) if self._now(o)[1])
        return [PartitionState("orders", 0, (0, 1, 2), isr, 2)]

    def delete(self, pod: BrokerPod) -> None:
        self.down_during_delete.append(sum(1 for o in range(3) if not self._now(o)[1]))
        self.deleted.append(pod.ordinal)
        self.deleted_at[pod.ordinal] = self.clock()


def run(cluster: Cluster, clock: Clock, **props: Any) -> str:
    return roll({**PROPS, **props}, cluster, clock, clock.pause)


def test_one_at_a_time_highest_first_the_active_controller_last() -> None:
    clock = Clock()
    cluster = Cluster(clock)
    summary = run(cluster, clock)
    assert cluster.deleted == [2, 0, 1]
    # Every deletion found the whole cluster in sync: the previous broker was back first.
    assert cluster.down_during_delete == [0, 0, 0]
    assert summary.count("RUNNING after 10s, in sync after 16s") == 3, summary


def test_nothing_on_the_old_revision_restarts_nothing() -> None:
    clock = Clock()
    cluster = Cluster(clock)
    cluster.pod = {o: replace(p, current=True) for o, p in cluster.pod.items()}
    assert run(cluster, clock) == "nothing to restart" and cluster.deleted == []


def test_a_new_cluster_is_waited_for_until_every_broker_is_ready() -> None:
    clock = Clock()
    cluster = Cluster(clock)
    cluster.pod = {o: replace(p, current=True, ready=o != 0) for o, p in cluster.pod.items()}
    pods = cluster.pods
    cluster.pods = lambda: [replace(p, ready=True) if clock.now >= 30 else p for p in pods()]  # type: ignore[method-assign]
    assert run(cluster, clock) == "nothing to restart" and cluster.deleted == []
    assert 30 <= clock.now < 35
    clock.now, cluster.pods = 0.0, pods  # type: ignore[method-assign]
    with pytest.raises(Refused, match=r"the brokers to be ready: waited 60s \(readyTimeout\) for: broker 0"):
        run(cluster, clock)


def test_a_new_cluster_whose_pod_cannot_start_is_refused_once_it_lasts() -> None:
    clock = Clock()
    cluster = Cluster(clock)
    rack = "cannot start: init container rack: CrashLoopBackOff"
    cluster.pod = {
        o: replace(p, current=True, ready=False, stuck=rack if o == 2 else "") for o, p in cluster.pod.items()
    }

    def unreachable() -> list[PartitionState]:
        raise OSError("no broker answers")

    cluster.partitions = unreachable  # type: ignore[method-assign]
    with pytest.raises(Refused) as refused:
        run(cluster, clock)
    assert f"pod us-kafka-2 {rack}" in str(refused.value) and cluster.deleted == []
    assert clock.now < 30  # within LASTING_S, not at readyTimeout (60 s here)


def test_with_a_broker_down_the_roll_refuses_before_touching_another() -> None:
    clock = Clock()
    cluster = Cluster(clock, down=1)
    with pytest.raises(Refused) as refused:
        run(cluster, clock)
    assert cluster.deleted == []
    said = str(refused.value)
    assert "did not start (no broker was restarted): broker 1 (pod us-kafka-1 on node n1) is not ready" in said
    assert "rollOverride: true rolls anyway" in said


def test_the_override_rolls_a_cluster_with_a_broker_down_the_down_one_too() -> None:
    clock = Clock()
    cluster = Cluster(clock, down=1)
    summary = run(cluster, clock, override=True)
    # No wait for the cluster to spare a broker, nor for partitions in sync: each new pod RUNNING.
    assert cluster.deleted == [2, 1, 0]
    assert summary.count("RUNNING after 10s") == 3 and "in sync after 16s" not in summary, summary


def test_a_broker_that_does_not_come_back_stops_the_roll_naming_it() -> None:
    clock = Clock()
    cluster = Cluster(clock, restart_s=600)
    with pytest.raises(Refused) as refused:
        run(cluster, clock)
    assert cluster.deleted == [2]
    said = str(refused.value)
    assert "stopped after restarting broker(s) 2: broker 2 coming back: waited 60s (readyTimeout)" in said
    assert "pod us-kafka-2 to be ready (broker RUNNING)" in said


def test_a_new_pod_that_cannot_start_stops_the_roll_once_it_lasts() -> None:
    clock = Clock()
    cluster = Cluster(clock, restart_s=600)
    pods = cluster.pods
    pull = "cannot start: container kafka: ErrImagePull: no such image"
    cluster.pods = lambda: [replace(p, stuck=pull) if p.uid == "new-2" else p for p in pods()]  # type: ignore[method-assign]
    with pytest.raises(Refused) as refused:
        run(cluster, clock)
    assert cluster.deleted == [2] and f"pod us-kafka-2 {pull}" in str(refused.value)
    assert clock.now < 30  # within LASTING_S of the problem, not at readyTimeout (60 s here)


def test_an_override_left_on_is_refused_at_preview() -> None:
    provider = BrokerRollProvider()
    on = {**PROPS, "override": True}
    with pytest.raises(Refused, match=r"rollOverride: still true, but this up changes nothing"):
        provider.diff("mm2/us-kafka", on, on)
    assert provider.diff("mm2/us-kafka", PROPS, on).changes  # turned on with a change: the roll it forces
    assert provider.diff("mm2/us-kafka", on, {**on, "template": "t3"}).changes
    # A new admin password is how the roll connects, not a reason to roll.
    assert not provider.diff("mm2/us-kafka", PROPS, {**PROPS, "admin": {"bootstrap": "x", "client": {}}}).changes


def _admin(password: str, user: str = "admin", refusal: str = "") -> dict[str, Any]:
    client = {"sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": password}
    admin = {"bootstrap": "127.0.0.1:30090", "client": client}
    return {**PROPS, "mechanism": "SCRAM-SHA-512", "admin_rotation": refusal, "admin": admin}


def test_a_new_admin_password_is_refused_at_preview_where_it_cannot_rotate() -> None:
    provider = BrokerRollProvider()
    why = "without TLS, admin is also how the brokers log in to each other"
    with pytest.raises(Refused, match=r"mm2:secrets\.us\.admin\.password: .* cannot be rotated: without TLS"):
        provider.diff("mm2/us-kafka", _admin("old-pw", refusal=why), _admin("new-pw", refusal=why))
    # Where it can (SCRAM over TLS) the new password is not a roll of its own: the new secrets
    # file on the pod template is.
    assert not provider.diff("mm2/us-kafka", _admin("old-pw"), _admin("new-pw")).changes
    assert not provider.diff("mm2/us-kafka", _admin("old-pw", refusal=why), _admin("old-pw", refusal=why)).changes
    # A cluster moving onto the stack's admin (from its one SCRAM user) is not a rotation.
    assert not provider.diff("mm2/us-kafka", _admin("pw", user="mm2", refusal=why), _admin("new", refusal=why)).changes
    unknown = {**PROPS, "admin_rotation": why, "admin": "04da6b54-80e4-46f7-96ec-b56ff0331ba9"}  # not known yet
    assert not provider.diff("mm2/us-kafka", _admin("old-pw", refusal=why), unknown).changes


def test_a_rotating_roll_logs_in_with_the_new_scram_credential_set_first(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    login = {"bootstrap": "127.0.0.1:30090", "client": {"sasl.mechanism": "SCRAM-SHA-512"}}

    def switch(olds: dict[str, Any], news: dict[str, Any]) -> dict[str, Any]:
        calls.append(f"switch {olds['admin']['client']['sasl.password']}->{news['admin']['client']['sasl.password']}")
        return login

    def rolled(props: dict[str, Any]) -> str:
        calls.append(f"roll as {props['admin']['client']['sasl.mechanism']}")
        return "rolled"

    monkeypatch.setattr(broker_roll, "switch_admin", switch)
    monkeypatch.setattr(broker_roll, "roll", rolled)
    provider = BrokerRollProvider()
    outs = provider.update("mm2/us-kafka", _admin("old-pw"), {**_admin("new-pw"), "template": "t3"}).outs
    assert calls == ["switch old-pw->new-pw", "roll as SCRAM-SHA-512"]
    assert outs["admin"]["client"]["sasl.mechanism"] == "PLAIN"  # the state keeps the stack's own login
    calls.clear()
    provider.update("mm2/us-kafka", _admin("pw"), {**_admin("pw"), "template": "t3"})
    assert calls == ["roll as PLAIN"]  # no rotation: the roll logs in as always
