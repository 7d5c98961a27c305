"""The lag exporter's loop and HTTP endpoints over a fake Kafka (components/ops/lag_exporter.py)."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from components.ops.lag_exporter import Exporter, replicated_topics, serve
from components.watch.lag import Reading
from components.watch.lag_plan import LagFlow, LagPlan

FLOW = LagFlow("primary->dr", "primary", "dr", "mm2-primary-to-dr-source", ("orders", "pay.*"), ("payments-old",), 60)


def test_replicated_topics_follow_the_patterns_and_what_mm2_committed() -> None:
    topics = {"orders": 3, "payments": 1, "payments-old": 1, "other": 1, "__consumer_offsets": 50}
    topics |= {"dr.orders": 1, "mm2-offset-syncs.dr.internal": 1, "heartbeats": 1, "legacy": 1}
    # `legacy` is not in the patterns but MM2 committed offsets for it: it is replicated.
    assert replicated_topics(FLOW, topics, {"legacy", "gone"}) == ["legacy", "orders", "payments"]


class FakeKafka:
    def __init__(self) -> None:
        self.readings: list[Reading] = []
        self.fail = False

    def read_committed(self) -> None:
        return None

    def read_flow(self, flow: LagFlow) -> list[Reading]:
        if self.fail:
            raise RuntimeError("broker down")
        return self.readings


def plan(tmp_path: Path) -> LagPlan:
    return LagPlan(
        group="mm2",
        storage_cluster="dr",
        offsets_topic="mm2-mm2-offsets",
        clusters={"primary": {"bootstrap.servers": "127.0.0.1:1"}},
        flows=(FLOW,),
        status_file=str(tmp_path / "status.json"),
        state_file=str(tmp_path / "state.json"),
    )


def test_an_expiry_is_served_kept_on_disk_and_not_counted_again_after_a_restart(tmp_path: Path) -> None:
    kafka = FakeKafka()
    exporter = Exporter(plan(tmp_path), kafka)
    kafka.readings = [Reading("orders", 0, 0, 500, 99)]
    exporter.read_once(now_ms=1_000)
    kafka.readings = [Reading("orders", 0, 300, 500, 99)]
    exporter.read_once(now_ms=2_000)
    assert [e["count"] for e in exporter.expired()["expired"]] == [200]
    assert json.loads((tmp_path / "status.json").read_text())["expired"] == 200
    assert 'mm2_expired_records_total{flow="primary->dr"' in exporter.metrics()

    again = Exporter(plan(tmp_path), kafka)  # a restarted exporter reads its state back
    again.read_once(now_ms=3_000)
    assert [e["count"] for e in again.expired()["expired"]] == [200]


def test_a_failed_reading_is_counted_and_the_last_lag_kept(tmp_path: Path) -> None:
    kafka = FakeKafka()
    exporter = Exporter(plan(tmp_path), kafka)
    kafka.readings = [Reading("orders", 0, 0, 150, 99, oldest_ms=1_000)]
    exporter.read_once(now_ms=11_000)
    kafka.fail = True
    exporter.read_once(now_ms=12_000)
    text = exporter.metrics()
    assert 'mm2_lag_read_errors_total{flow="primary->dr",source="primary",target="dr"} 1' in text
    assert 'mm2_flow_lag_seconds{flow="primary->dr",source="primary",target="dr"} 10' in text


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_http_endpoints(tmp_path: Path) -> None:
    kafka = FakeKafka()
    exporter = Exporter(plan(tmp_path), kafka)
    server = serve(exporter, "127.0.0.1:0")
    try:
        assert exporter.url.startswith("http://127.0.0.1:")
        assert _get(f"{exporter.url}/healthz")[0] == 503  # no reading yet
        kafka.readings = [Reading("orders", 0, 0, 10, 9)]
        exporter.read_once(now_ms=1_000)
        assert _get(f"{exporter.url}/healthz") == (200, "ok\n")
        status, text = _get(f"{exporter.url}/metrics")
        assert status == 200 and "# TYPE mm2_partition_lag_records gauge" in text
        assert json.loads(_get(f"{exporter.url}/expired")[1]) == {"expired": [], "recreated": []}
        assert _get(f"{exporter.url}/nothing")[0] == 404
    finally:
        server.shutdown()
        server.server_close()


def test_an_unreadable_state_file_stops_the_exporter_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text("{not json")
    with pytest.raises(SystemExit, match="move it aside"):
        Exporter(plan(tmp_path), FakeKafka())


# -- its address: locally the group's lagPort, so a restart keeps its URL -----------------------


def test_the_exporter_serves_on_the_port_it_is_given(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    exporter = Exporter(plan(tmp_path), FakeKafka())
    server = serve(exporter, f"127.0.0.1:{port}")
    try:
        assert exporter.url == f"http://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_port_another_program_holds_stops_it_naming_the_lag_port(tmp_path: Path) -> None:
    given: LagPlan = plan(tmp_path)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        with pytest.raises(SystemExit) as stopped:
            serve(Exporter(given, FakeKafka()), f"127.0.0.1:{port}")
    text = str(stopped.value)
    assert f"cannot listen on 127.0.0.1:{port}" in text and "in use" in text.lower()
    assert f"mm2:workerGroups.{given.group}.lagPort" in text and "Next step:" in text


def test_the_offsets_topic_counts_as_read_only_once_the_reader_fetched_from_every_partition() -> None:
    """An empty fetch from a reader still connecting (no watermarks yet) is not the end: a cut read
    then would be empty. At the high watermark, or after an empty fetch once positioned, it is."""
    from types import SimpleNamespace

    from components.ops.lag_exporter import Kafka

    positions: dict[int, int] = {0: -1001, 1: -1001}
    marks: dict[int, tuple[int, int]] = {0: (-1001, -1001), 1: (-1001, -1001)}
    kafka = object.__new__(Kafka)
    kafka._offsets_partitions = [SimpleNamespace(partition=0), SimpleNamespace(partition=1)]  # type: ignore[assignment]
    kafka.offsets_reader = SimpleNamespace(  # type: ignore[assignment]
        position=lambda tps: [SimpleNamespace(partition=tp.partition, offset=positions[tp.partition]) for tp in tps],
        get_watermark_offsets=lambda tp, cached: marks[tp.partition],
    )
    assert not kafka._offsets_read(fetched_nothing=True)  # still connecting: nothing fetched
    marks.update({0: (0, 40), 1: (5, 5)})  # partition 1 holds nothing to read
    assert not kafka._offsets_read(fetched_nothing=True)  # fetched, but nothing of partition 0 read yet
    positions[0] = 12
    assert not kafka._offsets_read(fetched_nothing=False)  # reading
    assert kafka._offsets_read(fetched_nothing=True)  # positioned, nothing more readable now
    positions[0] = 40
    assert kafka._offsets_read(fetched_nothing=False)  # at the high watermark
