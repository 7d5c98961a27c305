"""The data-loss sentinel's expiries as the readers of /expired show them (components/watch/lag.py)."""

from __future__ import annotations

from components.watch.lag import RECREATED, RETENTION, Expiry, expiries_document, expiries_from_document, merged


def test_ranges_one_reading_after_another_merge_into_one_with_the_first_time() -> None:
    found = [
        Expiry("a->b", "o", 0, 200, 350, RETENTION, 20),
        Expiry("a->b", "o", 0, 100, 200, RETENTION, 10),
        Expiry("a->b", "o", 0, 400, 410, RETENTION, 30),  # a gap: MM2 copied 350..399
        Expiry("a->b", "o", 1, 350, 360, RETENTION, 20),  # another partition
        Expiry("a->b", "o", 0, 410, 420, RECREATED, 40),  # another reason
        Expiry("b->a", "o", 0, 350, 360, RETENTION, 20),  # another flow
    ]
    assert [(e.flow, e.partition, e.first, e.end, e.reason, e.at_ms) for e in merged(found)] == [
        ("a->b", 0, 100, 350, RETENTION, 10),
        ("a->b", 0, 400, 410, RETENTION, 30),
        ("a->b", 0, 410, 420, RECREATED, 40),
        ("a->b", 1, 350, 360, RETENTION, 20),
        ("b->a", 0, 350, 360, RETENTION, 20),
    ]
    assert merged(found)[0].count == 250


def test_the_expired_document_round_trips() -> None:
    from components.watch.lag import SentinelState

    state = SentinelState({}, (Expiry("a->b", "o", 2, 5, 9, RETENTION, 7),), {("a->b", "o"): 1})
    doc = expiries_document(state)
    assert doc["expired"][0]["count"] == 4 and doc["recreated"] == [{"flow": "a->b", "topic": "o", "count": 1}]
    assert expiries_from_document(doc) == list(state.expiries)
