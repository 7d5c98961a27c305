"""The dynamic-provider host bootstrap installs: a wide pool, and it stops when interrupted."""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

HOST = Path(__file__).resolve().parents[3] / "toolchain" / "pulumi" / "python" / "dynamic_provider_host.py"


def load_host() -> Any:
    spec = importlib.util.spec_from_file_location("dynamic_provider_host", HOST)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pulumis_four_threads_become_the_configured_width(monkeypatch: pytest.MonkeyPatch) -> None:
    host = load_host()
    monkeypatch.delenv("PULUMI_DYNAMIC_THREADS", raising=False)
    with host.WidePool(max_workers=4) as pool:
        assert pool._max_workers == 64
    monkeypatch.setenv("PULUMI_DYNAMIC_THREADS", "9")
    with host.WidePool(max_workers=4) as pool:
        assert pool._max_workers == 9
    with host.WidePool(max_workers=100) as pool:
        assert pool._max_workers == 100  # never narrower than asked


def test_host_serves_one_port_and_stops_on_sigint_like_pulumis() -> None:
    # The engine interrupts a plugin and kills it only 5 s later: a host that ignores SIGINT
    # adds 5 s to every pulumi command.
    root = HOST.parents[2]
    child = subprocess.Popen(
        [sys.executable, "-u", str(HOST)], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        port = child.stdout.readline().strip() if child.stdout else b""
        assert port.isdigit(), port
        # Interrupt it once its main thread waits for the engine (blocked on a futex in
        # Event().wait()), not in the few instructions between printing the port and that wait.
        wchan = Path(f"/proc/{child.pid}/wchan")
        deadline = time.monotonic() + 30
        while not wchan.read_text().startswith("futex") and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGINT)
        # Exit 0 on its own: a host that ignored SIGINT would still run when the wait ends.
        assert child.wait(timeout=30) == 0
        assert (child.stdout.read() if child.stdout else b"").strip() == b"", "a second server was started"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def _listening() -> socket.socket:
    server = socket.create_server(("127.0.0.1", 0))
    server.listen()
    return server


def test_the_engine_is_gone_only_when_nothing_listens_at_its_address() -> None:
    host = load_host()
    engine = _listening()
    address = f"127.0.0.1:{engine.getsockname()[1]}"
    assert host.engine_gone(address) is False
    engine.close()
    assert host.engine_gone(address) is True


def test_the_host_serves_while_its_engine_lives_and_exits_within_10s_once_it_is_gone() -> None:
    # A `pulumi` killed outright cannot interrupt its plugins: the host must notice by itself.
    engine = _listening()
    address = f"127.0.0.1:{engine.getsockname()[1]}"
    child = subprocess.Popen(
        [sys.executable, "-u", str(HOST), address], cwd=HOST.parents[2], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        port = child.stdout.readline().strip() if child.stdout else b""
        assert port.isdigit(), port
        # Three of its checks with the engine there: it keeps serving throughout.
        until = time.monotonic() + 3 * load_host().ENGINE_CHECK_S
        while time.monotonic() < until:
            assert child.poll() is None, "the host exited while its engine was listening"
            time.sleep(0.2)
        # The engine gone, with the pipe it read the host's stderr from (its last words then fail).
        engine.close()
        if child.stderr:
            child.stderr.close()
        gone = time.monotonic()
        assert child.wait(timeout=10) == 1
        print(f"\nthe host exited {time.monotonic() - gone:.1f} s after its engine")
    finally:
        engine.close()
        if child.poll() is None:
            child.kill()
            child.wait()


def test_paths_keep_their_kind_and_a_replacing_property_replaces() -> None:
    host = load_host()
    fields = host.property_diffs(
        {'config["tasks.max"]': "update", 'config["x"]': "add", "name": "update", 'properties["y"]': "delete"},
        ["name"],
    )
    assert fields == {
        'config["tasks.max"]': {"kind": 4, "inputDiff": True},
        'config["x"]': {"kind": 0, "inputDiff": True},
        "name": {"kind": 5, "inputDiff": True},
        'properties["y"]': {"kind": 2, "inputDiff": True},
    }


class _Provider:
    """A provider whose diff carries what the project's providers add to DiffResult."""

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> Any:
        from pulumi.dynamic import DiffResult

        result = DiffResult(changes=True, replaces=["name"], delete_before_replace=True)
        result.detailed_diff = {"name": "update", 'config["tasks.max"]': "update"}  # type: ignore[attr-defined]
        result.impacts = [("warning", f"connector {news['name']}: deleted and created again")]  # type: ignore[attr-defined]
        return result


@pytest.fixture
def logged(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What the host sends the engine's Log service (a stand-in EngineStub records it)."""
    from pulumi.runtime.proto import engine_pb2_grpc

    requests: list[Any] = []

    class Engine:
        def __init__(self, _channel: Any) -> None:
            pass

        def Log(self, request: Any) -> None:
            requests.append(request)

    monkeypatch.setattr(engine_pb2_grpc, "EngineStub", Engine)
    return requests


def _struct(props: dict[str, Any]) -> Any:
    """Properties as the engine sends them in a request."""
    import asyncio

    from pulumi.runtime import rpc

    # A loop of its own: asyncio.run would unset the thread's current loop, which the Pulumi
    # mock tests that run after this one in the same process still need.
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(rpc.serialize_properties(props, {}))
    finally:
        loop.close()


def test_diff_reaches_the_engine_with_paths_and_impacts(monkeypatch: pytest.MonkeyPatch, logged: list[Any]) -> None:
    import types

    from pulumi.runtime import proto

    pulumis = types.SimpleNamespace(PROVIDER_KEY="__provider", get_provider=lambda props, config: _Provider())
    monkeypatch.setitem(sys.modules, "pulumi.dynamic.__main__", pulumis)
    servicer = load_host().detailed_servicer(types.SimpleNamespace(_config={}), "127.0.0.1:1")
    request = proto.DiffRequest(
        id="c",
        urn="urn:pulumi:s::p::pulumi-python:dynamic/connect:Connector::c",
        olds=_struct({"__provider": "x", "name": "old"}),
        news=_struct({"__provider": "x", "name": "new"}),
    )
    response = servicer.Diff(request, None)
    assert response.changes == proto.DiffResponse.DIFF_SOME
    assert list(response.replaces) == ["name"] and response.deleteBeforeReplace
    assert response.hasDetailedDiff and sorted(response.diffs) == ["config", "name"]
    assert response.detailedDiff["name"].kind == proto.PropertyDiff.UPDATE_REPLACE
    assert response.detailedDiff['config["tasks.max"]'].kind == proto.PropertyDiff.UPDATE
    (log,) = logged
    assert (log.severity, log.urn) == (2, request.urn)
    assert log.message == "connector new: deleted and created again"


def test_what_a_provider_logs_during_an_update_reaches_the_engine_on_that_resource(
    monkeypatch: pytest.MonkeyPatch, logged: list[Any]
) -> None:
    import logging
    import types

    def update(request: Any, context: Any) -> str:
        logging.getLogger("dynamic_provider.rolling").warning("worker 1: src: task 0 restarted once")
        logging.getLogger("dynamic_provider.rolling").debug("not for people")
        return "updated"

    monkeypatch.setitem(sys.modules, "pulumi.dynamic.__main__", types.SimpleNamespace())
    noop = lambda request, context: None  # noqa: E731
    servicer = types.SimpleNamespace(_config={}, Create=noop, Update=update, Delete=noop)
    load_host().detailed_servicer(servicer, "127.0.0.1:1")
    urn = "urn:pulumi:s::p::pulumi-python:dynamic/local:Process::worker-1"
    assert servicer.Update(types.SimpleNamespace(urn=urn), None) == "updated"
    (log,) = logged
    assert (log.severity, log.urn, log.message) == (2, urn, "worker 1: src: task 0 restarted once")
    logging.getLogger("dynamic_provider").warning("outside any request")
    assert logged[-1].urn == ""  # not pinned on the last resource served by this thread


class _Aborted(Exception):
    pass


class _Context:
    """grpc's servicer context, as far as an aborted call uses it."""

    def abort(self, code: Any, details: str) -> None:
        self.code, self.details = code, details
        raise _Aborted


def _failed_diff(monkeypatch: pytest.MonkeyPatch, error: Exception) -> _Context:
    """The host's Diff on a provider whose diff raises `error`: the context it aborted."""
    import types

    from pulumi.runtime import proto

    class Failing:
        def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> Any:
            raise error

    pulumis = types.SimpleNamespace(PROVIDER_KEY="__provider", get_provider=lambda props, config: Failing())
    monkeypatch.setitem(sys.modules, "pulumi.dynamic.__main__", pulumis)
    servicer = load_host().detailed_servicer(types.SimpleNamespace(_config={}), None)
    context = _Context()
    with pytest.raises(_Aborted):
        servicer.Diff(
            proto.DiffRequest(id="c", olds=_struct({"__provider": "x"}), news=_struct({"__provider": "x"})), context
        )
    return context


def test_a_failing_diff_fails_the_call_with_the_providers_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    # Pulumi's own servicer (3.272) aborts a failed call with the traceback; the host's Diff does too.
    import grpc

    context = _failed_diff(monkeypatch, ValueError("config is not a mapping"))
    assert context.code == grpc.StatusCode.UNKNOWN
    assert "Traceback" in context.details and "ValueError: config is not a mapping" in context.details


def test_a_refusal_fails_the_call_with_its_message_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A provider's verdict on a change (components.rpc_values.Refused) reads as a sentence."""
    from components.rpc_values import Refused

    refusal = "clusters.us.storageSize: would replace the StatefulSet. Fix: put back '1Gi'."
    assert _failed_diff(monkeypatch, Refused(refusal)).details == refusal


def test_a_refusal_raised_by_a_delete_reaches_the_engine_as_its_message_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pulumi's Create/Update/Delete abort from their `except` block with the traceback; through
    the host, a refusal (a cluster that does not answer, say) is its sentence, anything else
    keeps the traceback."""
    import traceback
    import types

    from components.kafka.topic import ClusterUnreachable

    def pulumis_delete(error: Exception) -> Any:
        def delete(request: Any, context: Any) -> None:  # as pulumi/dynamic/__main__.py's _abort_with_traceback
            try:
                raise error
            except Exception:
                context.abort("UNKNOWN", traceback.format_exc())

        return delete

    monkeypatch.setitem(sys.modules, "pulumi.dynamic.__main__", types.SimpleNamespace())
    said = "topic 'orders' on cluster 'us': not deleted: the cluster does not answer. Fix: start it."
    for error, expected in ((ClusterUnreachable(said), said), (ValueError("bad"), "Traceback")):
        noop = lambda request, context: None  # noqa: E731
        servicer = types.SimpleNamespace(_config={}, Create=noop, Update=noop, Delete=pulumis_delete(error))
        load_host().detailed_servicer(servicer, "127.0.0.1:1")
        context = _Context()
        with pytest.raises(_Aborted):
            servicer.Delete(types.SimpleNamespace(urn="urn:x"), context)
        assert context.details == expected if expected == said else expected in context.details


def test_the_installed_sdks_host_module_still_has_what_the_host_patches() -> None:
    # The host relies on these names of pulumi/dynamic/__main__.py (it cannot be imported here:
    # importing it serves). A Pulumi bump that renames one fails here, not in a deployment.
    import importlib.util

    spec = importlib.util.find_spec("pulumi.dynamic.__main__")
    assert spec is not None and spec.origin is not None
    source = Path(spec.origin).read_text()
    for needed in (
        'PROVIDER_KEY = "__provider"',
        "def get_provider(props",
        "self._config",
        "from concurrent import futures",
        "futures.ThreadPoolExecutor(",
        "provider_pb2_grpc.add_ResourceProviderServicer_to_server(",
        "def Check(self, request, context)",
        "def Create(self, request, context)",
        "def Update(self, request, context)",
        "def Delete(self, request, context)",
        "def Diff(self, request, context)",
        # ForPeople: the servicer aborts from inside its except block, where the error is known.
        "context.abort(grpc.StatusCode.UNKNOWN, traceback.format_exc())",
    ):
        assert needed in source, needed
