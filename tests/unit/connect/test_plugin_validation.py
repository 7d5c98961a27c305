"""components/connect/plugin_validation.py: keys Connect's validation does not define are named,
typos get a "did you mean", a missing transformation class is named with what is installed."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from components.connect.client import ConnectClient
from components.connect.errors import ConfigProblem
from components.connect.plugin_validation import (
    WORKER_WITHOUT_EXACTLY_ONCE,
    config_problems,
    exactly_once_version_problems,
    validate_config,
    worker_support_problems,
)
from components.connect.provider import ConnectorOperationFailed, ConnectorProvider
from components.topology.parse.mm2_settings import parse_settings
from components.topology.parse.problems import Problems
from components.topology.settings import pass_through_keys

SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
FILTER = "org.apache.kafka.connect.transforms.Filter"
URL = "http://connect.test:8083"


def answer(defined: dict[str, list[str]]) -> dict[str, Any]:
    """A validation answer: key -> its errors."""
    return {
        "name": SOURCE,
        "error_count": sum(len(e) for e in defined.values()),
        "configs": [{"definition": {"name": k}, "value": {"name": k, "errors": e}} for k, e in defined.items()],
    }


def test_generated_and_catalogue_keys_are_never_called_unknown() -> None:
    config = {
        "source.cluster.bootstrap.servers": "a:1",
        "producer.override.linger.ms": "10",
        "sync.topic.acls.enabled": "false",  # catalogue
        "tasks.max": "2",  # owned by a typed field
    }
    assert config_problems(SOURCE, answer({}), config) == []
    assert pass_through_keys(config) == ()


@pytest.mark.parametrize(
    "key",
    [
        "header.converter.x",  # outside the catalogue, owned by nothing
        "transforms.route.type",
        "errors.deadletterqueue.topic.name",
        "offset.flush.timout.ms",
    ],
)
def test_every_key_announced_as_pass_through_is_checked_by_the_validation(key: str) -> None:
    """The one definition's claim (ReplicationFlow logs these keys as checked by Connect's
    validation): a pass-through key no definition names is refused, not skipped."""
    config = {key: "v", "producer.override.max.request.size": "1048576", "sync.topic.acls.enabled": "false"}
    assert pass_through_keys(config) == (key,)
    assert [p.key for p in config_problems(SOURCE, answer({}), config)] == [key]


def test_keys_owned_by_typed_fields_are_not_announced_because_parse_refuses_them() -> None:
    """`producer.override.max.request.size` is the stack's own (from `clusters.<t>.client`); a
    user cannot write it in `settings`, so it is neither announced nor judged as a user key."""
    problems = Problems()
    assert parse_settings(problems, {"producer.override.max.request.size": "1"}, "flows.f.settings") == {}
    assert [p.key for p in problems.found] == ['flows.f.settings["producer.override.max.request.size"]']
    assert pass_through_keys(["producer.override.max.request.size", "target.x", "source.cluster.y"]) == ()


def test_a_typo_gets_did_you_mean_from_the_definitions() -> None:
    problems = config_problems(SOURCE, answer({"offset.flush.timeout.ms": []}), {"offset.flush.timout.ms": "5"})
    assert [p.key for p in problems] == ["offset.flush.timout.ms"]
    assert 'Did you mean "offset.flush.timeout.ms"?' in problems[0].messages[0]
    assert "MirrorSourceConnector" in problems[0].messages[0]


def test_a_catalogue_key_on_the_wrong_role_is_suggested_too() -> None:
    problems = config_problems(SOURCE, answer({}), {"sync.group.offset.enabled": "true"})
    assert 'Did you mean "sync.group.offsets.enabled"?' in problems[0].messages[0]


def test_rejected_values_are_reported_and_keys_under_a_broken_transform_not_twice() -> None:
    defined = {"transforms": [], "transforms.x.type": ["Class com.example.Nope could not be found."]}
    config = {"transforms": "x", "transforms.x.type": "com.example.Nope", "transforms.x.field": "f"}
    problems = config_problems(SOURCE, answer(defined), config)
    assert [p.key for p in problems] == ["transforms.x.type"]


def _transport(validation: dict[str, Any], plugins: list[dict[str, Any]], seen: list[str]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url.path}?{request.url.query.decode()}")
        if request.url.path.endswith("/config/validate"):
            assert json.loads(request.content)["connector.class"] == SOURCE
            return httpx.Response(200, json=validation)
        if request.url.path == "/connector-plugins":
            return httpx.Response(200, json=plugins)
        return httpx.Response(404, json={"error_code": 404, "message": "not found"})

    return httpx.MockTransport(handle)


def test_missing_transformation_class_is_named_with_the_installed_ones() -> None:
    seen: list[str] = []
    validation = answer({"transforms": [], "transforms.x.type": ["Invalid value com.example.Nope: not found"]})
    plugins = [{"class": FILTER, "type": "transformation"}, {"class": SOURCE, "type": "source"}]
    with ConnectClient(URL, transport=_transport(validation, plugins, seen), retry_budget_s=0) as client:
        problems = validate_config(client, SOURCE, {"transforms": "x", "transforms.x.type": "com.example.Nope"})
    assert len(problems) == 1
    text = problems[0].messages[0]
    assert "'com.example.Nope' is not on the plugin path" in text
    assert FILTER in text and SOURCE not in text
    assert "GET /connector-plugins?connectorsOnly=false" in seen


def test_create_refuses_a_config_with_unknown_keys_before_creating_anything() -> None:
    seen: list[str] = []
    validation = answer({"name": [], "connector.class": []})
    provider = ConnectorProvider(transport_factory=lambda: _transport(validation, [], seen), retry_budget_s=0)
    props = {
        "connect_url": URL,
        "name": "c1",
        "config": {"connector.class": SOURCE, "refresh.topic.interval.seconds": "5"},
        "timeout_seconds": 5,
        "desired_state": "RUNNING",
    }
    with pytest.raises(ConnectorOperationFailed) as caught:
        provider.create(props)
    assert "refresh.topic.interval.seconds" in str(caught.value)
    assert 'Did you mean "refresh.topics.interval.seconds"' in str(caught.value)
    assert "nothing was created" in str(caught.value)
    assert all("/connectors" not in s for s in seen)


@pytest.mark.parametrize(("version", "refused"), [("3.4.1", True), ("2.8.0", True), ("3.5.0", False), ("4.3.1", False)])
def test_exactly_once_needs_connect_3_5(version: str, refused: bool) -> None:
    problems = exactly_once_version_problems(version, URL)
    assert bool(problems) == refused
    if refused:
        assert version in problems[0].messages[0] and "exactlyOnce: false" in problems[0].messages[0]


def test_an_exactly_once_config_asks_the_workers_version() -> None:
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url.path}")
        if request.url.path == "/":
            return httpx.Response(200, json={"version": "3.4.0", "commit": "x", "kafka_cluster_id": "y"})
        return httpx.Response(200, json=answer({"exactly.once.support": []}))

    with ConnectClient(URL, transport=httpx.MockTransport(handle), retry_budget_s=0) as client:
        problems = validate_config(client, SOURCE, {"exactly.once.support": "required"})
        assert [p.key for p in problems] == ["exactly.once.support"]
        assert validate_config(client, SOURCE, {"exactly.once.support": "requested"}) == []
    assert seen.count("GET /") == 1


def _eos_worker_transport(seen: list[str]) -> httpx.MockTransport:
    """Connect 4.3 whose workers are not at exactly.once.source.support=enabled."""

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url.path}")
        if request.url.path == "/":
            return httpx.Response(200, json={"version": "4.3.1", "commit": "x", "kafka_cluster_id": "y"})
        return httpx.Response(
            200, json=answer({"name": [], "connector.class": [], "exactly.once.support": [WORKER_WITHOUT_EXACTLY_ONCE]})
        )

    return httpx.MockTransport(handle)


def _check(managed: bool) -> Any:
    seen: list[str] = []
    provider = ConnectorProvider(transport_factory=lambda: _eos_worker_transport(seen), retry_budget_s=0)
    news = {
        "connect_url": URL,
        "name": "c1",
        "config": {"connector.class": SOURCE, "exactly.once.support": "required"},
        "timeout_seconds": 5,
        "desired_state": "RUNNING",
        **({"managed_workers": True} if managed else {}),
    }
    olds = {**news, "config": {"connector.class": SOURCE}}
    result = provider.check(olds, news)
    assert f"PUT /connector-plugins/{SOURCE}/config/validate" in seen  # it did ask
    return result


def test_an_external_group_without_exactly_once_support_fails_the_preview_with_the_fix() -> None:
    failures = _check(managed=False).failures
    assert len(failures) == 1 and failures[0].property == ""  # the reason alone, not the whole config echoed
    reason = failures[0].reason
    assert "exactly.once.support" in reason and f"the workers at {URL} do not run with" in reason
    assert "first exactly.once.source.support=preparing on all of them, then enabled" in reason
    assert "exactlyOnce: false" in reason


def test_workers_the_stack_rolls_to_exactly_once_do_not_fail_the_preview() -> None:
    # The preview asks workers still at preparing; the same up rolls them to enabled before the
    # connector is updated.
    assert _check(managed=True).failures == []


def test_worker_support_keeps_other_problems_of_the_key() -> None:
    problems = [ConfigProblem("exactly.once.support", (WORKER_WITHOUT_EXACTLY_ONCE, "The connector does not support"))]
    kept = worker_support_problems(problems, URL, managed_workers=True)
    assert kept == [ConfigProblem("exactly.once.support", ("The connector does not support",))]
    other = [ConfigProblem("tasks.max", ("bad",))]
    assert worker_support_problems(other, URL, managed_workers=True) == other
