"""Facts every platform derives from the topology: KRaft cluster ids."""

from __future__ import annotations

from components.platform.topology_facts import kraft_cluster_id


def test_kraft_cluster_ids_never_start_with_a_dash_and_are_distinct() -> None:
    ids = [kraft_cluster_id(f"itest-{i:04x}", alias) for i in range(400) for alias in ("primary", "dr")]
    assert not [i for i in ids if i.startswith("-")]
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 22 for i in ids)


def test_kraft_cluster_ids_are_pinned_across_releases() -> None:
    # Literal ids, computed once: every deployed cluster's storage was formatted under the id this
    # function gave it, and a changed id replaces its brokers (cluster_id is a replace key of the
    # local process; Kubernetes and Docker format under it too), i.e. new empty storage for every
    # existing deployment. A value here that needs changing is a bug in the change, not the test.
    assert kraft_cluster_id("dev", "primary") == "PAulUeRFKtLmR7mZH5QxRg"
    assert kraft_cluster_id("dev", "dr") == "Qijc5y5dK_KzpyV9vkENBg"
    assert kraft_cluster_id("prod", "primary") == "zSWkHMekiA4uuo7qpuDNdA"
    # The first digest of this one starts with '-': the id comes from the retry, pinned as well.
    assert kraft_cluster_id("itest-0000", "dr") == "blw84KbHqtCC9dmqh6stqg"
