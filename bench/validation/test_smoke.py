"""Smoke tests of the benchmark code itself (not a timed test; not under tests/, run explicitly):

    python -m pytest bench/validation/test_smoke.py -q

The baseline's comparison must find each fault it claims to check (no Kafka needed), and the whole
benchmark must run end to end at a tiny size, leave no process behind and write its results.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.validation import baseline, load

ROOT = Path(__file__).resolve().parents[2]


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


@pytest.mark.integration
def test_benchmark_end_to_end_tiny(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "validation" / "run.py"),
            "--sizes",
            "2000",
            "--repeats",
            "1",
            "--partitions",
            "4",
            "--out-dir",
            str(tmp_path),
            "--name",
            "smoke",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    [result] = tmp_path.glob("smoke-*.json")
    summary = json.loads(result.read_text())["summary"]["2000"]
    assert summary["all_passed"] and summary["runs"] == 1
    assert summary["spark_driver_jvm_peak_rss_mib"] > 0 and summary["baseline_peak_rss_mib"] > 0
    assert list(tmp_path.glob("smoke-*.md"))
