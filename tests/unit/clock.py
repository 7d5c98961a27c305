"""A clock the code under test reads and its waits move: no test sleeps."""

from __future__ import annotations


class Clock:
    """`clock()` is now; `clock.pause(s)` (where the code sleeps) moves it on by s seconds."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def pause(self, seconds: float) -> None:
        self.now += seconds
