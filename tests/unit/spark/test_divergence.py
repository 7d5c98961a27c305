"""spark/divergence.py: which records of a pair's passive side are read, and the verdict naming them."""

from __future__ import annotations

from components.outputs.contract import PairExport, PartitionCut, StackExports
from spark.divergence import SHOWN, merged, ranges, verdict
from spark.report import Status

CUT = (PartitionCut("orders", 0, 250, 250), PartitionCut("orders", 1, 254, 254))
PAIR = PairExport("primary<->dr", "dr", {"primary->dr": CUT})


def test_the_passive_side_and_its_standby_cut_come_from_the_active_side() -> None:
    assert PAIR.passive == "primary" and PAIR.standby_cut == CUT
    assert PairExport("primary<->dr", "primary", {"primary->dr": CUT}).standby_cut == ()


def test_only_partitions_past_their_cut_are_read() -> None:
    assert ranges(PAIR, {("orders", 0): 253, ("orders", 1): 254}) == {"orders": {0: (250, 253)}}
    assert ranges(PAIR, {}) == {}


def test_the_verdict_names_each_record_and_the_key_to_decide_with() -> None:
    check = verdict(PAIR, [("orders", 0, 251, "late-1"), ("orders", 0, 250, "late-0")])
    assert check.status is Status.FAIL
    assert "2 record(s) on primary past the cut of primary->dr never replicated" in check.detail
    assert "orders p0@250 key=late-0; orders p0@251 key=late-1" in check.detail
    assert "mm2:failover.primary<->dr.divergence" in check.detail
    many = verdict(PAIR, [("orders", 0, 250 + i, f"k{i}") for i in range(SHOWN + 3)])
    assert many.detail.count("key=") == SHOWN and "and 3 more" in many.detail
    assert verdict(PAIR, []).status is Status.PASS


def test_the_outputs_contract_reads_the_pairs() -> None:
    data = {
        "clusters": {"primary": {"bootstrap": "h:1"}, "dr": {"bootstrap": "h:2"}},
        "flows": {},
        "failover": {
            "primary<->dr": {
                "active": "dr",
                "cuts": {
                    "primary->dr": [
                        {"topic": "orders", "partition": 1, "sourceEnd": 254, "remoteEnd": 254},
                        {"topic": "orders", "partition": 0, "sourceEnd": 250, "remoteEnd": 250},
                    ]
                },
            }
        },
    }
    exports = StackExports.from_json(data)
    assert exports.pairs["primary<->dr"] == PAIR
    assert StackExports.from_json(exports.to_json()).pairs == exports.pairs


def test_one_check_for_the_stack_fails_if_any_pair_diverged() -> None:
    other = PairExport("a<->b", "a", {})
    passed = verdict(other, [])
    failed = verdict(PAIR, [("orders", 0, 250, "late-0")])
    assert merged([]) is None
    assert merged([passed]) == passed
    both = merged([passed, failed])
    assert both is not None and both.status is Status.FAIL and both.detail == failed.detail
