"""In-memory clusters and Connect for `bin/status` tests (components/ops/status.py): a fake
reader per cluster, and a `connect` fixture serving the flow's connectors."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from components.mm2_records import Heartbeat, OffsetSync, encode_heartbeat, encode_offset_sync
from components.ops import status as st
from components.ops import status_probes
from components.ops.brokers import cluster_health
from tests.unit.connect.fakes import FakeConnect
from tests.unit.ops.helpers import outputs, route_connect

NAMES = ["mm2-primary-to-dr-source", "mm2-primary-to-dr-checkpoint", "mm2-primary-to-dr-heartbeat"]


class Msg:
    def __init__(self, key: bytes | None, value: bytes | None, ts: int, offset: int = 0) -> None:
        self._k, self._v, self._ts, self._o = key, value, ts, offset

    def key(self) -> bytes | None:
        return self._k

    def value(self) -> bytes | None:
        return self._v

    def timestamp(self) -> tuple[int, int]:
        return (1, self._ts)

    def offset(self) -> int:
        return self._o


class FakeReader:
    """A cluster as ClusterReader sees it: end offsets per topic and records of partition 0."""

    def __init__(self, alias: str, ends: dict[str, dict[int, int]], records: dict[str, list[Msg]]) -> None:
        self.alias = alias
        self.health = cluster_health(alias, [0], [])  # one broker, every replica in sync
        self._ends = ends
        self._records = records
        self.partitions = {t: sorted(e) for t, e in ends.items()} | {t: [0] for t in records}

    def ends(self, topic: str) -> dict[int, int] | None:
        return self._ends.get(topic)

    def read(self, topic: str, partition: int = 0, last: int | None = None) -> list[Msg]:
        records = self._records.get(topic, [])
        return records[-last:] if last else records


def now_ms(ago_s: float = 0.0) -> int:
    return int((time.time() - ago_s) * 1000)


def clusters(heartbeat_age_s: float = 1.0) -> dict[str, FakeReader]:
    sync = Msg(*encode_offset_sync(OffsetSync("orders", 0, 100, 40)), now_ms())
    beat = Msg(*encode_heartbeat(Heartbeat("primary", "dr", now_ms(heartbeat_age_s))), now_ms(heartbeat_age_s))
    primary = FakeReader("primary", {"orders": {0: 130}, "payments": {0: 0}}, {"mm2-offset-syncs.dr.internal": [sync]})
    dr = FakeReader(
        "dr",
        {"primary.orders": {0: 60}, "primary.payments": {0: 0}},
        {"heartbeats": [beat], "primary.checkpoints.internal": [Msg(b"k", b"v", now_ms(3.0))]},
    )
    return {"primary": primary, "dr": dr}


@pytest.fixture
def connect(monkeypatch: pytest.MonkeyPatch) -> FakeConnect:
    fake = FakeConnect(connectors={n: {"connector.class": "x"} for n in NAMES})
    route_connect(monkeypatch, st, fake)
    monkeypatch.setattr(status_probes, "_answers", lambda url, ca_pem: None)  # every worker answers the probe
    return fake


def use_clusters(monkeypatch: pytest.MonkeyPatch, readers: dict[str, FakeReader]) -> None:
    @contextmanager
    def fake_readers(_outputs: Any, aliases: Any) -> Iterator[dict[str, FakeReader]]:
        yield {a: readers[a] for a in aliases}

    monkeypatch.setattr(st, "cluster_readers", fake_readers)
    monkeypatch.setattr(st, "load_exports", lambda stack, path: outputs())
