"""Sampling who answers during a rolling restart: every target asked at once, over and over, so
that each row of samples is one moment however long a single answer takes.

The worker roll (test_rolling) asks Connect workers `GET /`, the broker roll (test_broker_rolling)
asks brokers ApiVersions; both count a target down when it refuses, fails or is slower than PROBE_S.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

Target = TypeVar("Target")

# A target that has not answered within this is down; refused or closed is down at once. With 2 s
# a worker merely slow on two cores shared by two pytest workers and their JVMs counted as down;
# the slowest broker answer seen at load average 21 took 0.38 s, and a 1 s bound would count a
# slow broker down and, with the next one restarting, two down at once.
PROBE_S = 5.0


def sample_at_once(
    probe: Callable[[Target], float | None],
    targets: Sequence[Target],
    stop: threading.Event,
    samples: list[list[float | None]],
    every_s: float = 0.2,
) -> None:
    """Every `every_s` until `stop`: one row in `samples` with each target's answer time (None:
    down), all probed at once in a thread pool."""
    with ThreadPoolExecutor(max_workers=len(targets)) as pool:
        while not stop.is_set():
            samples.append(list(pool.map(probe, targets)))
            stop.wait(every_s)
