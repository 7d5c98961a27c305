"""`bin/status` end to end on an in-memory Connect (httpx.MockTransport) and in-memory clusters."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from components.ops import status as st
from components.ops import status_probes
from components.ops.brokers import PartitionReplicas, cluster_health
from components.outputs.contract import OutputsError
from components.platform.local.layout import WATCHER_STATUS_FILE, run_root, watcher_path
from components.watch.lag import (
    CAUSE,
    DELETED,
    RECREATED,
    Expiry,
    FlowLag,
    Memory,
    PartitionLag,
    SentinelState,
)
from tests.unit.connect.fakes import FakeConnect, running
from tests.unit.ops.helpers import ServedState, outputs, serving
from tests.unit.ops.status_fakes import NAMES, clusters, use_clusters

GONE = CAUSE[DELETED]  # the reports' words for records deleted before MM2 copied them


def test_healthy_flow_shows_lag_checkpoint_and_heartbeat(
    connect: FakeConnect, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_clusters(monkeypatch, clusters())
    assert st.main(["--stack", "dev", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    flow = data["flows"]["primary->dr"]
    assert data["healthy"] is True
    # Offset sync 100 -> 40, target end 60: source position 120 of 130.
    assert {t["topic"]: t["lag"] for t in flow["topics"]} == {"orders": 10, "payments": 0}
    assert 2.0 < flow["checkpoint_age_s"] < 10.0
    assert flow["heartbeat"]["topic"] == "heartbeats" and flow["heartbeat"]["age_s"] < 10.0
    assert [c["state"] for c in flow["connectors"]] == ["RUNNING"] * 3


def test_failed_task_makes_the_flow_unhealthy_with_its_trace(
    connect: FakeConnect, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status = running(NAMES[0], tasks=2)
    status["tasks"][1] |= {"state": "FAILED", "trace": "org.apache.kafka.connect.errors.ConnectException: boom\n\tat x"}
    connect.statuses[NAMES[0]] = [status]
    use_clusters(monkeypatch, clusters())
    assert st.main(["--stack", "dev"]) == 3
    out = capsys.readouterr().out
    assert "UNHEALTHY" in out
    assert "why unhealthy: source task 1 on" in out and "ConnectException: boom" in out
    assert "\tat x" not in out  # only the first trace line


def test_stale_heartbeat_is_unhealthy(
    connect: FakeConnect, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_clusters(monkeypatch, clusters(heartbeat_age_s=120))
    assert st.main(["--stack", "dev", "--heartbeat-max-age", "30"]) == 3
    assert "heartbeat in heartbeats is 120 s old" in capsys.readouterr().out


def test_no_deployment_says_so_and_fails(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def missing(stack: str, path: str) -> Any:
        raise OutputsError("stack outputs: stack dev has no outputs. Next step: `bin/pulumi up`.")

    monkeypatch.setattr(st, "load_exports", missing)
    assert st.main(["--stack", "dev"]) == 1
    err = capsys.readouterr().err
    assert "no deployment" in err and "bin/pulumi up" in err


def test_unknown_flow_is_an_error(
    connect: FakeConnect, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_clusters(monkeypatch, clusters())
    assert st.main(["--stack", "dev", "--flow", "dr->primary"]) == 1
    assert "flow 'dr->primary' is not in the stack outputs" in capsys.readouterr().err


def _watcher_status(root: Path, stack: str, group: str, doc: dict[str, Any] | None) -> None:
    directory = Path(run_root(root, stack)) / watcher_path(group)
    directory.mkdir(parents=True)
    if doc is not None:
        (directory / WATCHER_STATUS_FILE).write_text(json.dumps(doc))


def test_status_shows_what_the_watcher_restarted_and_when(
    connect: FakeConnect, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    use_clusters(monkeypatch, clusters())
    monkeypatch.setattr(st, "ROOT", tmp_path)
    assert st.main(["--stack", "dev"]) == 0
    assert "watcher" not in capsys.readouterr().out  # no watcher in this stack: nothing shown
    updated = datetime.now(timezone.utc).isoformat()
    restart = {"at": "2026-11-23T04:31:07.52Z", "connector": NAMES[0], "action": "restart", "restart": 1}
    doc = {
        "group": "mm2",
        "pid": 4242,
        "updatedAt": updated,
        "reachable": True,
        "connectors": {NAMES[0]: {"state": "RUNNING", "restarts": 1, "maxRestarts": 3, "gaveUp": False}},
        "events": [{**restart, "cause": "task 0 FAILED on worker w1: boom"}],
    }
    _watcher_status(tmp_path, "dev", "mm2", doc)
    assert st.main(["--stack", "dev"]) == 0
    out = capsys.readouterr().out
    assert "watcher mm2  (auto-restart, pid 4242" in out and "STALE" not in out
    assert f"{NAMES[0]:<36} RUNNING    restarts 1 of 3" in out
    assert f"2026-11-23T04:31:07.52Z  {NAMES[0]}  restart 1: task 0 FAILED on worker w1: boom" in out
    assert st.main(["--stack", "dev", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["watchers"]["mm2"] == doc


def test_a_watcher_without_a_fresh_status_says_so(
    connect: FakeConnect, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    use_clusters(monkeypatch, clusters())
    monkeypatch.setattr(st, "ROOT", tmp_path)
    _watcher_status(tmp_path, "dev", "mm2", None)
    assert st.main(["--stack", "dev"]) == 0
    assert "watcher mm2: no status file yet" in capsys.readouterr().out
    old = {"pid": 1, "updatedAt": "2026-01-01T00:00:00.00Z", "connectors": {}, "events": [], "reachable": False}
    (Path(run_root(tmp_path, "dev")) / watcher_path("mm2") / WATCHER_STATUS_FILE).write_text(json.dumps(old))
    assert st.main(["--stack", "dev"]) == 0
    out = capsys.readouterr().out
    assert "Connect NOT reachable" in out and "STALE: the watcher may have stopped" in out
    assert "nothing restarted yet" in out


def test_a_worker_group_with_no_worker_answering_is_named_and_unhealthy_without_reading_connect(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_clusters(monkeypatch, clusters())
    asked: list[str] = []

    def refused(url: str, _ca: Any) -> str:
        asked.append(url)
        return "[Errno 111] Connection refused"

    def no_client(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("a dead group's connectors are not read (that waits the client's retry budget)")

    monkeypatch.setattr(status_probes, "_answers", refused)
    monkeypatch.setattr(st, "connect_client", no_client)
    monkeypatch.setattr(st, "load_exports", lambda stack, path: _with_workers(outputs()))
    assert st.main(["--stack", "dev"]) == 3
    out = capsys.readouterr().out
    assert sorted(asked) == ["http://127.0.0.1:18083", "http://127.0.0.1:18084"]
    assert "why unhealthy: worker group mm2: no worker answered within 2 s" in out
    assert "http://127.0.0.1:18084: [Errno 111] Connection refused" in out
    assert out.count("UNREACHABLE") == 3
    assert "is UNREACHABLE, the stack declares" not in out  # said once, for the group


def test_one_answering_worker_keeps_the_group_alive(
    connect: FakeConnect, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_clusters(monkeypatch, clusters())
    monkeypatch.setattr(st, "load_exports", lambda stack, path: _with_workers(outputs()))
    monkeypatch.setattr(status_probes, "_answers", lambda url, _ca: None if url.endswith("18084") else "refused")
    assert st.main(["--stack", "dev"]) == 0
    assert "worker group mm2" not in capsys.readouterr().out.replace("(worker group mm2)", "")


def test_the_probe_gives_a_silent_worker_one_short_timeout_and_a_closed_port_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import socket

    monkeypatch.setattr(status_probes, "WORKER_PROBE_TIMEOUT_S", 0.3)
    with socket.socket() as silent, socket.socket() as closed:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # accepts the connection, never answers
        closed.bind(("127.0.0.1", 0))  # bound, not listening: refused
        urls = (f"http://127.0.0.1:{silent.getsockname()[1]}", f"http://127.0.0.1:{closed.getsockname()[1]}")
        exports = _with_workers(outputs(), urls)
        down = status_probes.dead_groups(exports, ["mm2"])
    assert set(down) == {"mm2"}
    assert "timed out" in down["mm2"][urls[0]]
    assert "refused" in down["mm2"][urls[1]]


def _with_workers(exports: Any, urls: tuple[str, ...] = ("http://127.0.0.1:18083", "http://127.0.0.1:18084")) -> Any:

    group = replace(exports.connect["mm2"], worker_urls=urls)
    return replace(exports, connect={**exports.connect, "mm2": group})


# -- the data-loss sentinel: the worker group's lag exporter (a real server of components/ops/lag_exporter.py) --

AT_MS = 1_795_000_000_000  # 2026-11-18T11:06:40Z


@pytest.fixture
def exporter() -> Iterator[ServedState]:
    """A lag exporter's server: set `.state` (and `.flows`) on what it yields."""
    with serving(SentinelState({})) as served:
        yield served


def _with_lag(url: str) -> Any:

    exports = outputs()
    return replace(exports, connect={"mm2": replace(exports.connect["mm2"], lag_url=url)})


def _memory() -> dict[tuple[str, str, int], Memory]:
    return {("primary->dr", "orders", p): Memory(None, 300, 299) for p in (0, 1)}


def test_records_deleted_before_mm2_copied_them_are_listed_per_partition_and_the_flow_is_unhealthy(
    connect: FakeConnect, exporter: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    exporter.state = SentinelState(
        _memory(),
        (
            Expiry("primary->dr", "orders", 0, 100, 180, DELETED, AT_MS),
            Expiry("primary->dr", "orders", 1, 7, 12, DELETED, AT_MS),
            Expiry("primary->dr", "orders", 0, 180, 300, DELETED, AT_MS + 5000),  # the next reading's
            Expiry("dr->primary", "orders", 0, 1, 999, DELETED, AT_MS),  # another flow of the group
        ),
    )
    exporter.flows = [FlowLag("primary->dr", "primary", "dr", 60, (PartitionLag("orders", 0, 42, 12.5),))]
    use_clusters(monkeypatch, clusters())
    monkeypatch.setattr(st, "load_exports", lambda stack, path: _with_lag(exporter.url))
    assert st.main(["--stack", "dev"]) == 3
    out = capsys.readouterr().out
    assert "flow primary->dr  (worker group mm2)  UNHEALTHY" in out
    assert f"lag exporter {exporter.url}: flow lag 42 record(s), 12.5s" in out
    assert (
        "expired: orders[0] offsets 100..299: 200 record(s) "
        f"{GONE}"
        " before MM2 copied them "
        "(first found 2026-11-18T11:06:40Z)" in out
    )
    assert f"expired: orders[1] offsets 7..11: 5 record(s) {GONE}" in out
    assert "998 record(s)" not in out  # the other flow's expiry is not this flow's
    assert "why unhealthy: 205 source record(s) in 2 partition(s) were deleted from the source" in out
    assert st.main(["--stack", "dev", "--json"]) == 3
    sentinel = json.loads(capsys.readouterr().out)["flows"]["primary->dr"]["sentinel"]
    assert [(e["partition"], e["first"], e["end"], e["count"], e["reason"]) for e in sentinel["expired"]] == [
        (0, 100, 300, 200, "deleted"),
        (1, 7, 12, 5, "deleted"),
    ]
    assert sentinel["expired"][0]["detail"].startswith("orders[0] offsets 100..299: 200 record(s)")
    assert sentinel["lag_records"] == 42 and sentinel["lag_seconds"] == 12.5 and sentinel["error"] == ""


def test_a_source_topic_created_again_is_reported_with_what_was_lost_with_it(
    connect: FakeConnect, exporter: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    exporter.state = SentinelState(
        _memory(),
        (Expiry("primary->dr", "orders", 1, 250, 300, RECREATED, AT_MS),),
        {("primary->dr", "orders"): 1, ("primary->dr", "payments"): 0},
    )
    use_clusters(monkeypatch, clusters())
    monkeypatch.setattr(st, "load_exports", lambda stack, path: _with_lag(exporter.url))
    assert st.main(["--stack", "dev"]) == 3
    out = capsys.readouterr().out
    assert "expired: orders[1] offsets 250..299: 50 record(s) lost with the topic when it was created again" in out
    assert "re-created: source topic orders (1 time(s), last found not known)" in out
    assert "source topic payments" not in out
    assert "why unhealthy: source topic orders was deleted and created again (1 time(s)): 50 record(s)" in out
    assert "deleted from the source" not in out


def test_a_loss_acknowledged_in_the_outputs_leaves_the_flow_healthy_until_something_new_is_found(
    connect: FakeConnect, exporter: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:

    exporter.state = SentinelState(_memory(), (Expiry("primary->dr", "orders", 0, 100, 300, DELETED, AT_MS),))
    exports = _with_lag(exporter.url)
    flow = replace(exports.flows["primary->dr"], loss_acknowledged_at_ms=AT_MS)
    acknowledged = replace(exports, flows={"primary->dr": flow})
    use_clusters(monkeypatch, clusters())
    monkeypatch.setattr(st, "load_exports", lambda stack, path: acknowledged)
    assert st.main(["--stack", "dev"]) == 0
    out = capsys.readouterr().out
    assert "flow primary->dr  (worker group mm2)  healthy" in out
    assert "acknowledged by lossAcknowledged 2026-11-18T11:06:40Z)" in out and "why unhealthy" not in out
    exporter.state = SentinelState(
        _memory(), (*exporter.state.expiries, Expiry("primary->dr", "orders", 1, 7, 12, DELETED, AT_MS + 1))
    )
    assert st.main(["--stack", "dev", "--json"]) == 3
    sentinel = json.loads(capsys.readouterr().out)["flows"]["primary->dr"]["sentinel"]
    assert [(e["partition"], e["acknowledged"]) for e in sentinel["expired"]] == [(0, True), (1, False)]
    assert sentinel["loss_acknowledged_at"] == "2026-11-18T11:06:40Z"


def test_an_exporter_that_found_nothing_shows_the_lag_and_leaves_the_flow_healthy(
    connect: FakeConnect, exporter: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    exporter.state = SentinelState(_memory())
    use_clusters(monkeypatch, clusters())
    monkeypatch.setattr(st, "load_exports", lambda stack, path: _with_lag(exporter.url))
    assert st.main(["--stack", "dev"]) == 0
    out = capsys.readouterr().out
    assert f"lag exporter {exporter.url}: flow lag - record(s), -" in out  # no partition read yet
    assert "expired:" not in out and "UNHEALTHY" not in out


def test_an_exporter_not_answering_is_a_note_not_a_verdict(
    connect: FakeConnect, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, not listening: refused
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
        use_clusters(monkeypatch, clusters())
        monkeypatch.setattr(st, "load_exports", lambda stack, path: _with_lag(url))
        assert st.main(["--stack", "dev"]) == 0
        out = capsys.readouterr().out
        assert st.main(["--stack", "dev", "--json"]) == 0
        sentinel = json.loads(capsys.readouterr().out)["flows"]["primary->dr"]["sentinel"]
    assert f"note: lag exporter {url} did not answer within 2 s (" in out and "refused" in out
    assert "expired records not checked" in out and "healthy" in out
    assert "refused" in sentinel["error"] and sentinel["expired"] == []


IN_CLUSTER = "http://mm2-lag-exporter.kafka.svc:9404"  # as a Kubernetes stack exports its lagUrl


def unresolvable_in_cluster_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Names only a Kubernetes cluster's DNS resolves do not resolve here, as on a laptop."""
    import socket

    resolve = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if str(host).endswith(".svc"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_an_in_cluster_exporter_run_from_outside_says_how_to_reach_it(
    connect: FakeConnect, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    unresolvable_in_cluster_names(monkeypatch)
    use_clusters(monkeypatch, clusters())
    monkeypatch.setattr(st, "load_exports", lambda stack, path: _with_lag(IN_CLUSTER))
    assert st.main(["--stack", "prod"]) == 0  # a note, not a verdict
    out = capsys.readouterr().out
    assert f"note: lag exporter {IN_CLUSTER} runs inside the Kubernetes cluster and is not reachable from here" in out
    assert "Name or service not known" in out and "expired records not checked" in out
    assert "`kubectl port-forward -n kafka svc/mm2-lag-exporter 9404` in another shell" in out
    assert "then `bin/status --lag-url mm2=http://127.0.0.1:9404`" in out
    assert "starts it again" not in out


def test_lag_url_reads_the_exporter_at_the_given_address_instead(
    connect: FakeConnect, exporter: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The stack exports the in-cluster URL; a port-forward serves the exporter at exporter.url.
    unresolvable_in_cluster_names(monkeypatch)
    exporter.state = SentinelState(_memory(), (Expiry("primary->dr", "orders", 0, 100, 300, DELETED, AT_MS),))
    exporter.flows = [FlowLag("primary->dr", "primary", "dr", 60, (PartitionLag("orders", 0, 42, 12.5),))]
    use_clusters(monkeypatch, clusters())
    monkeypatch.setattr(st, "load_exports", lambda stack, path: _with_lag(IN_CLUSTER))
    assert st.main(["--stack", "prod", "--lag-url", f"mm2={exporter.url}"]) == 3
    out = capsys.readouterr().out
    assert f"lag exporter {exporter.url}: flow lag 42 record(s), 12.5s" in out
    assert "expired: orders[0]" in out and IN_CLUSTER not in out


def test_an_exporter_given_with_lag_url_not_answering_says_to_check_the_address(
    connect: FakeConnect, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, not listening: no port-forward there
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
        use_clusters(monkeypatch, clusters())
        monkeypatch.setattr(st, "load_exports", lambda stack, path: _with_lag(IN_CLUSTER))
        assert st.main(["--stack", "prod", "--lag-url", f"mm2={url}"]) == 0
    out = capsys.readouterr().out
    assert f"note: lag exporter {url} did not answer within 2 s (" in out
    assert "given with --lag-url: check it, or the port-forward" in out and "starts it again" not in out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--lag-url", "http://127.0.0.1:9404"], "'http://127.0.0.1:9404' is not GROUP=http://host:port"),
        (["--lag-url", "mm2=127.0.0.1:9404"], "'mm2=127.0.0.1:9404' is not GROUP=http://host:port"),
        (["--lag-url", "mm2=http://a:1", "--lag-url", "mm2=http://b:2"], "worker group mm2 is given twice"),
        (["--lag-url", "east=http://127.0.0.1:9404"], "no worker group east in the stack's outputs (it has: mm2)"),
    ],
)
def test_lag_url_takes_group_equals_url_of_a_group_the_stack_has(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    monkeypatch.setattr(st, "load_exports", lambda stack, path: _with_lag(IN_CLUSTER))
    with pytest.raises(SystemExit) as exited:
        st.main(["--stack", "prod", *args])
    assert exited.value.code == 2
    assert f"--lag-url: {says}" in capsys.readouterr().err


def test_a_silent_exporter_costs_no_more_than_the_worker_probe(
    connect: FakeConnect, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket
    import threading

    # Proven by overlap, not by the clock: the workers' probe and the exporter's read each wait
    # (bounded) until the other has begun, so run one after the other either wait runs out.
    # And /metrics is not asked once /expired timed out: a silent exporter costs one timeout.
    monkeypatch.setattr(status_probes, "LAG_EXPORTER_TIMEOUT_S", 0.5)
    probing, reading = threading.Event(), threading.Event()
    overlap: dict[str, bool] = {}
    asked: list[str] = []

    def probe(url: str, _ca: Any) -> None:
        probing.set()
        overlap["probe saw the exporter asked"] = reading.wait(10)

    read_exporter, get = status_probes.read_exporter, status_probes._get

    def read(url: str, get: Any = None) -> Any:
        reading.set()
        overlap["exporter saw the probe running"] = probing.wait(10)
        return read_exporter(url, get)

    def recorded_get(url: str) -> bytes:
        asked.append(url.rsplit("/", 1)[-1])
        return get(url)

    monkeypatch.setattr(status_probes, "_answers", probe)
    monkeypatch.setattr(status_probes, "read_exporter", read)
    monkeypatch.setattr(status_probes, "_get", recorded_get)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # accepts, never answers
        exports = _with_lag(f"http://127.0.0.1:{silent.getsockname()[1]}")
        use_clusters(monkeypatch, clusters())
        [flow], _ = st.collect(exports)
    assert overlap == {"probe saw the exporter asked": True, "exporter saw the probe running": True}, overlap
    assert flow.sentinel is not None and "timed out" in flow.sentinel.error
    assert asked == ["expired"] and flow.healthy, asked


def test_a_group_without_a_lag_exporter_shows_no_sentinel(
    connect: FakeConnect, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_clusters(monkeypatch, clusters())  # outputs() exports no lagUrl, as outputs before the exporter
    assert st.main(["--stack", "dev", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["flows"]["primary->dr"]["sentinel"] is None
    assert st.main(["--stack", "dev"]) == 0
    assert "lag exporter" not in capsys.readouterr().out


def test_a_broker_down_is_named_with_its_pod_and_node_and_the_status_is_not_healthy(
    connect: FakeConnect, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readers = clusters()
    replicas = [PartitionReplicas("orders", 0, (0, 1, 2), (0, 2))]
    readers["primary"].health = cluster_health("primary", [0, 2], replicas)
    use_clusters(monkeypatch, readers)
    pods = {"context": "prod", "namespace": "mm2", "statefulset": "primary-kafka"}
    exports = outputs()
    primary = replace(exports.clusters["primary"], pods=pods)
    exports = replace(exports, clusters={**exports.clusters, "primary": primary})
    monkeypatch.setattr(st, "load_exports", lambda stack, path: exports)
    asked = []
    monkeypatch.setattr(st, "pod_place", lambda given, broker: asked.append((given, broker)) or "pod P on node N")
    assert st.main(["--stack", "dev"]) == 3
    out = capsys.readouterr().out
    assert "cluster primary  DEGRADED: 2 of 3 brokers registered, 1 partition(s) under-replicated" in out
    assert "why degraded: cluster primary: broker 1 is down" in out and "It runs as pod P on node N." in out
    assert asked == [(pods, 1)]
    assert st.main(["--stack", "dev", "--json"]) == 3
    data = json.loads(capsys.readouterr().out)
    assert data["healthy"] is False and data["clusters"]["primary"]["down"] == [1]
    assert data["clusters"]["dr"]["healthy"] is True
