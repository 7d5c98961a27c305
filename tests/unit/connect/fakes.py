"""A small in-memory Kafka Connect REST API for httpx.MockTransport, and a fake sleep."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import httpx

URL = "http://connect.test:8083"

Step = httpx.Response | Exception


@dataclass
class FakeSleep:
    """Records every pause instead of sleeping."""

    calls: list[float] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)

    @property
    def total(self) -> float:
        return sum(self.calls)


def error(status: int, message: str) -> httpx.Response:
    return httpx.Response(status, json={"error_code": status, "message": message})


def running(name: str, tasks: int = 1, state: str = "RUNNING") -> dict[str, Any]:
    """A status in `state`; a STOPPED connector has no tasks, as in Connect."""
    count = 0 if state == "STOPPED" else tasks
    return {
        "name": name,
        "connector": {"state": state, "worker_id": "w0:8083"},
        "tasks": [{"id": i, "state": state, "worker_id": "w0:8083"} for i in range(count)],
        "type": "source",
    }


@dataclass
class FakeConnect:
    """Connectors kept in a dict; scripted answers for (method, path) are served first.

    `statuses[name]` lists the statuses that successive GET status calls return (the last one
    repeats); without an entry a connector reports its target state (`states`: RUNNING unless
    created with another initial_state or paused/stopped since) with one task. `delete_lag` is
    how many status polls a deleted connector stays visible.
    """

    connectors: dict[str, dict[str, str]] = field(default_factory=dict)
    statuses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    script: dict[tuple[str, str], list[Step]] = field(default_factory=dict)
    validation_errors: dict[str, list[str]] = field(default_factory=dict)
    delete_lag: int = 0
    states: dict[str, str] = field(default_factory=dict)
    requests: list[httpx.Request] = field(default_factory=list)
    _deleting: dict[str, int] = field(default_factory=dict)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def factory(self) -> Callable[[], httpx.BaseTransport]:
        return self.transport

    def seen(self, method: str | None = None) -> list[str]:
        """'METHOD raw-path' of every request received, optionally of one method only."""
        return [f"{r.method} {r.url.raw_path.decode()}" for r in self.requests if method is None or r.method == method]

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        raw_path = request.url.raw_path.decode().split("?", 1)[0]
        steps = self.script.get((request.method, raw_path))
        if steps:
            step = steps.pop(0) if len(steps) > 1 else steps[0]
            if isinstance(step, Exception):
                raise step
            return step
        parts = [unquote(p) for p in raw_path.strip("/").split("/")] if raw_path != "/" else []
        return self._route(request, parts)

    def _route(self, request: httpx.Request, parts: list[str]) -> httpx.Response:
        method = request.method
        if not parts:
            return httpx.Response(200, json={"version": "4.1.0", "commit": "abc", "kafka_cluster_id": "c1"})
        if parts == ["connector-plugins"]:
            return httpx.Response(200, json=[{"class": "org.apache.kafka.connect.mirror.MirrorSourceConnector"}])
        if parts[0] == "connector-plugins" and parts[-2:] == ["config", "validate"]:
            return self._validate(json.loads(request.content))
        if method == "POST" and parts == ["connectors"]:
            body = json.loads(request.content)
            name = body["name"]
            if name in self.connectors:
                return error(409, f"Connector {name} already exists")
            self.connectors[name] = {**body["config"], "name": name}
            self.states[name] = body.get("initial_state", "RUNNING")
            return httpx.Response(201, json={"name": name, "config": self.connectors[name], "tasks": []})
        if parts[0] != "connectors" or len(parts) < 2:
            return httpx.Response(404, json={"error_code": 404, "message": "HTTP 404 Not Found"})
        name, rest = parts[1], parts[2:]
        if method == "PUT" and rest == ["config"]:
            created = name not in self.connectors
            self.connectors[name] = {**json.loads(request.content), "name": name}
            self._deleting.pop(name, None)
            body = {"name": name, "config": self.connectors[name], "tasks": [], "type": "source"}
            return httpx.Response(201 if created else 200, json=body)
        if name not in self.connectors:
            return error(404, f"Connector {name} not found")
        if method == "GET" and rest == ["config"]:
            return httpx.Response(200, json=self.connectors[name])
        if method == "GET" and rest == ["status"]:
            if name in self._deleting:
                self._deleting[name] -= 1
                if self._deleting[name] < 0:
                    del self._deleting[name]
                    del self.connectors[name]
                    return error(404, f"No status found for connector {name}")
            queue = self.statuses.get(name)
            if not queue:
                return httpx.Response(200, json=running(name, state=self.states.get(name, "RUNNING")))
            return httpx.Response(200, json=queue.pop(0) if len(queue) > 1 else queue[0])
        if method == "DELETE" and not rest:
            if self.delete_lag:
                self._deleting[name] = self.delete_lag
            else:
                del self.connectors[name]
            return httpx.Response(204)
        if method in ("PUT", "POST") and rest and rest[0] in ("pause", "resume", "stop", "restart"):
            target = {"pause": "PAUSED", "resume": "RUNNING", "stop": "STOPPED"}.get(rest[0])
            if target is not None:
                self.states[name] = target
            return httpx.Response(202 if rest[0] != "stop" else 204)
        return error(405, "HTTP 405 Method Not Allowed")

    def _validate(self, config: dict[str, str]) -> httpx.Response:
        keys = list(config) + [k for k in self.validation_errors if k not in config]
        configs = [
            {
                "definition": {"name": key},
                "value": {"name": key, "value": config.get(key), "errors": self.validation_errors.get(key, [])},
            }
            for key in keys
        ]
        count = sum(1 for key in keys if self.validation_errors.get(key))
        return httpx.Response(
            200, json={"name": config.get("connector.class"), "error_count": count, "configs": configs}
        )
