"""When the auto-restart watcher restarts a FAILED connector, and when it gives up: a pure planner.

The shape is Strimzi's (restart, then wait n*n+n units, n the restarts so far, capped), scaled
for MirrorMaker 2, where a FAILED source task means replication has stopped: a unit of 30 s
instead of Strimzi's minute, a cap of 30 min instead of 60.

- restart 1 comes `first_s` (5 s) after the failure is first seen: long enough for a second look
  (a status read mid-rebalance), short enough that replication resumes within seconds;
- restart n+1 comes unit*(n*n+n) after the failure is seen again: 60 s, 3 min, 6 min, 10 min,
  15 min, 21 min, 28 min, then every 30 min;
- after `max_restarts` restarts (if set) the watcher gives up and says so; a person restarts it
  (`bin/connectors restart`, or `pulumi up --refresh`, which restarts only what failed);
- once the connector has been healthy for `stable_s` (10 min) the count starts again at 0.

No I/O, no clock: the caller passes `now` (seconds, monotonic) and keeps the returned track.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

__all__ = ["Backoff", "RestartAction", "RestartDecision", "RestartTrack", "plan"]


class RestartAction(str, Enum):
    NOTHING = "nothing"  # healthy, or waiting for the next step
    WAIT = "wait"  # failed; the next restart is due at RestartDecision.due
    RESTART = "restart"  # restart what failed now
    GIVE_UP = "give-up"  # max_restarts reached: say so once, then leave it to a person
    RESET = "reset"  # healthy for the stable period: the count starts again


@dataclass(frozen=True)
class Backoff:
    """The watcher's timing, in seconds."""

    first_s: float = 5.0
    unit_s: float = 30.0
    cap_s: float = 1800.0
    stable_s: float = 600.0

    def delay(self, restarts_so_far: int) -> float:
        """How long after the failure is seen the next restart comes."""
        if restarts_so_far <= 0:
            return self.first_s
        n = restarts_so_far
        return min(self.cap_s, self.unit_s * (n * n + n))


@dataclass(frozen=True)
class RestartTrack:
    """What the watcher remembers about one connector between polls."""

    restarts: int = 0
    failed_since: float | None = None  # when the current failure was first seen
    healthy_since: float | None = None
    gave_up: bool = False


@dataclass(frozen=True)
class RestartDecision:
    action: RestartAction
    track: RestartTrack
    due: float | None = None  # WAIT: when the next restart is due


def plan(
    track: RestartTrack, *, failed: bool, now: float, max_restarts: int | None, backoff: Backoff
) -> RestartDecision:
    """The next step for one connector whose status was just read (`failed`: anything FAILED)."""
    if not failed:
        healthy_since = track.healthy_since if track.healthy_since is not None else now
        track = replace(track, failed_since=None, healthy_since=healthy_since)
        if (track.restarts or track.gave_up) and now - healthy_since >= backoff.stable_s:
            return RestartDecision(RestartAction.RESET, RestartTrack(healthy_since=healthy_since))
        return RestartDecision(RestartAction.NOTHING, track)
    failed_since = track.failed_since if track.failed_since is not None else now
    track = replace(track, failed_since=failed_since, healthy_since=None)
    if track.gave_up:
        return RestartDecision(RestartAction.NOTHING, track)
    if max_restarts is not None and track.restarts >= max_restarts:
        return RestartDecision(RestartAction.GIVE_UP, replace(track, gave_up=True))
    due = failed_since + backoff.delay(track.restarts)
    if now >= due:
        return RestartDecision(RestartAction.RESTART, replace(track, restarts=track.restarts + 1, failed_since=None))
    return RestartDecision(RestartAction.WAIT, track, due=due)
