"""Facts every platform derives from the topology: KRaft cluster ids, heartbeat topics."""

from __future__ import annotations

from components.platform.topology_facts import heartbeat_topics, kraft_cluster_id

from .helpers import SASL_KUBERNETES, topology


def test_one_way_flow_expects_no_replicated_heartbeats() -> None:
    config = {**SASL_KUBERNETES, "flows": {"a->b": {"workerGroup": "mm2", "topics": ["orders"]}}}
    topo = topology(config)
    assert heartbeat_topics(topo, topo.worker_groups["mm2"]) == ()


def test_kraft_cluster_ids_never_start_with_a_dash_and_are_stable() -> None:
    ids = [kraft_cluster_id(f"itest-{i:04x}", alias) for i in range(400) for alias in ("primary", "dr")]
    assert not [i for i in ids if i.startswith("-")]
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 22 for i in ids)
    # Stable: the same stack and alias always give the same id (storage is never re-formatted).
    assert kraft_cluster_id("dev", "primary") == kraft_cluster_id("dev", "primary")
