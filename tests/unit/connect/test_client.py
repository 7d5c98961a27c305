"""ConnectClient against an in-memory Connect behind httpx.MockTransport (no network)."""

from __future__ import annotations

import base64
import json

import httpx
import pytest

from components.connect.client import MASK, ConnectClient
from components.connect.errors import (
    ConfigProblem,
    ConnectorFailed,
    ConnectRequestError,
    ConnectTimeout,
    ConnectUnavailable,
)

from .fakes import URL, FakeConnect, FakeSleep, error, running

SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
TRACE = (
    "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment\n"
    "\tat org.apache.kafka.clients.admin.KafkaAdminClient$Call.fail(KafkaAdminClient.java:123)\n"
    "\tat org.apache.kafka.connect.mirror.MirrorSourceTask.start(MirrorSourceTask.java:99)\n"
)


def client(fake: FakeConnect, sleep: FakeSleep, **kwargs: object) -> ConnectClient:
    return ConnectClient(URL, transport=fake.transport(), sleep=sleep, **kwargs)  # type: ignore[arg-type]


def failed_task_status(name: str) -> dict[str, object]:
    return {
        "name": name,
        "connector": {"state": "RUNNING", "worker_id": "w0:8083"},
        "tasks": [
            {"id": 0, "state": "RUNNING", "worker_id": "w0:8083"},
            {"id": 1, "state": "FAILED", "worker_id": "w1:8084", "trace": TRACE},
        ],
        "type": "source",
    }


# -- retries -------------------------------------------------------------------------------------


def test_409_twice_then_200_succeeds_after_two_backoffs() -> None:
    fake = FakeConnect(
        script={
            ("PUT", "/connectors/c1/config"): [
                error(409, "Cannot complete request momentarily due to stale configuration"),
                error(409, "Cannot complete request because of a conflicting operation"),
                httpx.Response(201, json={"name": "c1", "config": {}, "tasks": [], "type": "source"}),
            ]
        }
    )
    sleep = FakeSleep()
    with client(fake, sleep) as c:
        answer = c.put_config("c1", {"connector.class": "X"})
    assert answer["name"] == "c1"
    assert fake.seen("PUT") == ["PUT /connectors/c1/config"] * 3
    assert sleep.calls == [0.5, 1.0]  # exponential backoff


def test_409_forever_gives_up_within_budget_naming_method_and_path() -> None:
    fake = FakeConnect(script={("PUT", "/connectors/c1/config"): [error(409, "rebalance in progress")]})
    sleep = FakeSleep()
    with client(fake, sleep, retry_budget_s=20.0) as c, pytest.raises(ConnectRequestError) as info:
        c.put_config("c1", {"connector.class": "X"})
    err = info.value
    assert (err.method, err.path, err.status) == ("PUT", "/connectors/c1/config", 409)
    assert "PUT /connectors/c1/config" in str(err)
    assert "rebalance in progress" in str(err)
    assert sleep.total == pytest.approx(20.0)  # spent the budget, not more
    assert max(sleep.calls) <= 8.0  # backoff is capped
    assert sleep.calls[:5] == [0.5, 1.0, 2.0, 4.0, 8.0]
    assert err.attempts == len(sleep.calls) + 1


def test_5xx_is_retried_then_succeeds() -> None:
    fake = FakeConnect(
        connectors={"c1": {"name": "c1"}},
        script={("GET", "/connectors/c1/config"): [error(503, "starting"), httpx.Response(200, json={"a": "b"})]},
    )
    sleep = FakeSleep()
    with client(fake, sleep) as c:
        assert c.get_config("c1") == {"a": "b"}
    assert len(sleep.calls) == 1


def test_a_bare_404_of_a_starting_worker_is_retried_but_connects_own_404_is_not() -> None:
    """While a worker starts, its REST server answers every path 404 with no message (and a worker
    forwarding to it relays that); Connect's own 404 names what is missing."""
    bare = [
        httpx.Response(404, text=""),
        httpx.Response(404, json={"error_code": 404, "message": None}),
        httpx.Response(404, json={"error_code": 404, "message": "HTTP 404 Not Found"}),
    ]
    fake = FakeConnect(
        script={
            ("PUT", "/connectors/c1/config"): [
                *bare,
                httpx.Response(200, json={"name": "c1", "config": {}, "tasks": []}),
            ],
            ("GET", "/connectors/c2/status"): [bare[1], error(404, "No status found for connector c2")],
        }
    )
    sleep = FakeSleep()
    with client(fake, sleep) as c:
        assert c.put_config("c1", {"connector.class": "X"})["name"] == "c1"
        assert c.get_status("c2") is None  # the real answer: there is no such connector
    assert fake.seen("PUT") == ["PUT /connectors/c1/config"] * 4 and len(sleep.calls) == 4


def test_other_4xx_is_not_retried() -> None:
    fake = FakeConnect(script={("PUT", "/connectors/c1/config"): [error(400, "Connector configuration is invalid")]})
    sleep = FakeSleep()
    with client(fake, sleep) as c, pytest.raises(ConnectRequestError) as info:
        c.put_config("c1", {"connector.class": "X"})
    assert info.value.status == 400
    assert "Connector configuration is invalid" in info.value.connect_message
    assert sleep.calls == []
    assert len(fake.requests) == 1


def test_connection_error_raises_unavailable_naming_the_url() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    sleep = FakeSleep()
    c = ConnectClient(URL, transport=httpx.MockTransport(refuse), sleep=sleep, retry_budget_s=5.0)
    with c, pytest.raises(ConnectUnavailable) as info:
        c.server_info()
    text = str(info.value)
    assert URL in text
    assert "Connection refused" in text
    assert "worker group is running" in text
    assert "connect_url" in text
    assert sleep.total == pytest.approx(5.0)
    assert info.value.attempts > 1


def test_a_worker_that_does_not_answer_hands_the_call_to_the_next_at_once_and_the_client_stays() -> None:
    """A DR drill or a crash took the group's first worker: the others still serve the REST API."""
    hosts: list[str] = []
    fake = FakeConnect()

    def route(request: httpx.Request) -> httpx.Response:
        hosts.append(f"{request.url.host}:{request.url.port}")
        if request.url.port == 18083:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        return fake.handle(request)

    sleep = FakeSleep()
    others = ["http://127.0.0.1:18084", "http://127.0.0.1:18085"]
    with ConnectClient(
        "http://127.0.0.1:18083", transport=httpx.MockTransport(route), sleep=sleep, other_urls=others
    ) as c:
        c.put_config("c1", {"connector.class": SOURCE})
        assert c.get_config("c1") is not None
    assert hosts == ["127.0.0.1:18083", "127.0.0.1:18084", "127.0.0.1:18084"]
    assert sleep.total == 0  # no back-off while another worker answers


def test_when_no_worker_answers_the_error_names_them_all_after_the_budget() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    sleep = FakeSleep()
    with (
        ConnectClient(
            URL, transport=httpx.MockTransport(refuse), sleep=sleep, retry_budget_s=5.0, other_urls=["http://w1:8084"]
        ) as c,  # fmt: skip
        pytest.raises(ConnectUnavailable) as info,
    ):
        c.server_info()
    assert f"cannot reach Kafka Connect at {URL} or http://w1:8084" in str(info.value)
    assert sleep.total == pytest.approx(5.0)


def test_unauthorized_says_to_check_credentials_and_never_shows_them() -> None:
    seen_auth: list[str] = []

    def deny(request: httpx.Request) -> httpx.Response:
        seen_auth.append(request.headers["Authorization"])
        return error(401, "Unauthorized")

    c = ConnectClient(URL, auth=("admin", "s3cr3t-pw"), transport=httpx.MockTransport(deny), sleep=FakeSleep())
    with c, pytest.raises(ConnectRequestError) as info:
        c.list_plugins()
    assert seen_auth == ["Basic " + base64.b64encode(b"admin:s3cr3t-pw").decode()]
    text = str(info.value)
    assert "GET /connector-plugins" in text and "401" in text
    assert "credentials" in text
    assert "s3cr3t-pw" not in text
    assert seen_auth[0].split()[1] not in text


# -- paths ---------------------------------------------------------------------------------------


def test_connector_names_are_url_encoded() -> None:
    fake = FakeConnect()
    with client(fake, FakeSleep()) as c:
        c.put_config("a b/c?", {"connector.class": "X"})
        assert c.get_config("a b/c?") == {"connector.class": "X", "name": "a b/c?"}
    assert fake.seen() == ["PUT /connectors/a%20b%2Fc%3F/config", "GET /connectors/a%20b%2Fc%3F/config"]


def test_restart_pause_resume_stop_use_connects_endpoints() -> None:
    fake = FakeConnect(connectors={"c1": {}})
    with client(fake, FakeSleep()) as c:
        c.restart("c1", only_failed=True)
        c.pause("c1")
        c.resume("c1")
        c.stop("c1")
    assert fake.seen() == [
        "POST /connectors/c1/restart?includeTasks=true&onlyFailed=true",
        "PUT /connectors/c1/pause",
        "PUT /connectors/c1/resume",
        "PUT /connectors/c1/stop",
    ]


def test_missing_connector_reads_as_none() -> None:
    with client(FakeConnect(), FakeSleep()) as c:
        assert c.get_config("nope") is None
        assert c.get_status("nope") is None


# -- waiting -------------------------------------------------------------------------------------


def test_wait_running_waits_for_tasks_to_exist_and_run() -> None:
    starting = {"name": "c1", "connector": {"state": "RUNNING", "worker_id": "w0"}, "tasks": []}
    unassigned = {**starting, "tasks": [{"id": 0, "state": "UNASSIGNED", "worker_id": "w0"}]}
    fake = FakeConnect(connectors={"c1": {}}, statuses={"c1": [starting, unassigned, running("c1", 2)]})
    sleep = FakeSleep()
    with client(fake, sleep) as c:
        status = c.wait_running("c1", timeout_s=30)
    assert [t["state"] for t in status["tasks"]] == ["RUNNING", "RUNNING"]
    assert sleep.calls == [1.0, 1.0]


def test_wait_running_accepts_no_tasks_when_allowed() -> None:
    no_tasks = {"name": "c1", "connector": {"state": "RUNNING", "worker_id": "w0"}, "tasks": []}
    fake = FakeConnect(connectors={"c1": {}}, statuses={"c1": [no_tasks]})
    with client(fake, FakeSleep()) as c:
        assert c.wait_running("c1", timeout_s=5, min_tasks=0)["tasks"] == []


def test_failed_task_raises_connector_failed_with_its_trace() -> None:
    fake = FakeConnect(connectors={"c1": {}}, statuses={"c1": [failed_task_status("c1")]})
    sleep = FakeSleep()
    with client(fake, sleep) as c, pytest.raises(ConnectorFailed) as info:
        c.wait_running("c1", timeout_s=60)
    err = info.value
    assert err.task_id == 1
    assert err.worker_id == "w1:8084"
    assert err.trace == TRACE
    assert "task 1 is FAILED" in str(err)
    assert "Timed out waiting for a node assignment" in str(err)
    assert sleep.calls == []  # fails at once, not at the timeout


def test_failed_connector_raises_with_connector_trace() -> None:
    status = {"name": "c1", "connector": {"state": "FAILED", "worker_id": "w0", "trace": "boom"}, "tasks": []}
    fake = FakeConnect(connectors={"c1": {}}, statuses={"c1": [status]})
    with client(fake, FakeSleep()) as c, pytest.raises(ConnectorFailed) as info:
        c.wait_running("c1", timeout_s=60)
    assert info.value.task_id is None
    assert "connector is FAILED" in str(info.value) and "boom" in str(info.value)


def test_wait_running_times_out_with_last_status() -> None:
    paused = {"name": "c1", "connector": {"state": "PAUSED", "worker_id": "w0"}, "tasks": []}
    fake = FakeConnect(connectors={"c1": {}}, statuses={"c1": [paused]})
    sleep = FakeSleep()
    with client(fake, sleep) as c, pytest.raises(ConnectTimeout) as info:
        c.wait_running("c1", timeout_s=5, poll_s=2)
    assert info.value.last_status == paused
    assert "connector PAUSED" in str(info.value)
    assert sleep.total == pytest.approx(5.0)


# -- delete --------------------------------------------------------------------------------------


def test_delete_polls_status_until_404() -> None:
    fake = FakeConnect(connectors={"c1": {}}, delete_lag=3)
    sleep = FakeSleep()
    with client(fake, sleep) as c:
        assert c.delete("c1") is True
    assert fake.seen() == ["DELETE /connectors/c1"] + ["GET /connectors/c1/status"] * 4
    assert len(sleep.calls) == 3
    assert "c1" not in fake.connectors


def test_delete_of_missing_connector_is_success() -> None:
    fake = FakeConnect()
    with client(fake, FakeSleep()) as c:
        assert c.delete("gone") is False
    assert fake.seen() == ["DELETE /connectors/gone"]


def test_delete_that_never_finishes_times_out() -> None:
    fake = FakeConnect(connectors={"c1": {}}, delete_lag=1000)
    with client(fake, FakeSleep()) as c, pytest.raises(ConnectTimeout) as info:
        c.delete("c1", timeout_s=3)
    assert "still not deleted after 3s" in str(info.value)


# -- validate ------------------------------------------------------------------------------------


def test_validate_returns_per_key_problems() -> None:
    fake = FakeConnect(
        validation_errors={
            "tasks.max": ["Invalid value x for configuration tasks.max: Not a number of type INT"],
            "source.cluster.alias": ['Missing required configuration "source.cluster.alias"'],
        }
    )
    with client(fake, FakeSleep()) as c:
        problems = c.validate(SOURCE, {"tasks.max": "x"})
    assert problems == [
        ConfigProblem("tasks.max", ("Invalid value x for configuration tasks.max: Not a number of type INT",)),
        ConfigProblem("source.cluster.alias", ('Missing required configuration "source.cluster.alias"',)),
    ]
    assert fake.seen() == [
        "PUT /connector-plugins/org.apache.kafka.connect.mirror.MirrorSourceConnector/config/validate"
    ]
    assert json.loads(fake.requests[0].content) == {"tasks.max": "x", "connector.class": SOURCE}


# -- secrets -------------------------------------------------------------------------------------


def test_secret_config_values_are_masked_in_errors_and_traces() -> None:
    password = "hunter2-very-secret"
    config = {
        "connector.class": "X",
        "source.cluster.sasl.jaas.config": "ignored",
        "target.cluster.ssl.key.password": password,
        "source.cluster.ssl.truststore.password": "${file:/etc/creds.properties:truststore}",
    }
    fake = FakeConnect(
        script={
            ("PUT", "/connectors/c1/config"): [
                error(400, f"Invalid value {password} for configuration target.cluster.ssl.key.password")
            ]
        },
        validation_errors={"target.cluster.ssl.key.password": [f"bad password {password}"]},
    )
    with client(fake, FakeSleep()) as c:
        with pytest.raises(ConnectRequestError) as info:
            c.put_config("c1", config)
        problems = c.validate("X", config)
    assert password not in str(info.value)
    assert MASK in str(info.value)
    assert problems == [ConfigProblem("target.cluster.ssl.key.password", (f"bad password {MASK}",))]

    status = failed_task_status("c2")
    status["tasks"][1]["trace"] = f"javax.net.ssl.SSLException: wrong key password {password}"  # type: ignore[index]
    fake = FakeConnect(connectors={"c2": {}}, statuses={"c2": [status]})
    with client(fake, FakeSleep()) as c:
        c.put_config("c2", config)
        with pytest.raises(ConnectorFailed) as failed:
            c.wait_running("c2", timeout_s=10)
    assert password not in str(failed.value) and password not in failed.value.trace


def test_credentials_in_the_url_never_reach_error_text() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    c = ConnectClient(
        "http://admin:pa55word@connect.test:8083",
        transport=httpx.MockTransport(refuse),
        sleep=FakeSleep(),
        retry_budget_s=0,
    )
    with c, pytest.raises(ConnectUnavailable) as info:
        c.server_info()
    assert "pa55word" not in str(info.value)
    assert "http://connect.test:8083" in str(info.value)
