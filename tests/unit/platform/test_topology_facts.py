"""Facts every platform derives from the topology: KRaft cluster ids."""

from __future__ import annotations

from components.platform.topology_facts import kraft_cluster_id


def test_kraft_cluster_ids_never_start_with_a_dash_and_are_stable() -> None:
    ids = [kraft_cluster_id(f"itest-{i:04x}", alias) for i in range(400) for alias in ("primary", "dr")]
    assert not [i for i in ids if i.startswith("-")]
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 22 for i in ids)
    # Stable: the same stack and alias always give the same id (storage is never re-formatted).
    assert kraft_cluster_id("dev", "primary") == kraft_cluster_id("dev", "primary")
