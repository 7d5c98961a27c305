"""The benchmark's baseline comparator finds each fault it claims to check (no Kafka needed).

The end-to-end run of the benchmark at a tiny size is a script, not a test: bench/validation/smoke.py.
"""

from __future__ import annotations

import pytest

from bench.validation import baseline, load


class FakeStream:
    """A partition's records in batches of 3, like PartitionStream."""

    def __init__(self, records: list[baseline.Rec]) -> None:
        self.records, self.next_offset, self.done = list(records), 0, not records

    def read(self) -> list[baseline.Rec]:
        out = self.records[self.next_offset : self.next_offset + 3]
        self.next_offset += len(out)
        self.done = self.next_offset >= len(self.records)
        return out


def records(n: int) -> list[baseline.Rec]:
    pool = load.value_pool()
    return [load.record(pool, 0, i, 1_000) for i in range(n)]


def compare(src: list[baseline.Rec], tgt: list[baseline.Rec]) -> baseline.PartitionResult:
    res = baseline.PartitionResult(0)
    baseline.compare_partition(FakeStream(src), FakeStream(tgt), res, window=5)  # type: ignore[arg-type]
    return res


def test_correct_copy_matches_everything() -> None:
    src = records(20)
    res = compare(src, list(src))
    assert (res.matched, res.missing, res.extra, res.modified) == (20, 0, 0, 0)


def test_missing_record_is_found() -> None:
    src = records(20)
    res = compare(src, src[:8] + src[9:])
    assert (res.matched, res.missing, res.extra, res.modified) == (19, 1, 0, 0)
    assert res.examples == ["missing src@8..8"]


@pytest.mark.parametrize(("index", "field"), [(0, "key"), (1, "value"), (2, "headers"), (3, "timestamp")])
def test_modified_field_is_named(index: int, field: str) -> None:
    src = records(20)
    tgt = list(src)
    k, v, h, ts = tgt[11]
    changed = [k, v, h, ts]
    changed[index] = {0: b"other-key", 1: b"tampered", 2: [("trace-id", b"x")], 3: ts + 1}[index]
    tgt[11] = tuple(changed)  # type: ignore[assignment]
    res = compare(src, tgt)
    assert (res.matched, res.missing, res.extra, res.modified) == (19, 0, 0, 1)
    assert res.modified_fields == {field: 1}


def test_duplicate_is_an_extra_not_a_loss() -> None:
    src = records(20)
    res = compare(src, [*src[:6], src[5], *src[6:]])
    assert (res.matched, res.missing, res.extra, res.modified) == (20, 0, 1, 0)


def test_truncated_target_is_incomplete() -> None:
    src = records(20)
    res = compare(src, src[:15])
    assert (res.matched, res.missing) == (15, 5)
