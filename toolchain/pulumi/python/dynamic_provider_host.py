"""Pulumi's Python dynamic-provider host, serving with a thread pool wide enough for waits.

The host a Pulumi release ships (`python -m pulumi.dynamic`, 3.272.0) serves its gRPC
requests from `futures.ThreadPoolExecutor(max_workers=4)`. A Connector's create and update
hold their thread until the connector runs (seconds each), so however high the engine's
--parallel, a stack with 48 connectors was created 4 at a time.

This host runs Pulumi's own module (it starts its server when imported), with a first
difference: while it builds its pool, `concurrent.futures.ThreadPoolExecutor` is a subclass
that asks for at least PULUMI_DYNAMIC_THREADS workers (default 64). Serving, provider caching,
(de)serialization and the Ctrl-C/SIGINT shutdown the engine relies on are all Pulumi's.

Two more differences reach the engine: a diff's detailed paths and impacts (`detailed_servicer`),
and what providers log on the `dynamic_provider` logger (and its children) during a check,
create, update or delete: each record becomes an engine log line on the resource being changed, so
`pulumi up` shows it under that resource (`EngineLogHandler`).

And it exits with its engine (`exit_with_engine`): a `pulumi` killed outright (SIGKILL, OOM)
cannot interrupt its plugins, and Pulumi's host would serve on, orphaned, until killed by hand.

It replaces `-m pulumi.dynamic` in the `pulumi-resource-pulumi-python` plugin script that
bin/bootstrap installs beside the CLI; with `-m`, Python puts the working directory (the
project) first on sys.path, so this host does the same for the providers' modules to import.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent import futures
from typing import Any

DEFAULT_THREADS = 64


def threads() -> int:
    raw = os.environ.get("PULUMI_DYNAMIC_THREADS", "")
    try:
        value = int(raw) if raw else DEFAULT_THREADS
    except ValueError:
        sys.stderr.write(f"PULUMI_DYNAMIC_THREADS={raw!r} is not a number; using {DEFAULT_THREADS}\n")
        return DEFAULT_THREADS
    return max(1, value)


class WidePool(futures.ThreadPoolExecutor):
    """A ThreadPoolExecutor with at least `threads()` workers."""

    def __init__(self, max_workers: int | None = None, *args: object, **kwargs: object) -> None:
        super().__init__(max(threads(), max_workers or 0), *args, **kwargs)  # type: ignore[call-overload]


_KINDS = {"add": 0, "delete": 2, "update": 4}  # PropertyDiff.Kind; +1 is the *_REPLACE variant
_SEVERITIES: dict[str, Any] = {"info": 1, "warning": 2}  # engine LogSeverity
PROVIDER_LOGGER = "dynamic_provider"  # what providers log here reaches the engine
_CURRENT = threading.local()  # the URN of the resource this serving thread creates/updates/deletes


class EngineLogHandler(logging.Handler):
    """Sends a provider's log records to the engine, on the resource its thread is changing."""

    def __init__(self, engine: Any) -> None:
        super().__init__(logging.INFO)
        self.engine = engine

    def emit(self, record: logging.LogRecord) -> None:
        from pulumi.runtime import proto
        from pulumi.runtime.proto import engine_pb2

        severity = engine_pb2.INFO
        if record.levelno >= logging.WARNING:
            severity = engine_pb2.ERROR if record.levelno >= logging.ERROR else engine_pb2.WARNING
        try:
            urn = getattr(_CURRENT, "urn", "")
            self.engine.Log(proto.LogRequest(severity=severity, message=record.getMessage(), urn=urn))
        except Exception:  # a log line must never fail the operation it describes
            self.handleError(record)


class ForPeople:
    """A gRPC context whose `abort`, which Pulumi's servicer calls from inside its `except` block
    with the traceback as details, keeps only the message of a refusal (an exception whose class
    says `refusal = True`: it names what failed and the fix; a traceback would bury that)."""

    def __init__(self, context: Any) -> None:
        self._context = context

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)

    def abort(self, code: Any, details: str) -> Any:
        raised = sys.exc_info()[1]
        return self._context.abort(code, str(raised) if getattr(raised, "refusal", False) else details)


def bound_to_resource(method: Any) -> Any:
    """Wrap a servicer method so its provider's log records name the request's resource, and a
    refusal it raises reaches the engine as its message alone (`ForPeople`)."""

    def call(request: Any, context: Any) -> Any:
        _CURRENT.urn = getattr(request, "urn", "")
        try:
            return method(request, ForPeople(context))
        finally:
            _CURRENT.urn = ""

    return call


def forward_provider_logs(servicer: Any, engine: Any) -> None:
    logger = logging.getLogger(PROVIDER_LOGGER)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    logger.handlers = [EngineLogHandler(engine)]
    for name in ("Check", "Create", "Update", "Delete"):
        method = getattr(servicer, name, None)
        if method is not None:
            setattr(servicer, name, bound_to_resource(method))


def property_diffs(detailed: dict[str, str], replaces: list[str]) -> dict[str, dict[str, Any]]:
    """{path: kind} -> PropertyDiff fields; a path under a replacing property replaces."""
    out: dict[str, dict[str, Any]] = {}
    for path, kind in detailed.items():
        top = path.split("[", 1)[0].split(".", 1)[0]
        out[path] = {"kind": _KINDS.get(kind, _KINDS["update"]) + (1 if top in replaces else 0), "inputDiff": True}
    return out


def detailed_servicer(servicer: Any, engine_address: str | None) -> Any:
    """Wrap the servicer's Diff so detailed diffs and impacts reach the engine."""
    import grpc
    from pulumi.runtime import proto, rpc
    from pulumi.runtime.proto import engine_pb2_grpc

    pulumis = sys.modules["pulumi.dynamic.__main__"]
    engine = engine_pb2_grpc.EngineStub(grpc.insecure_channel(engine_address)) if engine_address else None

    def diff(request: Any, context: Any) -> Any:
        # As Pulumi's own Diff (decorated with _abort_with_traceback since 3.272): a provider's
        # exception fails the call with its traceback, not grpc's bare "Exception calling application".
        # A refusal (an exception whose class says `refusal = True`: the provider's own verdict on
        # the change, e.g. components.rpc_values.Refused) is for people: its message alone.
        try:
            return detailed_diff(request)
        except Exception as exc:
            details = str(exc) if getattr(exc, "refusal", False) else traceback.format_exc()
            context.abort(grpc.StatusCode.UNKNOWN, details)

    def detailed_diff(request: Any) -> Any:
        # Pulumi's own Diff (pulumi/dynamic/__main__.py), plus detailed diff and impacts.
        olds = rpc.deserialize_properties(request.olds, True)
        news = rpc.deserialize_properties(request.news, True)
        source = olds if news[pulumis.PROVIDER_KEY] == rpc.UNKNOWN else news
        result = pulumis.get_provider(source, servicer._config).diff(request.id, olds, news)
        fields: dict[str, Any] = {}
        if result.changes is None:
            fields["changes"] = proto.DiffResponse.DIFF_UNKNOWN
        else:
            fields["changes"] = proto.DiffResponse.DIFF_SOME if result.changes else proto.DiffResponse.DIFF_NONE
        if result.replaces is not None:
            fields["replaces"] = result.replaces
        if result.delete_before_replace is not None:
            fields["deleteBeforeReplace"] = result.delete_before_replace
        detailed = getattr(result, "detailed_diff", None)
        if detailed is not None:
            fields["diffs"] = sorted({p.split("[", 1)[0].split(".", 1)[0] for p in detailed})
            fields["detailedDiff"] = {
                path: proto.PropertyDiff(**pd) for path, pd in property_diffs(detailed, result.replaces or []).items()
            }
            fields["hasDetailedDiff"] = True
        if engine is not None:
            for severity, text in getattr(result, "impacts", None) or ():
                engine.Log(proto.LogRequest(severity=_SEVERITIES.get(severity, 1), message=text, urn=request.urn))
        return proto.DiffResponse(**fields)

    servicer.Diff = diff
    if engine is not None:
        forward_provider_logs(servicer, engine)
    return servicer


def forward_detailed_diffs(engine_address: str | None) -> None:
    from pulumi.runtime.proto import provider_pb2_grpc

    register = provider_pb2_grpc.add_ResourceProviderServicer_to_server

    def add(servicer: Any, server: Any) -> None:
        register(detailed_servicer(servicer, engine_address), server)

    provider_pb2_grpc.add_ResourceProviderServicer_to_server = add


ENGINE_CHECK_S = 2.0  # how often the host looks for its engine; gone at two refusals in a row


def engine_gone(address: str) -> bool:
    """Whether nothing listens at the engine's gRPC address any more (a refused connection). A
    slow or busy engine still accepts connections: only a refusal counts."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=1):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:  # a timeout or another error: not proof that the engine is gone
        return False


def exit_with_engine(
    address: str, interval_s: float = ENGINE_CHECK_S, exit_process: Callable[[int], Any] = os._exit
) -> threading.Thread:
    """A daemon thread that ends this process when the engine at `address` is gone (within about
    two intervals). Nothing can receive an operation's result any more; like the engine's own
    kill of a plugin, the process ends at once, in-flight operations with it."""

    def watch() -> None:
        refusals = 0
        while refusals < 2:
            time.sleep(interval_s)  # a poll of the engine, not a wait for an event
            refusals = refusals + 1 if engine_gone(address) else 0
        try:  # the engine read our stderr: with it gone, the write may fail (EPIPE)
            sys.stderr.write(f"dynamic provider host: the engine at {address} is gone; exiting\n")
            sys.stderr.flush()
        except OSError:
            pass
        exit_process(1)

    thread = threading.Thread(target=watch, name="engine-watch", daemon=True)
    thread.start()
    return thread


def main() -> None:
    sys.path.insert(0, os.getcwd())
    futures.ThreadPoolExecutor = WidePool  # type: ignore[misc]
    engine_address = sys.argv[1] if len(sys.argv) > 1 else None
    forward_detailed_diffs(engine_address)
    if engine_address:
        exit_with_engine(engine_address)
    # Pulumi's module serves when imported and returns when the engine interrupts it.
    import pulumi.dynamic.__main__  # noqa: F401


if __name__ == "__main__":
    main()
