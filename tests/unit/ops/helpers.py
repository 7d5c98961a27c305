"""Inline stack outputs and checkpoints for the ops unit tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from components.connect.client import ConnectClient
from components.mm2_records import Checkpoint
from components.ops import clients
from components.ops.switchover_plan import Request
from components.outputs.contract import StackExports
from components.watch.lag import DELETED, RECREATED, Expiry, FlowLag, SentinelState, expiries_document, exposition
from tests.unit.connect.fakes import FakeConnect, FakeSleep

# A switchover primary -> dr of the pair primary<->dr over `orders` (the flows of `outputs()`).
REQUEST = Request(
    old="primary",
    new="dr",
    pair="primary<->dr",
    principals=("User:app",),
    groups=(),
    drain_timeout_s=30,
    policy=None,
    patterns={"primary->dr": (("orders",), ())},
    cuts={},
)


def outputs(*, client: dict[str, str] | None = None, auth: str = "") -> StackExports:
    """auth: "" none, "nested" as the program exports it ({auth: {username, password}}), "flat"."""
    connect: dict[str, Any] = {"url": "http://connect.test:8083", "cluster": "dr", "auth": None}
    if auth == "nested":
        connect["auth"] = {"username": "ops", "password": "s3cret"}
    elif auth == "flat":
        connect |= {"username": "ops", "password": "s3cret"}
    primary: dict[str, Any] = {"bootstrap": "127.0.0.1:19092", "securityProtocol": "PLAINTEXT"}
    if client:
        primary["client"] = client
    return StackExports.from_json(
        {
            "clusters": {"primary": primary, "dr": {"bootstrap": "127.0.0.1:19192", "securityProtocol": "PLAINTEXT"}},
            "connect": {"mm2": connect},
            "flows": {
                "primary->dr": {
                    "source": "primary",
                    "target": "dr",
                    "workerGroup": "mm2",
                    "connectors": {
                        "source": "mm2-primary-to-dr-source",
                        "checkpoint": "mm2-primary-to-dr-checkpoint",
                        "heartbeat": "mm2-primary-to-dr-heartbeat",
                    },
                    "topics": {"orders": "primary.orders", "payments": "primary.payments"},
                    "checkpointsTopic": "primary.checkpoints.internal",
                    "offsetSyncsTopic": "mm2-offset-syncs.dr.internal",
                    "heartbeatsTopic": "heartbeats",
                    "offsetLagMax": 100,
                }
            },
        }
    )


def incident(
    flow: str, topic: str, retention: tuple[int, int, int], recreated: tuple[int, int, int], at_ms: int, later_ms: int
) -> SentinelState:
    """What a lag exporter keeps after one incident: `retention` (partition, first, end) deleted
    unreplicated, found at `at_ms`; then the topic created again, found `later_ms` after, with
    the `recreated` range lost with it."""
    return SentinelState(
        {},
        (
            Expiry(flow, topic, *retention, DELETED, at_ms),
            Expiry(flow, topic, *recreated, RECREATED, at_ms + later_ms),
        ),
        {(flow, topic): 1},
        {(flow, topic): at_ms + later_ms},
    )


def cp(group: str, topic: str, partition: int, upstream: int, downstream: int, ts: int = 1_000) -> Checkpoint:
    return Checkpoint(group, topic, partition, upstream, downstream, "", ts)


class ServedState:
    """What `components.ops.lag_exporter.serve` asks of an Exporter, from a sentinel state and
    flow lags given whole (set `.state` and `.flows` at will)."""

    def __init__(self, state: SentinelState, flows: list[FlowLag] | None = None) -> None:
        self.state, self.flows, self.ready, self.url = state, flows or [], True, ""

    def metrics(self) -> str:
        return exposition(self.flows, self.state)

    def expired(self) -> dict[str, Any]:
        return expiries_document(self.state)


@contextmanager
def serving(state: SentinelState) -> Iterator[ServedState]:
    """A lag exporter's own HTTP server over `state`, at the yielded object's `.url`."""
    from components.ops.lag_exporter import serve

    served = ServedState(state)
    server = serve(served, "127.0.0.1:0")  # type: ignore[arg-type]
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()


def route_connect(monkeypatch: Any, module: Any, fake: FakeConnect) -> None:
    """`module.connect_client` answers from `fake` (an in-memory Connect), never sleeping between retries."""

    def client(out: Any, group: str, **kwargs: Any) -> ConnectClient:
        return clients.connect_client(out, group, transport=fake.transport(), sleep=FakeSleep(), **kwargs)

    monkeypatch.setattr(module, "connect_client", client)
