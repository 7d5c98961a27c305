"""ConnectorProvider operations against the in-memory Connect (no network, no engine)."""

from __future__ import annotations

import json
import pickle
from typing import Any

import dill
import httpx
import pytest
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.output import Unknown

from components.connect.errors import ConnectorOperationFailed
from components.connect.inputs import DEFAULT_TIMEOUT_S
from components.connect.provider import RETRY_SECONDS_ENV, ConnectorProvider, retry_budget_from_env

from .fakes import URL, FakeConnect, FakeSleep, error, running

SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
CHECKPOINT = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
TRACE = (
    "org.apache.kafka.connect.errors.ConnectException: Failed to find any class that implements Connector\n"
    "\tat org.apache.kafka.connect.runtime.Worker.startTask(Worker.java:600)\n"
    "\tat java.base/java.lang.Thread.run(Thread.java:1583)\n"
)


def props(name: str = "mm2-primary-to-dr-source", **config: str) -> dict[str, Any]:
    return {
        "connect_url": URL,
        "name": name,
        "config": {"connector.class": SOURCE, "tasks.max": "1", "topics": "orders", **config},
        "timeout_seconds": 30,
        "__provider": "serialized",
    }


def provider(fake: FakeConnect, sleep: FakeSleep | None = None) -> ConnectorProvider:
    return ConnectorProvider(transport_factory=fake.factory(), sleep=sleep or FakeSleep())


def failed(name: str, trace: str = TRACE) -> dict[str, Any]:
    return {
        "name": name,
        "connector": {"state": "RUNNING", "worker_id": "w0:8083"},
        "tasks": [{"id": 0, "state": "FAILED", "worker_id": "w0:8083", "trace": trace}],
    }


# -- diff ----------------------------------------------------------------------------------------


def outputs(p: dict[str, Any]) -> dict[str, Any]:
    """What the state holds after a create: the inputs plus state and tasks."""
    return {**p, "state": "RUNNING", "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "w0"}]}


def test_diff_identical_reports_no_changes() -> None:
    old = outputs(props())
    new = props()
    new["config"] = dict(reversed(list(new["config"].items())))  # order does not matter
    result = ConnectorProvider().diff("x", old, new)
    assert result.changes is False
    assert result.replaces == []
    assert result.detailed_diff == {}


def test_diff_ignores_the_name_key_connect_adds_to_the_config() -> None:
    old = outputs(props())
    old["config"] = {**old["config"], "name": old["name"]}
    assert ConnectorProvider().diff("x", old, props()).changes is False


def test_diff_of_one_config_key_is_an_update_naming_that_key() -> None:
    result = ConnectorProvider().diff("x", outputs(props()), props(**{"tasks.max": "4"}))
    assert result.changes is True
    assert result.replaces == []
    assert result.delete_before_replace is None
    assert result.diffs == ["config"]
    assert result.detailed_diff == {'config["tasks.max"]': "update"}


def test_diff_reports_added_and_removed_keys() -> None:
    old = outputs(props(**{"sync.group.offsets.enabled": "true"}))
    new = props(**{"emit.heartbeats.interval.seconds": "1"})
    result = ConnectorProvider().diff("x", old, new)
    assert result.detailed_diff == {
        'config["emit.heartbeats.interval.seconds"]': "add",
        'config["sync.group.offsets.enabled"]': "delete",
    }
    assert result.replaces == []


def test_diff_of_the_name_replaces_deleting_first() -> None:
    result = ConnectorProvider().diff("x", outputs(props("old-name")), props("new-name"))
    assert result.changes is True
    assert result.replaces == ["name"]
    assert result.delete_before_replace is True


def test_diff_of_the_connect_url_replaces_but_a_trailing_slash_does_not() -> None:
    moved = {**props(), "connect_url": "http://other:8083"}
    assert ConnectorProvider().diff("x", outputs(props()), moved).replaces == ["connect_url"]
    slash = {**props(), "connect_url": URL + "/"}
    assert ConnectorProvider().diff("x", outputs(props()), slash).changes is False


def test_diff_of_auth_is_an_update() -> None:
    old = outputs({**props(), "auth": {"username": "u", "password": "p1"}})
    new = {**props(), "auth": {"username": "u", "password": "p2"}}
    result = ConnectorProvider().diff("x", old, new)
    assert (result.changes, result.replaces, result.diffs) == (True, [], ["auth"])


def test_diff_with_unknown_config_during_preview_is_an_update() -> None:
    new = {**props(), "config": Unknown()}
    result = ConnectorProvider().diff("x", outputs(props()), new)
    assert (result.changes, result.replaces) == (True, [])


# -- create / update ------------------------------------------------------------------------------


def test_create_puts_config_waits_for_running_and_returns_state() -> None:
    fake = FakeConnect(
        statuses={"c1": [{"name": "c1", "connector": {"state": "UNASSIGNED"}, "tasks": []}, running("c1")]}
    )
    result = provider(fake).create(props("c1"))
    assert result.id == "c1"
    assert result.outs is not None
    assert result.outs["state"] == "RUNNING"
    assert result.outs["tasks"] == [{"id": 0, "state": "RUNNING", "worker_id": "w0:8083"}]
    assert result.outs["config"] == props("c1")["config"]
    assert "__provider" not in result.outs
    assert fake.connectors["c1"]["tasks.max"] == "1"


def test_create_with_a_failed_task_rolls_back_and_explains() -> None:
    fake = FakeConnect(statuses={"c1": [failed("c1")]}, delete_lag=1)
    with pytest.raises(ConnectorOperationFailed) as info:
        provider(fake).create(props("c1"))
    assert "DELETE /connectors/c1" in fake.seen()
    assert "c1" not in fake.connectors
    text = str(info.value)
    assert "'c1'" in text
    assert "task 0 FAILED" in text
    assert "Failed to find any class that implements Connector" in text
    assert "nothing is left half-deployed" in text
    assert "Next step:" in text


def test_create_that_times_out_rolls_back() -> None:
    unassigned = {"name": "c1", "connector": {"state": "UNASSIGNED", "worker_id": "w0"}, "tasks": []}
    fake = FakeConnect(statuses={"c1": [unassigned]})
    with pytest.raises(ConnectorOperationFailed) as info:
        provider(fake).create({**props("c1"), "timeout_seconds": 5})
    assert fake.seen("DELETE") == ["DELETE /connectors/c1"]
    assert "still not RUNNING after 5s" in str(info.value)
    assert "timeout_seconds" in str(info.value)


def test_create_does_not_delete_a_connector_that_existed_before() -> None:
    fake = FakeConnect(connectors={"c1": {"connector.class": SOURCE}}, statuses={"c1": [failed("c1")]})
    with pytest.raises(ConnectorOperationFailed) as info:
        provider(fake).create(props("c1"))
    assert fake.seen("DELETE") == []
    assert "left in place" in str(info.value)


def test_create_rejected_by_connect_says_nothing_was_created() -> None:
    fake = FakeConnect(script={("POST", "/connectors"): [error(400, "Connector configuration is invalid")]})
    with pytest.raises(ConnectorOperationFailed) as info:
        provider(fake).create(props("c1"))
    assert "POST /connectors returned HTTP 400" in str(info.value)
    assert "Nothing was created" in str(info.value)


def test_checkpoint_connector_without_consumer_groups_has_no_tasks_and_is_fine() -> None:
    no_tasks = {"name": "cp", "connector": {"state": "RUNNING", "worker_id": "w0"}, "tasks": []}
    fake = FakeConnect(statuses={"cp": [no_tasks]})
    result = provider(fake).create({**props("cp"), "config": {"connector.class": CHECKPOINT}})
    assert result.outs is not None and result.outs["tasks"] == []


def test_update_puts_the_new_config_and_waits() -> None:
    fake = FakeConnect(connectors={"c1": {"connector.class": SOURCE, "tasks.max": "1"}})
    result = provider(fake).update("c1", outputs(props("c1")), props("c1", **{"tasks.max": "2"}))
    assert fake.connectors["c1"]["tasks.max"] == "2"
    assert fake.seen()[:3] == ["PUT /connectors/c1/config", "PUT /connectors/c1/resume", "GET /connectors/c1/status"]
    assert result.outs is not None and result.outs["state"] == "RUNNING"


# -- desired state -------------------------------------------------------------------------------


def test_create_paused_is_born_paused_and_never_resumed() -> None:
    fake = FakeConnect()
    result = provider(fake).create({**props("c1"), "desired_state": "PAUSED"})
    created = [r for r in fake.requests if r.method == "POST"]
    assert len(created) == 1 and json.loads(created[0].content)["initial_state"] == "PAUSED"
    assert not any(path.endswith("/resume") for path in fake.seen())
    assert result.outs is not None
    assert result.outs["state"] == "PAUSED" and result.outs["desired_state"] == "PAUSED"


def test_create_stopped_waits_until_no_task_is_left() -> None:
    fake = FakeConnect(statuses={"c1": [running("c1", state="RUNNING"), running("c1", state="STOPPED")]})
    sleep = FakeSleep()
    result = provider(fake, sleep).create({**props("c1"), "desired_state": "STOPPED"})
    assert result.outs is not None and result.outs["state"] == "STOPPED" and result.outs["tasks"] == []
    assert len(sleep.calls) == 1  # polled past the RUNNING answer


def test_a_stop_not_waited_for_returns_at_once_with_the_status_as_it_is() -> None:
    # An unplanned failover's flow: its stop waits on the lost cluster inside Connect.
    fake = FakeConnect(
        connectors={"c1": {**props("c1")["config"], "name": "c1"}},
        statuses={"c1": [running("c1", state="RUNNING"), running("c1", state="STOPPED")]},
    )
    sleep = FakeSleep()
    new = {**props("c1"), "desired_state": "STOPPED", "wait_for_state": False}
    result = provider(fake, sleep).update("c1", outputs(props("c1")), new)
    assert fake.seen("PUT") == ["PUT /connectors/c1/stop"] and sleep.calls == []
    assert result.outs is not None and result.outs["state"] == "RUNNING" and result.outs["wait_for_state"] is False


def test_create_adopting_an_existing_connector_applies_config_then_state() -> None:
    fake = FakeConnect(connectors={"c1": {"connector.class": SOURCE}}, states={"c1": "RUNNING"})
    provider(fake).create({**props("c1"), "desired_state": "STOPPED"})
    assert fake.seen("PUT") == ["PUT /connectors/c1/config", "PUT /connectors/c1/stop"]
    assert fake.states["c1"] == "STOPPED"


def test_update_of_the_state_alone_does_not_put_the_config_again() -> None:
    fake = FakeConnect(connectors={"c1": {**props("c1")["config"], "name": "c1"}})
    old = outputs(props("c1"))
    new = {**props("c1"), "desired_state": "PAUSED"}
    diff = ConnectorProvider().diff("c1", old, new)
    assert diff.detailed_diff == {"desired_state": "update"} and not diff.replaces
    result = provider(fake).update("c1", old, new)
    assert fake.seen("PUT") == ["PUT /connectors/c1/pause"]
    assert result.outs is not None and result.outs["state"] == "PAUSED"


def test_update_does_not_ask_again_for_a_stop_this_host_had_accepted_moments_ago() -> None:
    """An unplanned failover's Switchover stops the lost flow in the same `up`: a second stop
    would wait on the herder while it stops tasks that hang on the lost cluster."""
    from components.connect.client import ConnectClient

    fake = FakeConnect(connectors={"c1": {**props("c1")["config"], "name": "c1"}}, states={"c1": "RUNNING"})
    with ConnectClient(URL, transport=fake.factory()()) as switchover:
        switchover.stop("c1")
    old, new = outputs(props("c1")), {**props("c1"), "desired_state": "STOPPED", "wait_for_state": False}
    result = provider(fake).update("c1", old, new)
    assert fake.seen("PUT") == ["PUT /connectors/c1/stop"], "the Switchover's stop only"
    assert result.outs is not None and result.outs["desired_state"] == "STOPPED"
    # Resumed since (by anything in this host): the declared stop is asked again.
    with ConnectClient(URL, transport=fake.factory()()) as client:
        client.resume("c1")
    provider(fake).update("c1", old, new)
    assert fake.seen("PUT")[-1] == "PUT /connectors/c1/stop" and len(fake.seen("PUT")) == 3


def test_update_resumes_a_connector_paused_by_hand() -> None:
    fake = FakeConnect(connectors={"c1": {"connector.class": SOURCE}}, states={"c1": "PAUSED"})
    result = provider(fake).update("c1", outputs(props("c1")), props("c1", **{"tasks.max": "2"}))
    assert fake.seen("PUT") == ["PUT /connectors/c1/config", "PUT /connectors/c1/resume"]
    assert result.outs is not None and result.outs["state"] == "RUNNING"


def test_refresh_shows_a_hand_paused_connector_as_drift_that_up_reverts() -> None:
    fake = FakeConnect(connectors={"c1": {**props("c1")["config"], "name": "c1"}}, states={"c1": "PAUSED"})
    result = provider(fake).read("c1", outputs(props("c1")))
    assert result.inputs is not None and result.inputs["desired_state"] == "PAUSED"
    diff = ConnectorProvider().diff("c1", result.inputs, props("c1"))
    assert diff.detailed_diff == {"desired_state": "update"}


def test_state_written_before_desired_state_existed_reads_as_running() -> None:
    old = outputs(props("c1"))
    old.pop("desired_state", None)
    assert ConnectorProvider().diff("c1", old, {**props("c1"), "desired_state": "RUNNING"}).changes is False


def test_check_rejects_an_unknown_desired_state() -> None:
    result = ConnectorProvider().check({}, {**props("c1"), "desired_state": "SLEEPING"})
    assert [f.property for f in result.failures] == ["desired_state"]
    assert "RUNNING, PAUSED, STOPPED" in result.failures[0].reason


def test_check_asks_connect_to_validate_only_new_or_changed_configs() -> None:
    fake = FakeConnect()
    check = provider(fake).check
    check(outputs(props("c1")), props("c1"))  # unchanged: the no-op `up` of a deployed stack
    assert fake.requests == []
    check(outputs(props("c1")), props("c1", **{"tasks.max": "4"}))
    check({}, props("c1"))  # a new connector
    assert len(fake.seen("PUT")) == 2 and all("/config/validate" in path for path in fake.seen("PUT"))


# -- read / delete -------------------------------------------------------------------------------


def test_read_of_a_deleted_connector_returns_an_empty_id() -> None:
    result = provider(FakeConnect()).read("c1", outputs(props("c1")))
    assert result.id == ""
    assert result.outs == {}  # the provider server adds __provider to it: must be a dict


def test_read_returns_the_live_config_so_refresh_shows_drift() -> None:
    fake = FakeConnect(connectors={"c1": {"connector.class": SOURCE, "tasks.max": "3", "name": "c1"}})
    result = provider(fake).read("c1", outputs(props("c1")))
    assert result.id == "c1"
    assert result.outs is not None and result.inputs is not None
    assert result.outs["config"] == {"connector.class": SOURCE, "tasks.max": "3"}
    assert result.inputs["config"] == result.outs["config"]
    assert result.outs["state"] == "RUNNING"
    diff = ConnectorProvider().diff("c1", result.outs, props("c1"))
    assert diff.detailed_diff == {'config["tasks.max"]': "update", 'config["topics"]': "add"}


def test_read_of_an_unreachable_group_keeps_the_state() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    p = ConnectorProvider(transport_factory=lambda: httpx.MockTransport(refuse), sleep=FakeSleep(), retry_budget_s=2)
    result = p.read("c1", outputs(props("c1")))
    assert result.id == "c1"
    assert result.outs is not None and result.outs["state"] == "UNREACHABLE"
    assert result.outs["config"] == props("c1")["config"]


def test_create_against_an_unreachable_group_gives_up_after_the_retry_budget_from_the_environment() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    sleep = FakeSleep()
    budget = retry_budget_from_env({RETRY_SECONDS_ENV: "3"})
    p = ConnectorProvider(transport_factory=lambda: httpx.MockTransport(refuse), sleep=sleep, retry_budget_s=budget)
    with pytest.raises(ConnectorOperationFailed) as failed:
        p.create(props("c1"))
    assert URL in str(failed.value) and "c1" in str(failed.value)
    assert 0 < sum(sleep.calls) <= 3


@pytest.mark.parametrize(("raw", "seconds"), [(None, 60.0), ("", 60.0), (" 5 ", 5.0), ("0", 0.0), ("2.5", 2.5)])
def test_the_retry_budget_comes_from_the_environment(raw: str | None, seconds: float) -> None:
    assert retry_budget_from_env({} if raw is None else {RETRY_SECONDS_ENV: raw}) == seconds


@pytest.mark.parametrize("raw", ["soon", "-1", "nan", "inf"])
def test_a_bad_retry_budget_names_the_variable_and_the_fix(raw: str) -> None:
    with pytest.raises(ValueError, match=f"{RETRY_SECONDS_ENV}=.* is not a number of seconds. Fix: unset it"):
        retry_budget_from_env({RETRY_SECONDS_ENV: raw})


def test_delete_polls_until_404() -> None:
    fake = FakeConnect(connectors={"c1": {}}, delete_lag=2)
    provider(fake).delete("c1", outputs(props("c1")))
    assert fake.seen() == ["DELETE /connectors/c1"] + ["GET /connectors/c1/status"] * 3


def test_delete_of_an_already_deleted_connector_succeeds() -> None:
    fake = FakeConnect()
    provider(fake).delete("c1", outputs(props("c1")))
    assert fake.seen() == ["DELETE /connectors/c1"]


def test_delete_uses_the_auth_kept_in_state() -> None:
    fake = FakeConnect(connectors={"c1": {}})
    provider(fake).delete("c1", {**outputs(props("c1")), "auth": {"username": "u", "password": "p"}})
    assert all(r.headers["Authorization"].startswith("Basic ") for r in fake.requests)


# -- check ---------------------------------------------------------------------------------------


def test_check_reports_missing_and_malformed_inputs_without_calling_connect() -> None:
    fake = FakeConnect()
    news = {"connect_url": "connect:8083", "name": " ", "config": {"tasks.max": 3}, "auth": {"username": "u"}}
    result = provider(fake).check({}, news)
    by_property = {(f.property, f.reason.split(" ")[0]) for f in result.failures}
    assert ("connect_url", "connect_url") in by_property
    assert ("name", "name") in by_property
    assert {f.reason for f in result.failures if f.property == "config"} == {
        "config key 'tasks.max' must be a string, got int; Connect config values are strings (quote numbers and "
        "booleans)",
        "config must set connector.class",
    }
    assert [f.property for f in result.failures].count("auth") == 1
    assert fake.requests == []


def test_check_defaults_the_timeout_and_passes_valid_inputs() -> None:
    news = props()
    del news["timeout_seconds"]
    result = provider(FakeConnect()).check({}, news)
    assert result.failures == []
    assert result.inputs["timeout_seconds"] == DEFAULT_TIMEOUT_S


def test_check_turns_connect_validation_errors_into_failures_per_key() -> None:
    fake = FakeConnect(validation_errors={"tasks.max": ["Invalid value x for configuration tasks.max"]})
    result = provider(fake).check({}, props("c1", **{"tasks.max": "x"}))
    assert [(f.property, f.reason) for f in result.failures] == [
        ("", "connector 'c1': config key 'tasks.max' is invalid: Invalid value x for configuration tasks.max")
    ]
    sent = fake.requests[0]
    assert sent.url.path == f"/connector-plugins/{SOURCE}/config/validate"
    assert b'"name"' in sent.content  # Connect's validation requires the connector name


def test_check_skips_validation_when_connect_is_unreachable() -> None:
    attempts: list[httpx.Request] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        raise httpx.ConnectError("refused", request=request)

    sleep = FakeSleep()
    p = ConnectorProvider(transport_factory=lambda: httpx.MockTransport(refuse), sleep=sleep)
    assert p.check({}, props()).failures == []
    assert len(attempts) == 1 and sleep.calls == []  # a preview is not held up by retries


def test_check_skips_validation_while_inputs_are_unknown() -> None:
    fake = FakeConnect()
    result = provider(fake).check({}, {**props(), "connect_url": Unknown()})
    assert result.failures == []
    assert fake.requests == []


# -- pickling and secrets ------------------------------------------------------------------------


def test_provider_pickles_with_pickle_and_dill_as_pulumi_does() -> None:
    p = ConnectorProvider()
    assert isinstance(pickle.loads(pickle.dumps(p)), ConnectorProvider)
    restored = dill.loads(dill.dumps(p, recurse=True))
    assert isinstance(restored, ConnectorProvider)
    assert restored.transport_factory is None and restored.retry_budget_s == p.retry_budget_s
    assert serialize_provider(p)  # the exact path Connector(...) takes


def test_provider_errors_mask_secret_config_values() -> None:
    password = "Tr0ub4dor&3-secret"
    trace = f"org.apache.kafka.common.KafkaException: bad key password {password}\n\tat x.y(Z.java:1)"
    fake = FakeConnect(statuses={"c1": [failed("c1", trace)]})
    with pytest.raises(ConnectorOperationFailed) as info:
        provider(fake).create(props("c1", **{"target.cluster.ssl.key.password": password}))
    assert password not in str(info.value)
    assert "bad key password ****" in str(info.value)


def test_check_names_a_config_the_workers_cannot_resolve_but_lets_a_busy_group_pass() -> None:
    """Connect answers validation with 500 both when busy and when a ${file:...} placeholder names
    a file its workers do not have; only the second is bad input, and it fails the preview."""
    answers = {
        "missing": error(
            500,
            "org.apache.kafka.common.config.ConfigException: Could not read properties from file "
            "/etc/mm2/secrets.properties",
        ),
        "busy": error(500, "Request timed out"),
    }

    def check(kind: str) -> Any:
        transport = httpx.MockTransport(lambda request: answers[kind])
        return ConnectorProvider(transport_factory=lambda: transport, sleep=FakeSleep()).check({}, props("c1"))

    (failure,) = check("missing").failures
    assert failure.property == ""
    assert "Connect at http" in failure.reason and "Could not read properties from file" in failure.reason
    assert "secretsFile" in failure.reason
    assert check("busy").failures == []


def test_read_of_a_dead_group_asks_each_worker_once_instead_of_spending_the_retry_budget() -> None:
    import socket

    with socket.socket() as closed, socket.socket() as also_closed:
        closed.bind(("127.0.0.1", 0))  # bound, not listening: refused at once
        also_closed.bind(("127.0.0.1", 0))
        first, second = (f"http://127.0.0.1:{s.getsockname()[1]}" for s in (closed, also_closed))
        state = {**outputs(props("c1")), "connect_url": first, "other_urls": [second]}

        def slept(_s: float) -> None:
            raise AssertionError("a dead group is not retried")

        result = ConnectorProvider(sleep=slept).read("c1", state)
    assert result.id == "c1"
    assert result.outs is not None and result.outs["state"] == "UNREACHABLE"
    assert result.outs["config"] == props("c1")["config"]
