"""Decoding MM2's committed source offsets from a Connect worker group's offsets topic."""

from __future__ import annotations

import json

from components.mm2_records import decode_source_offset

CONNECTOR = "mm2-primary-to-dr-source"


def key(connector: str = CONNECTOR, cluster: str = "primary", topic: str = "orders", partition: int = 3) -> bytes:
    # Connect's JsonConverter (schemas off) as the worker writes it: [connector, source partition]
    return json.dumps([connector, {"cluster": cluster, "partition": partition, "topic": topic}]).encode()


def test_a_committed_offset_of_the_flows_source_connector() -> None:
    assert decode_source_offset(key(), b'{"offset":4711}', CONNECTOR, "primary") == (("orders", 3), 4711)


def test_a_tombstone_resets_the_offset() -> None:
    assert decode_source_offset(key(), None, CONNECTOR, "primary") == (("orders", 3), None)


def test_other_connectors_clusters_and_garbage_are_ignored() -> None:
    value = b'{"offset":1}'
    assert decode_source_offset(key(connector="mm2-dr-to-primary-source"), value, CONNECTOR, "primary") is None
    assert decode_source_offset(key(cluster="dr"), value, CONNECTOR, "primary") is None
    # The checkpoint connector's source partitions carry no topic/partition of the flow's data.
    ckpt = json.dumps([CONNECTOR, {"group": "app"}]).encode()
    assert decode_source_offset(ckpt, value, CONNECTOR, "primary") is None
    assert decode_source_offset(b"not json", value, CONNECTOR, "primary") is None
    assert decode_source_offset(None, value, CONNECTOR, "primary") is None
    assert decode_source_offset(key(), b"[1]", CONNECTOR, "primary") is None
    assert decode_source_offset(key(), b'{"offset":"12"}', CONNECTOR, "primary") is None
