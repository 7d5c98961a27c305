"""The consistent cut and the bounded wait for the target to cover it.

The cut is every source partition's end offset when the stage starts; everything before it must
be on the target. A partition is done waiting when one of these holds:
- **caught up** (`records_short_of_cut` is 0): an offset sync with upstream offset >= cut-1 proves MM2
  wrote the last record before the cut; otherwise the newest sync (u, d) anchors a count: the
  target must hold at least as many records after d as the source holds after u, up to the cut;
  with no sync at all, whole-partition record counts are compared;
- **settled**: MM2 has consumed the source up to the cut (the MirrorSourceConnector's committed
  source offset, which Connect writes only once the target acknowledged the records, is >= cut-1)
  and the target partition's end offset has not moved for the quiet window: whatever is still
  missing is lost, not late, and waiting longer cannot bring it;
- **quiet** (only when MM2's progress cannot be read at all: no offsets topic of the worker group):
  the target partition's end offset has not moved for the quiet window.
The wait ends when every partition is done, or at the timeout. Counts can be fooled by
duplicates (at-least-once redelivery), which is why the record-level checks afterwards decide; the
wait only avoids validating a target that is still copying.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum

Range = tuple[int, int]  # [first offset, end offset)
Key = tuple[str, int]  # (source topic, partition)


def records_short_of_cut(cut: Range, target: Range | None, sync: tuple[int, int] | None) -> int:
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


class Ending(str, Enum):
    """Why a partition (and the wait) stopped waiting; later members are weaker evidence."""

    CAUGHT_UP = "caught up"
    SETTLED = "settled"  # MM2 consumed up to the cut, the target stopped moving: the rest is lost
    QUIET = "quiet"  # MM2's progress unreadable, the target stopped moving: lag or loss, unknown
    TIMEOUT = "timeout"


_STRENGTH = list(Ending)


def partition_ending(
    cut: Range, lag: int, consumed: int | None, quiet_for_s: float, quiet_s: float, observable: bool
) -> Ending | None:
    """Whether one partition is done waiting, and on what evidence (None: keep waiting).

    `consumed`: MM2's committed source offset for the partition (the last record it processed),
    None when it has none; `observable`: whether MM2's progress can be read at all; `quiet_for_s`:
    how long the target partition's end offset has not moved.
    """
    if lag == 0:
        return Ending.CAUGHT_UP
    if quiet_for_s < quiet_s:
        return None
    if not observable:
        return Ending.QUIET
    if consumed is not None and consumed >= cut[1] - 1:
        return Ending.SETTLED
    return None


def weakest(endings: list[Ending]) -> Ending:
    """The wait's ending: that of its least proven partition (caught up when there is none)."""
    return max(endings, key=_STRENGTH.index, default=Ending.CAUGHT_UP)


class QuietClock:
    """How long each target partition's end offset has stayed the same (pure: times are passed in)."""

    def __init__(self) -> None:
        self._seen: dict[Key, tuple[int | None, float]] = {}

    def observe(self, now: float, ends: Mapping[Key, int | None]) -> dict[Key, float]:
        out = {}
        for key, end in ends.items():
            last = self._seen.get(key)
            if last is None or last[0] != end:
                self._seen[key] = (end, now)
            out[key] = now - self._seen[key][1]
        return out


@dataclass
class CatchUp:
    lag: dict[str, dict[int, int]]  # source topic -> partition -> records not yet on the target
    waited_s: float
    ending: Ending = Ending.CAUGHT_UP
    # source topic -> partition -> its ending; partitions still waiting at the timeout are absent
    endings: dict[str, dict[int, Ending]] = field(default_factory=dict)

    @property
    def caught_up(self) -> bool:
        return all(v == 0 for parts in self.lag.values() for v in parts.values())

    def total(self) -> int:
        return sum(v for parts in self.lag.values() for v in parts.values())


def poll_once(
    cuts: Mapping[str, Mapping[int, Range]],
    targets: Mapping[str, Mapping[int, Range] | None],
    syncs: Mapping[Key, tuple[int, int]],
    consumed: Mapping[Key, int] | None,
    quiet_for: Mapping[Key, float],
    quiet_s: float,
) -> tuple[dict[str, dict[int, int]], dict[str, dict[int, Ending]]]:
    """One look at every partition: (lag, endings of the partitions done waiting). Pure.

    A settled partition's remaining count is not lag (MM2 has consumed past it): it is 0, and the
    record-level checks name the records as missing.
    """
    lag: dict[str, dict[int, int]] = {}
    endings: dict[str, dict[int, Ending]] = {}
    for topic, parts in cuts.items():
        lag[topic], endings[topic] = {}, {}
        for p, r in parts.items():
            n = records_short_of_cut(r, (targets.get(topic) or {}).get(p), syncs.get((topic, p)))
            got = partition_ending(
                r, n, (consumed or {}).get((topic, p)), quiet_for.get((topic, p), 0.0), quiet_s, consumed is not None
            )
            lag[topic][p] = 0 if got is Ending.SETTLED else n
            if got is not None:
                endings[topic][p] = got
    return lag, endings


def wait_for_catch_up(
    cuts: Mapping[str, Mapping[int, Range]],
    target_ranges: Callable[[], Mapping[str, Mapping[int, Range] | None]],
    latest_syncs: Callable[[], Mapping[Key, tuple[int, int]]],
    timeout_s: float,
    label: str,
    poll_s: float = 1.0,
    consumed: Callable[[], Mapping[Key, int] | None] = lambda: None,
    quiet_s: float = 5.0,
) -> CatchUp:
    """Poll until every partition is done waiting (`poll_once`) or `timeout_s` passes.

    `consumed` returns MM2's committed source offsets, or None when they cannot be read at all.
    """
    started = time.monotonic()
    last_print = 0.0
    clock = QuietClock()
    n_parts = sum(len(parts) for parts in cuts.values())
    while True:
        targets = target_ranges()
        now = time.monotonic()
        ends = {(t, p): ((targets.get(t) or {}).get(p) or (0, None))[1] for t, parts in cuts.items() for p in parts}
        lag, endings = poll_once(cuts, targets, latest_syncs(), consumed(), clock.observe(now, ends), quiet_s)
        result = CatchUp(lag, now - started, weakest([e for ps in endings.values() for e in ps.values()]), endings)
        done = sum(len(ps) for ps in endings.values())
        if done == n_parts:
            return result
        if result.waited_s >= timeout_s:
            result.ending = Ending.TIMEOUT
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
