"""Near misses: a key one or two typing slips away from a key the settings catalogue knows.

A free-form key outside the catalogue passes through to Connect, which judges it only once the
brokers and workers it needs are deployed. A key that close to a known one is a typo, not a
setting of some plugin, so the preview refuses it with the key it was meant to be. No two
catalogue keys are this close to each other (tests/unit/topology/test_near_miss.py), so the
suggestion is never ambiguous.

Pure: no pulumi, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

# Edits (insert, delete, substitute, swap two neighbours) that still count as a slip: one on
# short keys, where two edits reach unrelated words, two on longer ones.
SHORT_KEY = 8


def slips(a: str, b: str) -> int:
    """The optimal-string-alignment distance: edits turning `a` into `b`, a swap counting one."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[len(b)]


def near_miss(key: str, known: Iterable[str]) -> str | None:
    """The known key `key` was probably meant to be, or None when it is not a near miss."""
    allowed = 1 if len(key) < SHORT_KEY else 2
    best = min(((slips(key, k), k) for k in known if k != key), default=None)
    return best[1] if best is not None and 0 < best[0] <= allowed else None
