"""components/connect/stdlib_client.py: Connect calls over urllib (the watcher, the Spark stage), and the next worker
when one does not answer. Requests go through the in-memory Connect of tests/unit/connect/fakes.py
(the httpx.MockTransport handler), one fake per worker; a down worker refuses the connection."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.request
from pathlib import Path
from typing import Any

import httpx
import pytest

from components.connect.errors import ConnectRequestError, ConnectUnavailable
from components.connect.stdlib_client import Send, StdlibConnectClient
from components.ops.watcher import Watcher, read_plan
from components.watch.backoff import Backoff
from components.watch.plan import WatchPlan, plan_document
from tests.unit.connect.fakes import FakeConnect, error

NAME = "mm2-primary-to-dr-source"
W0, W1 = "http://127.0.0.1:18083", "http://127.0.0.1:18084"


def failed() -> dict[str, Any]:
    return {
        "name": NAME,
        "connector": {"state": "RUNNING", "worker_id": "w0"},
        "tasks": [{"id": 0, "state": "FAILED", "worker_id": "w1", "trace": "java.lang.RuntimeException: boom\n\tat x"}],
    }


class Workers:
    """One handler per worker URL; a worker in `down` refuses connections."""

    def __init__(self, handlers: dict[str, Any]) -> None:
        self.handlers = handlers
        self.down: set[str] = set()
        self.seen: list[str] = []  # "METHOD url" of every request that reached a worker

    def __call__(
        self, request: urllib.request.Request, timeout: float, context: ssl.SSLContext | None
    ) -> tuple[int, bytes]:
        base = next(u for u in self.handlers if request.full_url.startswith(u))
        if base in self.down:
            raise ConnectionRefusedError(111, "Connection refused")
        self.seen.append(f"{request.get_method()} {request.full_url}")
        answer = self.handlers[base](
            httpx.Request(request.get_method(), request.full_url, headers=dict(request.header_items()))
        )
        return answer.status_code, answer.content


def client(workers: Send, **kwargs: Any) -> StdlibConnectClient:
    return StdlibConnectClient([W0, W1], transport=workers, **kwargs)


def test_reads_a_status_and_restarts_only_what_failed_with_basic_auth() -> None:
    fake = FakeConnect(connectors={NAME: {}}, statuses={NAME: [failed()]})
    rest = client(Workers({W0: fake.handle, W1: fake.handle}), auth=("mm2-admin", "pw"))
    assert rest.get_status(NAME) == failed()
    rest.restart(NAME, include_tasks=True, only_failed=True)
    post = fake.requests[-1]
    assert post.method == "POST" and post.url.path == f"/connectors/{NAME}/restart"
    assert dict(post.url.params) == {"includeTasks": "true", "onlyFailed": "true"}
    assert post.headers["authorization"] == "Basic " + base64.b64encode(b"mm2-admin:pw").decode()


def test_a_missing_connector_is_none_and_an_error_answer_names_the_call() -> None:
    fake = FakeConnect(script={("GET", f"/connectors/{NAME}/status"): [error(401, "Unauthorized")]})
    assert client(Workers({W0: FakeConnect().handle, W1: FakeConnect().handle})).get_status(NAME) is None
    with pytest.raises(ConnectRequestError, match=r"GET /connectors/.*/status returned HTTP 401: Unauthorized - check"):
        client(Workers({W0: fake.handle, W1: fake.handle})).get_status(NAME)


def test_when_the_first_worker_is_down_the_next_one_answers_and_is_asked_first_from_then_on() -> None:
    fake = FakeConnect(connectors={NAME: {}}, statuses={NAME: [failed()]})
    workers = Workers({W0: fake.handle, W1: fake.handle})
    workers.down.add(W0)
    rest = client(workers)
    assert rest.get_status(NAME) == failed()
    workers.down.clear()
    rest.restart(NAME, only_failed=True)
    assert [s.split(" ", 1)[1].split("/connectors")[0] for s in workers.seen] == [W1, W1]


@pytest.mark.parametrize("status", [409, 503])
def test_a_rebalancing_or_starting_worker_hands_the_call_to_the_next(status: int) -> None:
    busy = FakeConnect(script={("GET", f"/connectors/{NAME}/status"): [error(status, "rebalancing")]})
    fine = FakeConnect(connectors={NAME: {}}, statuses={NAME: [failed()]})
    assert client(Workers({W0: busy.handle, W1: fine.handle})).get_status(NAME) == failed()


def test_no_worker_answering_is_unavailable_naming_every_worker_and_no_password() -> None:
    workers = Workers({W0: FakeConnect().handle, W1: FakeConnect().handle})
    workers.down.update({W0, W1})
    with pytest.raises(ConnectUnavailable) as caught:
        client(workers, auth=("mm2-admin", "s3cret")).get_status(NAME)
    text = str(caught.value)
    assert f"cannot reach Kafka Connect at {W0} or {W1}" in text and "Connection refused" in text
    assert "s3cret" not in text


def test_the_watcher_restarts_through_the_second_worker_while_the_first_is_down(tmp_path: Path) -> None:
    fake = FakeConnect(connectors={NAME: {}}, statuses={NAME: [failed()]})
    workers = Workers({W0: fake.handle, W1: fake.handle})
    workers.down.add(W0)
    plan = WatchPlan(group="mm2", url=W0, other_urls=(W1,), connectors={NAME: 3}, backoff=Backoff(first_s=0, unit_s=30))
    rest = StdlibConnectClient([plan.url, *plan.other_urls], transport=workers)
    lines: list[str] = []
    Watcher(plan, lambda: rest, clock=lambda: 1000.0, wall=lambda: 1000.0, log=lines.append).tick()
    assert f"POST {W1}/connectors/{NAME}/restart?includeTasks=true&onlyFailed=true" in workers.seen
    assert any("restarted" in line for line in lines), lines


def test_the_plan_carries_the_other_workers(tmp_path: Path) -> None:
    doc = plan_document(WatchPlan(group="mm2", url=W0, other_urls=(W1,), connectors={NAME: None}))
    assert doc["otherUrls"] == [W1]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    assert read_plan(str(path)).other_urls == (W1,)
    del doc["otherUrls"]  # a plan written before the field existed
    path.write_text(json.dumps(doc))
    assert read_plan(str(path)).other_urls == ()


def test_reads_a_connector_config_and_none_for_a_missing_connector() -> None:
    config = {"connector.class": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"}
    fake = FakeConnect(connectors={NAME: config})
    rest = client(Workers({W0: fake.handle, W1: fake.handle}))
    assert rest.get_config(NAME) == config
    assert rest.get_config("mm2-nowhere") is None
