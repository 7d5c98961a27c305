"""The consistent cut and the bounded wait for the target to cover it.

The cut is every source partition's end offset when the stage starts; everything before it must
be on the target. The wait ends when each remote partition provably holds the cut:
- an offset sync with upstream offset >= cut-1 proves MM2 wrote the last record before the cut;
- otherwise the newest sync (u, d) anchors a count: the target must hold at least as many
  records after d as the source holds after u, up to the cut;
- with no sync at all, whole-partition record counts are compared.
Counts can be fooled by duplicates (at-least-once redelivery), which is why the record-level
checks afterwards decide; the wait only avoids validating a target that is still copying.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

Range = tuple[int, int]  # [first offset, end offset)


def partition_lag(cut: Range, target: Range | None, sync: tuple[int, int] | None) -> int:
    """Records of the source range not yet provably on the target (0 = caught up)."""
    lo, hi = cut
    if hi <= lo:
        return 0
    if target is None:
        return hi - lo
    t_lo, t_hi = target
    if sync is not None:
        upstream, downstream = sync
        if upstream >= hi - 1:
            return 0
        if upstream >= lo:
            return max(0, ((hi - 1) - upstream) - ((t_hi - 1) - downstream))
    return max(0, (hi - lo) - (t_hi - t_lo))


@dataclass
class CatchUp:
    lag: dict[str, dict[int, int]]  # source topic -> partition -> remaining records
    waited_s: float

    @property
    def caught_up(self) -> bool:
        return all(v == 0 for parts in self.lag.values() for v in parts.values())

    def total(self) -> int:
        return sum(v for parts in self.lag.values() for v in parts.values())


def wait_for_catch_up(
    cuts: Mapping[str, Mapping[int, Range]],
    target_ranges: Callable[[], Mapping[str, Mapping[int, Range] | None]],
    latest_syncs: Callable[[], Mapping[tuple[str, int], tuple[int, int]]],
    timeout_s: float,
    label: str,
    poll_s: float = 1.0,
) -> CatchUp:
    """Poll until every partition has caught up or `timeout_s` passes; returns the last lag."""
    started = time.monotonic()
    last_print = 0.0
    while True:
        targets = target_ranges()
        syncs = latest_syncs()
        lag = {
            topic: {
                p: partition_lag(r, (targets.get(topic) or {}).get(p), syncs.get((topic, p))) for p, r in parts.items()
            }
            for topic, parts in cuts.items()
        }
        result = CatchUp(lag, time.monotonic() - started)
        if result.caught_up or result.waited_s >= timeout_s:
            return result
        if time.monotonic() - last_print > 5:
            print(
                f"  [{label}] waiting for the target to catch up: {result.total()} records behind "
                f"({result.waited_s:.0f}s of {timeout_s:.0f}s)",
                file=sys.stderr,
                flush=True,
            )
            last_print = time.monotonic()
        time.sleep(poll_s)
