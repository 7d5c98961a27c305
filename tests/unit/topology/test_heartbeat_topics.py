"""The remote heartbeat topics a worker group's flows should keep delivering (the alert rules and
the Spark stage read them)."""

from __future__ import annotations

from components.topology.connectors import heartbeat_topics
from tests.unit.platform.helpers import SASL_KUBERNETES, topology


def test_one_way_flow_expects_no_replicated_heartbeats() -> None:
    config = {**SASL_KUBERNETES, "flows": {"a->b": {"workerGroup": "mm2", "topics": ["orders"]}}}
    topo = topology(config)
    assert heartbeat_topics(topo, topo.worker_groups["mm2"]) == ()


def test_active_active_flows_expect_each_others_heartbeats() -> None:
    topo = topology(SASL_KUBERNETES)
    assert heartbeat_topics(topo, topo.worker_groups["mm2"]) == (("b", "a.heartbeats"), ("a", "b.heartbeats"))
