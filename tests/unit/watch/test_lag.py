"""Lag and the data-loss sentinel (components/watch/lag.py): pure readings in, lag and expiries out."""

from __future__ import annotations

import re

from components.watch.lag import (
    DELETED,
    RECREATED,
    Expiry,
    FlowLag,
    Memory,
    Reading,
    Recreation,
    SentinelState,
    expiries_document,
    expiries_from_document,
    exposition,
    flow_findings,
    merged,
    observe,
    observe_flow,
    state_document,
    state_from_document,
)

FLOW = "primary->dr"
NOW = 1_000_000


def reading(log_start: int = 0, end: int = 100, committed: int | None = 99, **kw: object) -> Reading:
    return Reading("orders", 0, log_start, end, committed, **kw)  # type: ignore[arg-type]


def test_caught_up_partition_is_not_behind() -> None:
    lag, memory, expired = observe(FLOW, reading(), None, NOW)
    assert (lag.records, lag.seconds, expired) == (0, 0.0, [])
    assert memory.committed == 99 and memory.end == 100


def test_records_and_seconds_behind_count_from_the_next_offset() -> None:
    lag, _m, _e = observe(FLOW, reading(end=150, committed=99, oldest_ms=NOW - 42_000), None, NOW)
    assert lag.records == 50  # offsets 100..149 not copied
    assert lag.seconds == 42.0


def test_nothing_committed_yet_counts_from_the_log_start() -> None:
    lag, _m, expired = observe(FLOW, reading(log_start=10, end=30, committed=None), None, NOW)
    assert lag.records == 20
    assert expired == []  # MM2 never started on it: retention before replication began is not a loss


def test_retention_passing_the_next_offset_is_counted_once() -> None:
    state = SentinelState({})
    state, lags, found = observe_flow(state, FLOW, [reading(log_start=0, end=500, committed=99)], NOW)
    assert found == []
    state, lags, found = observe_flow(state, FLOW, [reading(log_start=300, end=500, committed=99)], NOW + 1)
    assert [(e.first, e.end, e.count, e.reason) for e in found] == [(100, 300, 200, DELETED)]
    assert lags[0].records == 200  # 300..499 left to copy
    # The same reading again, and a later one deleting further: only the new offsets count.
    state, _l, found = observe_flow(state, FLOW, [reading(log_start=300, end=500, committed=99)], NOW + 2)
    assert found == []
    state, _l, found = observe_flow(state, FLOW, [reading(log_start=350, end=500, committed=99)], NOW + 3)
    assert [(e.first, e.end) for e in found] == [(300, 350)]
    assert sum(e.count for e in state.expiries) == 250


def test_mm2_resuming_past_the_gap_keeps_the_count_and_finds_no_more() -> None:
    state, _l, _f = observe_flow(SentinelState({}), FLOW, [reading(log_start=0, end=500, committed=99)], NOW)
    state, _l, _f = observe_flow(state, FLOW, [reading(log_start=300, end=500, committed=99)], NOW)
    state, lags, found = observe_flow(state, FLOW, [reading(log_start=300, end=500, committed=499)], NOW)
    assert found == [] and lags[0].records == 0
    assert [e.count for e in state.expiries] == [200]


def test_a_recreated_topic_counts_what_mm2_had_not_copied_and_starts_over() -> None:
    state, _l, _f = observe_flow(SentinelState({}), FLOW, [reading(end=500, committed=449, topic_id="A")], NOW)
    # Deleted and created again: a new ID, offsets from 0; MM2's committed offset is the old topic's.
    state, lags, found = observe_flow(state, FLOW, [reading(end=20, committed=449, topic_id="B")], NOW + 5)
    assert [(e.first, e.end, e.count, e.reason) for e in found] == [(450, 500, 50, RECREATED)]
    assert state.recreations == {(FLOW, "orders"): 1}
    assert state.recreated_at == {(FLOW, "orders"): NOW + 5}  # when it was found: what an acknowledgement covers
    assert lags[0].records == 20  # the new topic from its start, not "MM2 is past the end"
    # MM2 commits for the new topic: normal lag again, no second re-creation.
    state, lags, found = observe_flow(state, FLOW, [reading(end=25, committed=19, topic_id="B")], NOW)
    assert found == [] and lags[0].records == 5 and state.recreations == {(FLOW, "orders"): 1}


def test_without_topic_ids_an_end_going_back_is_a_recreation() -> None:
    first = Memory(topic_id=None, end=500, committed=499)
    _lag, memory, found = observe(FLOW, reading(end=3, committed=499), first, NOW)
    assert found == []  # MM2 had copied everything of the old topic
    assert memory.stale_committed == 499


def test_state_survives_a_restart_through_its_document() -> None:
    state, _l, _f = observe_flow(SentinelState({}), FLOW, [reading(log_start=0, end=500, committed=99)], NOW)
    state, _l, _f = observe_flow(state, FLOW, [reading(log_start=300, end=500, committed=99)], NOW)
    again = state_from_document(state_document(state))
    assert again == state
    _s, _l, found = observe_flow(again, FLOW, [reading(log_start=300, end=500, committed=99)], NOW)
    assert found == []  # not counted twice after the restart


def test_a_recreation_keeps_when_it_was_found_across_restarts() -> None:
    state, _l, _f = observe_flow(SentinelState({}), FLOW, [reading(end=500, committed=449, topic_id="A")], NOW)
    state, _l, _f = observe_flow(state, FLOW, [reading(end=20, committed=449, topic_id="B")], NOW + 7)
    doc = state_document(state)
    assert doc["version"] == 1 and doc["recreations"] == [
        {"flow": FLOW, "topic": "orders", "count": 1, "lastAtMs": NOW + 7}
    ]
    assert state_from_document(doc, loaded_at_ms=NOW + 99) == state
    assert expiries_document(state)["recreated"] == doc["recreations"]


def test_a_state_file_kept_before_recreation_times_reads_them_as_found_when_loaded() -> None:
    # Written by an exporter that kept no lastAtMs: the re-creation was found by the load at the latest.
    older = {"version": 1, "partitions": [], "expiries": [], "recreations": [{"flow": FLOW, "topic": "o", "count": 2}]}
    assert state_from_document(older, loaded_at_ms=NOW).recreated_at == {(FLOW, "o"): NOW}
    unknown = state_from_document(older)
    assert unknown.recreations == {(FLOW, "o"): 2} and unknown.recreated_at == {}
    assert expiries_document(unknown)["recreated"] == [{"flow": FLOW, "topic": "o", "count": 2, "lastAtMs": None}]


def test_flow_findings_split_by_the_acknowledgement_and_merge_only_within_each_side() -> None:
    state = SentinelState(
        {},
        (
            Expiry(FLOW, "orders", 0, 100, 180, DELETED, NOW),
            Expiry(FLOW, "orders", 0, 180, 300, DELETED, NOW + 1),  # follows on, one ms later
            Expiry(FLOW, "orders", 0, 300, 310, DELETED, NOW + 2),
            Expiry("other->dr", "orders", 0, 1, 9, DELETED, NOW),
        ),
        {(FLOW, "orders"): 1, (FLOW, "payments"): 0},
        {(FLOW, "orders"): NOW + 2},
    )
    doc = expiries_document(state)
    covered = flow_findings(doc, FLOW, NOW)
    assert [(e.first, e.end, covered.acknowledged(e)) for e in covered.expired] == [(100, 180, True), (180, 310, False)]
    assert [(e.first, e.end) for e in covered.open_expired] == [(180, 310)]
    assert covered.recreated == (Recreation(FLOW, "orders", 1, NOW + 2),) and covered.open
    everything = flow_findings(doc, FLOW, NOW + 2)
    assert [(e.first, e.end) for e in everything.expired] == [(100, 310)] and not everything.open
    assert everything.found and everything.open_recreated == ()
    nothing = flow_findings(doc, FLOW)
    assert nothing.open_expired == nothing.expired and len(nothing.open_recreated) == 1


def test_unknown_state_versions_start_empty() -> None:
    assert state_from_document({"version": 99, "partitions": [{"x": 1}]}) == SentinelState({})
    assert state_from_document(None) == SentinelState({})


def test_expired_document_round_trips() -> None:
    state, _l, _f = observe_flow(SentinelState({}), FLOW, [reading(log_start=0, end=500, committed=99)], NOW)
    state, _l, _f = observe_flow(state, FLOW, [reading(log_start=300, end=500, committed=99)], NOW)
    doc = expiries_document(state)
    assert doc["expired"][0]["count"] == 200
    assert expiries_from_document(doc) == list(state.expiries)
    assert (
        "orders[0] offsets 100..299: 200 record(s) deleted from the source by retention or a delete-records call"
        in state.expiries[0].describe()
    )


def _sample(text: str, name: str, **labels: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_a_deletion_is_not_pinned_on_retention_and_former_retention_findings_read_as_deletions() -> None:
    # A log start past MM2's position is all the exporter sees: retention and a delete-records call
    # look the same, so the finding says both, with both fixes, never "by retention" alone.
    state, _l, found = observe_flow(SentinelState({}), FLOW, [reading(log_start=0, end=500, committed=99)], NOW)
    state, _l, found = observe_flow(state, FLOW, [reading(log_start=300, end=500, committed=99)], NOW)
    assert [e.reason for e in found] == ["deleted"]
    assert "by retention or a delete-records call" in found[0].describe()
    # Exporters before wrote `retention`, in state files and /expired: read as the same finding.
    former = {**found[0].to_json(), "reason": "retention"}
    assert expiries_from_document({"expired": [former]}) == found
    restored = state_from_document({**state_document(state), "expiries": [former]})
    assert 'reason="deleted"} 200' in exposition([FlowLag(FLOW, "primary", "dr", 60)], restored)


def test_exposition_serves_partition_flow_and_sentinel_series() -> None:
    readings = [
        Reading("orders", 0, 0, 150, 99, oldest_ms=NOW - 5_000),
        Reading("orders", 1, 0, 10, 9),
    ]
    state, lags, _f = observe_flow(SentinelState({}), FLOW, readings, NOW)
    flow = FlowLag(FLOW, "primary", "dr", 300, tuple(lags), NOW / 1000)
    text = exposition([flow], state)
    assert _sample(text, "mm2_partition_lag_records", topic="orders", partition="0") == 50
    assert _sample(text, "mm2_partition_lag_seconds", topic="orders", partition="0") == 5
    assert _sample(text, "mm2_flow_lag_records", flow=FLOW) == 50
    assert _sample(text, "mm2_flow_rpo_seconds", flow=FLOW) == 300
    # Every known partition's counter from 0, so an alert sees the first expiry as an increase.
    assert _sample(text, "mm2_expired_records_total", partition="1", reason="deleted") == 0
    assert _sample(text, "mm2_source_topic_recreations_total", topic="orders") == 0
    assert "# TYPE mm2_expired_records_total counter" in text
    # Every sample line is valid exposition: name{labels} value.
    sample = re.compile(r'^[a-z0-9_]+\{([a-z_]+="[^"]*",?)+\} -?[0-9.]+$')
    assert all(sample.match(line) for line in text.splitlines() if not line.startswith("#")), text


def test_label_values_are_escaped() -> None:
    flow = FlowLag('a"b->c', "a", "c", 60)
    text = exposition([flow], SentinelState({}))
    assert 'flow="a\\"b->c"' in text


def test_ranges_one_reading_after_another_merge_into_one_with_the_first_time() -> None:
    found = [
        Expiry("a->b", "o", 0, 200, 350, DELETED, 20),
        Expiry("a->b", "o", 0, 100, 200, DELETED, 10),
        Expiry("a->b", "o", 0, 400, 410, DELETED, 30),  # a gap: MM2 copied 350..399
        Expiry("a->b", "o", 1, 350, 360, DELETED, 20),  # another partition
        Expiry("a->b", "o", 0, 410, 420, RECREATED, 40),  # another reason
        Expiry("b->a", "o", 0, 350, 360, DELETED, 20),  # another flow
    ]
    assert [(e.flow, e.partition, e.first, e.end, e.reason, e.at_ms) for e in merged(found)] == [
        ("a->b", 0, 100, 350, DELETED, 10),
        ("a->b", 0, 400, 410, DELETED, 30),
        ("a->b", 0, 410, 420, RECREATED, 40),
        ("a->b", 1, 350, 360, DELETED, 20),
        ("b->a", 0, 350, 360, DELETED, 20),
    ]
    assert merged(found)[0].count == 250
