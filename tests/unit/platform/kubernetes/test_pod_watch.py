"""The watch on a workload's pods starting, with the pods and the clock given
(components/platform/kubernetes/pod_watch.py): it stops when every pod of this version runs,
fails naming a lasting reason only once it has lasted, and leaves the rest to the workload's own
wait."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.platform.kubernetes.api import Unsupported
from components.platform.kubernetes.pod_watch import POLL_S, READY, SAY_EVERY_S, watch
from components.platform.kubernetes.scheduling import LASTING_S
from components.rpc_values import Refused
from tests.unit.clock import Clock
from tests.unit.platform.kubernetes.test_scheduling import CLAIM, CPU, PULL, RACK_FAILS, pod, ready_pod

PROPS = {
    "name": "us-kafka",
    "namespace": "mm2",
    "selector": {"app": "kafka"},
    "replicas": 2,
    "template": "d1",
    "what": "the brokers of us",
    "resources_key": "mm2-platform:kubernetes.kafka.resources",
    "count_key": "mm2:clusters.us.brokers",
    "context": "",
    "bound": "1m",
}


class Pods:
    """What the API answers at each poll (the last answer repeats)."""

    def __init__(self, *answers: list[dict[str, Any]] | Exception) -> None:
        self.answers = list(answers)
        self.polls = 0

    def list(self) -> list[dict[str, Any]]:
        answer = self.answers[min(self.polls, len(self.answers) - 1)]
        self.polls += 1
        if isinstance(answer, Exception):
            raise answer
        return answer


def run(pods: Pods, props: dict[str, Any] = PROPS) -> tuple[str, float]:
    clock = Clock()
    return watch(props, pods, clock, clock.pause), clock.now


def test_done_once_every_pod_of_this_version_runs() -> None:
    old = [pod("us-kafka-0", node="n1", digest="d0"), pod("us-kafka-1", node="n1", digest="d0")]
    rolling = [pod("us-kafka-0", node="n1", digest="d0"), pod("us-kafka-1", CLAIM, digest="d1")]
    creating = {"waiting": {"reason": "ContainerCreating"}}
    starting = [pod("us-kafka-0", node="n1", digest="d1"), pod("us-kafka-1", node="n1", digest="d1", state=creating)]
    done = [pod("us-kafka-0", node="n1", digest="d1"), pod("us-kafka-1", node="n1", digest="d1")]
    pods = Pods([], old, rolling, OSError("API server restarting"), starting, done)
    assert run(pods) == ("started", 5 * POLL_S)


def test_a_lasting_reason_fails_with_the_report_once_it_has_lasted() -> None:
    pods = Pods([pod("us-kafka-0", node="n1", digest="d1"), pod("us-kafka-1", CPU, digest="d1")])
    clock = Clock()
    with pytest.raises(Refused) as refused:
        watch(PROPS, pods, clock, clock.pause)
    assert LASTING_S <= clock.now < LASTING_S + 2 * POLL_S
    assert str(refused.value).startswith("the brokers of us: pod us-kafka-1 cannot be scheduled: 0/1 nodes")
    assert "Fix: lower mm2-platform:kubernetes.kafka.resources (requests)" in str(refused.value)


def test_a_reason_that_clears_before_it_lasts_is_not_reported() -> None:
    brief = [pod("us-kafka-0", node="n1", digest="d1"), pod("us-kafka-1", CPU, digest="d1")]
    done = [pod("us-kafka-0", node="n1", digest="d1"), pod("us-kafka-1", node="n2", digest="d1")]
    polls = int(LASTING_S / POLL_S) - 1
    assert run(Pods(*([brief] * polls), done)) == ("started", polls * POLL_S)


def test_a_passing_reason_is_left_to_the_workloads_own_wait_at_the_bound() -> None:
    waiting = [pod("us-kafka-0", node="n1", digest="d1"), pod("us-kafka-1", CLAIM, digest="d1")]
    assert run(Pods(waiting)) == ("waited", 60.0)


@pytest.mark.parametrize(
    ("init", "said"), [({"state": PULL}, "ErrImageNeverPull"), (RACK_FAILS, "rack: node n2 has no label z")]
)
def test_a_pod_whose_image_or_init_container_fails_fails_the_watch_naming_it(init: dict[str, Any], said: str) -> None:
    waiting = {"waiting": {"reason": "PodInitializing"}}
    stuck = [
        pod("us-kafka-0", node="n1", digest="d1"),
        pod("us-kafka-1", node="n1", digest="d1", state=waiting, init=init),
    ]
    clock = Clock()
    with pytest.raises(Refused) as refused:
        watch(PROPS, Pods(stuck), clock, clock.pause)
    assert str(refused.value).startswith("the brokers of us: pod us-kafka-1 cannot start: init container rack")
    assert said in str(refused.value)


def test_a_pull_that_flips_between_its_two_reasons_is_one_problem() -> None:
    waiting = {"waiting": {"reason": "PodInitializing"}}
    backoff = {"waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "mm2-iac/kafka:absent"'}}
    pulling = {"waiting": {"reason": "ErrImagePull", "message": 'failed to pull "mm2-iac/kafka:absent"'}}
    flips = [
        [pod("us-kafka-0", node="n1", digest="d1", state=waiting, init={"state": reason})]
        for reason in (pulling, backoff) * int(LASTING_S)
    ]
    clock = Clock()
    with pytest.raises(Refused):
        watch({**PROPS, "replicas": 1}, Pods(*flips), clock, clock.pause)
    assert clock.now < LASTING_S + 2 * POLL_S


WORKERS = {
    **PROPS,
    "name": "g-connect",
    "what": "the workers of g",
    "resources_key": "mm2-platform:kubernetes.connect.resources",
    "count_key": "mm2:workerGroups.g.workers",
    "until": READY,
}


def test_a_deployments_watch_waits_for_its_rollout() -> None:
    running = [ready_pod("g-0", "d1", is_ready=False), ready_pod("g-1", "d1", is_ready=False), ready_pod("g-o", "d0")]
    half = [ready_pod("g-0", "d1"), ready_pod("g-1", "d1", is_ready=False), ready_pod("g-o", "d0")]
    old_left = [ready_pod("g-0", "d1"), ready_pod("g-1", "d1"), ready_pod("g-o", "d0")]
    done = [ready_pod("g-0", "d1"), ready_pod("g-1", "d1")]
    assert run(Pods(running, half, old_left, done), WORKERS) == ("ready", 3 * POLL_S)
    # A StatefulSet's watch is done once they run: their readiness is the roll's.
    assert run(Pods(running), PROPS) == ("started", 0.0)


def test_a_deployment_not_ready_at_readytimeout_fails_saying_what_its_pods_are_at(
    caplog: pytest.LogCaptureFixture,
) -> None:
    starting = [ready_pod("g-0", "d1"), ready_pod("g-1", "d1", is_ready=False)]
    clock = Clock()
    with caplog.at_level("INFO", logger="dynamic_provider.pod_watch"), pytest.raises(Refused) as refused:
        watch(WORKERS, Pods(starting), clock, clock.pause)
    assert 60.0 <= clock.now < 60.0 + POLL_S
    assert str(refused.value).startswith(
        "the workers of g: 1 of 2 pod(s) of this version Ready after readyTimeout 1m; pod g-1: container kafka running"
    )
    # Progress while it waits, every SAY_EVERY_S, not every poll.
    said = [r.getMessage() for r in caplog.records]
    assert said == ["the workers of g: 1 of 2 pod(s) of this version Ready"] * 2  # at 20 s and 40 s
    assert SAY_EVERY_S == 20.0


def test_a_deployment_whose_pods_cannot_be_read_at_readytimeout_says_why() -> None:
    clock = Clock()
    with pytest.raises(Refused) as refused:
        watch(WORKERS, Pods(OSError("exec plugin aws: not found on PATH")), clock, clock.pause)
    said = str(refused.value)
    assert said.startswith("the workers of g: 0 of 2 pod(s) of this version Ready after readyTimeout 1m")
    assert said.endswith("(Its pods' last read failed: exec plugin aws: not found on PATH.)")
    # A read that fails now and then is not reported once a later one answers.
    starting = [ready_pod("g-0", "d1"), ready_pod("g-1", "d1", is_ready=False)]
    with pytest.raises(Refused) as refused:
        watch(WORKERS, Pods(OSError("restarting"), starting), clock, clock.pause)
    assert "last read failed" not in str(refused.value)


def test_a_deployments_container_that_keeps_failing_fails_the_watch_once_it_has_lasted() -> None:
    crashing = ready_pod("g-0", "d1", is_ready=False, state={"waiting": {"reason": "CrashLoopBackOff"}})
    crashing["status"]["containerStatuses"][0]["lastState"] = {"terminated": {"reason": "Error", "exitCode": 1}}
    clock = Clock()
    with pytest.raises(Refused) as refused:
        watch({**WORKERS, "replicas": 1}, Pods([crashing]), clock, clock.pause)
    assert LASTING_S <= clock.now < LASTING_S + 2 * POLL_S
    assert "the workers of g: pod g-0 cannot start: container kafka fails: Error, exit code 1" in str(refused.value)
    assert "kubectl logs --previous g-0 -c kafka" in str(refused.value)


def test_a_deployments_readiness_unreadable_as_the_user_fails_its_watch() -> None:
    said = r"the workers of g: their readiness cannot be read \(the kubeconfig's user 'u' of context 'x'\)\. Fix: "
    with pytest.raises(Refused, match=said):
        run(Pods(Unsupported("user 'u' of context 'x'")), WORKERS)
    assert run(Pods(Unsupported("user 'u' of context 'x'")), PROPS) == ("unread", 0.0)


def test_a_context_the_kubeconfig_lacks_leaves_a_statefulsets_watch_out_and_fails_a_deployments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(json.dumps({"contexts": [{"name": "here", "context": {"cluster": "c"}}]}))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    assert watch({**PROPS, "context": "elsewhere"}) == "unread"
    with pytest.raises(Refused, match=r"their readiness cannot be read \(no kubeconfig context 'elsewhere'"):
        watch({**WORKERS, "context": "elsewhere"})
