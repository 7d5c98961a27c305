"""Failed means drift: the provider's read reports FAILED and long-UNASSIGNED tasks, and its
update restarts only what failed (MockTransport Connect, fake sleep)."""

from __future__ import annotations

from typing import Any

import pytest

from components.connect.errors import ConnectorOperationFailed
from components.connect.provider import UNASSIGNED_BOUND_S, ConnectorProvider, health_drift

from .fakes import FakeConnect, FakeSleep, running
from .test_provider import failed, outputs, props

ACL_TRACE = (
    "org.apache.kafka.connect.errors.ConnectException: Unrecoverable exception from producer send callback\n"
    "\tat org.apache.kafka.connect.runtime.WorkerSourceTask.maybeThrowProducerSendException(...)\n"
    "Caused by: org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized to access topics\n"
)


def live(name: str = "c1") -> dict[str, dict[str, str]]:
    return {name: {**props(name)["config"], "name": name}}


def unassigned(name: str) -> dict[str, Any]:
    status = running(name, tasks=2)
    status["tasks"][1] = {"id": 1, "state": "UNASSIGNED", "worker_id": "w1:8083"}
    return status


def test_refresh_reports_a_failed_task_as_drift_with_its_first_trace_line() -> None:
    fake = FakeConnect(connectors=live(), statuses={"c1": [failed("c1", ACL_TRACE)]})
    result = provider_for(fake).read("c1", outputs(props("c1")))
    assert result.inputs is not None and result.outs is not None
    assert result.inputs["desired_state"] == (
        "FAILED: task 0 FAILED on worker w0:8083: org.apache.kafka.connect.errors.ConnectException: "
        "Unrecoverable exception from producer send callback"
    )
    assert result.outs["tasks"] == [{"id": 0, "state": "FAILED", "worker_id": "w0:8083"}]
    diff = ConnectorProvider().diff("c1", result.inputs, props("c1"))
    assert diff.changes and diff.detailed_diff == {"desired_state": "update"}


def test_a_second_refresh_keeps_reporting_a_failure_that_is_still_there() -> None:
    fake = FakeConnect(connectors=live(), statuses={"c1": [failed("c1", ACL_TRACE)]})
    first = provider_for(fake).read("c1", outputs(props("c1")))
    assert first.outs is not None
    again = provider_for(fake).read("c1", first.outs)
    assert again.inputs is not None and again.inputs["desired_state"] == first.outs["desired_state"]
    assert again.inputs["desired_state"].startswith("FAILED: task 0")


def test_refresh_reports_a_failed_connector_even_when_declared_paused() -> None:
    status = {"name": "c1", "connector": {"state": "FAILED", "worker_id": "w1", "trace": "java.lang.X: boom\n\tat y"}}
    fake = FakeConnect(connectors=live(), statuses={"c1": [{**status, "tasks": []}]})
    result = provider_for(fake).read("c1", {**outputs(props("c1")), "desired_state": "PAUSED"})
    assert result.inputs is not None
    assert result.inputs["desired_state"] == "FAILED: connector FAILED on worker w1: java.lang.X: boom"


def test_refresh_of_a_healthy_connector_after_a_failure_clears_the_drift() -> None:
    fake = FakeConnect(connectors=live())
    old = {**outputs(props("c1")), "desired_state": "FAILED: task 0 FAILED on worker w0: x"}
    result = provider_for(fake).read("c1", old)
    assert result.inputs is not None and result.inputs["desired_state"] == "RUNNING"


def test_a_task_unassigned_for_a_moment_is_not_drift() -> None:
    fake = FakeConnect(connectors=live(), statuses={"c1": [unassigned("c1"), running("c1", tasks=2)]})
    sleep = FakeSleep()
    result = provider_for(fake, sleep).read("c1", outputs(props("c1")))
    assert result.inputs is not None and result.inputs["desired_state"] == "RUNNING"
    assert sleep.total < UNASSIGNED_BOUND_S


def test_a_task_unassigned_past_the_bound_is_drift() -> None:
    fake = FakeConnect(connectors=live(), statuses={"c1": [unassigned("c1")]})
    sleep = FakeSleep()
    result = provider_for(fake, sleep).read("c1", outputs(props("c1")))
    assert result.inputs is not None
    assert result.inputs["desired_state"].startswith("UNASSIGNED: task(s) 1 ran on no worker for 15s")
    assert sleep.total == pytest.approx(UNASSIGNED_BOUND_S)


def test_up_restarts_only_what_failed_and_waits_for_running() -> None:
    fake = FakeConnect(
        connectors=live(),
        statuses={"c1": [failed("c1", ACL_TRACE), failed("c1", ACL_TRACE), running("c1")]},
    )
    old = {**outputs(props("c1")), "desired_state": "FAILED: task 0 FAILED on worker w0: x"}
    result = provider_for(fake).update("c1", old, props("c1"))
    restarts = [r for r in fake.requests if r.url.path.endswith("/restart")]
    assert [dict(r.url.params) for r in restarts] == [{"includeTasks": "true", "onlyFailed": "true"}]
    assert "PUT /connectors/c1/config" not in fake.seen()  # the config did not change
    assert result.outs is not None and result.outs["state"] == "RUNNING"
    assert result.outs["desired_state"] == "RUNNING"


def test_up_reports_the_trace_when_the_restart_fails_again() -> None:
    again = failed("c1", ACL_TRACE)
    fake = FakeConnect(connectors=live(), statuses={"c1": [failed("c1"), {**running("c1"), "tasks": []}, again]})
    with pytest.raises(ConnectorOperationFailed) as caught:
        provider_for(fake).update("c1", outputs(props("c1")), props("c1"))
    text = str(caught.value)
    assert "task 0 FAILED on worker w0:8083" in text
    assert "TopicAuthorizationException" in text
    assert "Only what had FAILED was restarted, and it failed again" in text


def test_up_gives_a_restart_time_to_take_effect_before_calling_it_failed_again() -> None:
    # Connect applies the restart on the herder thread: the old FAILED answer repeats for a while.
    fake = FakeConnect(connectors=live(), statuses={"c1": [failed("c1")] * 4 + [running("c1")]})
    sleep = FakeSleep()
    result = provider_for(fake, sleep).update("c1", outputs(props("c1")), props("c1"))
    assert result.outs is not None and result.outs["state"] == "RUNNING"


def test_up_does_not_restart_a_healthy_or_paused_connector() -> None:
    fake = FakeConnect(connectors=live())
    provider_for(fake).update("c1", outputs(props("c1")), {**props("c1"), "desired_state": "PAUSED"})
    provider_for(fake).update("c1", outputs(props("c1")), props("c1"))
    assert not any(path.endswith("/restart") for path in fake.seen())


def test_health_drift_names_every_failed_instance_count() -> None:
    status = failed("c1")
    status["tasks"].append({"id": 1, "state": "FAILED", "worker_id": "w1", "trace": "x.Y: z"})
    assert health_drift(status) is not None and health_drift(status).endswith("(and 1 more)")  # type: ignore[union-attr]
    assert health_drift(running("c1")) is None
    assert health_drift(None) is None


def provider_for(fake: FakeConnect, sleep: FakeSleep | None = None) -> ConnectorProvider:
    return ConnectorProvider(transport_factory=fake.factory(), sleep=sleep or FakeSleep())
