"""Failover I/O and CLI: flow resolution, the failback-plan command, offset commits checked per partition."""

from __future__ import annotations

from typing import Any

import pytest

from components.ops import failover as fo
from components.ops.errors import OpsError
from tests.unit.ops.helpers import outputs


def test_resolve_flow_by_clusters_and_errors_name_the_choices() -> None:
    out = outputs()
    assert fo.resolve_flow(out, "primary", "dr", None) == "primary->dr"
    with pytest.raises(OpsError, match=r"no enabled flow replicates dr -> primary .*primary->dr \(primary->dr\)"):
        fo.resolve_flow(out, "dr", "primary", None)
    with pytest.raises(OpsError, match="replicates primary -> dr, not dr -> primary"):
        fo.resolve_flow(out, "dr", "primary", "primary->dr")


def test_failback_plan_cli_prints_numbered_steps(tmp_path: Any, capsys: Any) -> None:
    import json

    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs().to_json()))
    code = fo.main(["--outputs", str(path), "--failed", "primary", "--to", "dr", "--failback-plan"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("Failback plan: move producers and consumers from dr back to primary")
    assert "\n1. Keep producers and consumers on dr." in out and "\n9. " in out


class _FakeAdmin:
    """alter_consumer_group_offsets answering with scripted partition errors, then success."""

    def __init__(self, *answers: list[Any]) -> None:
        self.answers = list(answers)
        self.calls = 0

    def alter_consumer_group_offsets(self, request: list[Any], request_timeout: float = 0) -> dict[str, Any]:
        from concurrent.futures import Future
        from types import SimpleNamespace

        self.calls += 1
        errors = self.answers.pop(0) if self.answers else []
        tps = [SimpleNamespace(topic=tp.topic, partition=tp.partition, error=e) for tp, e in zip(
            request[0].topic_partitions, errors or [None] * len(request[0].topic_partitions), strict=True)]  # fmt: skip
        future: Future[Any] = Future()
        future.set_result(SimpleNamespace(topic_partitions=tps))
        return {request[0].group_id: future}


def test_commit_offsets_retries_a_loading_coordinator(monkeypatch: pytest.MonkeyPatch) -> None:
    from confluent_kafka import TopicPartition

    monkeypatch.setattr(fo.time, "sleep", lambda _s: None)
    admin = _FakeAdmin(["KafkaError{code=COORDINATOR_LOAD_IN_PROGRESS}", None], [])
    fo.commit_offsets(admin, "g", [TopicPartition("primary.orders", 0, 5), TopicPartition("primary.orders", 1, 7)], 5)
    assert admin.calls == 2


def test_commit_offsets_raises_partition_errors_that_do_not_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    from confluent_kafka import TopicPartition

    admin = _FakeAdmin(["KafkaError{code=GROUP_AUTHORIZATION_FAILED}"])
    with pytest.raises(OpsError, match=r"group g failed on primary.orders-0: .*GROUP_AUTHORIZATION_FAILED"):
        fo.commit_offsets(admin, "g", [TopicPartition("primary.orders", 0, 5)], 5)


def test_a_cluster_is_refused_everywhere_only_when_no_bootstrap_address_accepts() -> None:
    import socket

    with socket.socket() as listening, socket.socket() as closed:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        closed.bind(("127.0.0.1", 0))  # bound, never listening: its port refuses connections
        up = f"127.0.0.1:{listening.getsockname()[1]}"
        down = f"127.0.0.1:{closed.getsockname()[1]}"
        assert fo.refused_everywhere(f"{down},{down}", tries=2, pause_s=0.0)
        assert not fo.refused_everywhere(f"{down},{up}", tries=2, pause_s=0.0)
        assert not fo.refused_everywhere(up, tries=1)
    # An address it cannot try says nothing about the cluster: the metadata request decides.
    assert not fo.refused_everywhere("127.0.0.1:not-a-port", tries=1)
