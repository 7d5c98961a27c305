"""A flow's loss acknowledgement (`lossAcknowledged`): the instant up to which an operator has
reviewed the records its worker group's lag exporter found gone before MM2 copied them.

The lag exporter's data-loss sentinel (components/watch/lag.py) keeps every expiry and every
re-created source topic it finds, with the time it found it. Those found at or before the
acknowledged instant are *acknowledged*: `bin/status` and the Spark stage still list them, marked
so, but they no longer make the flow unhealthy nor fail `source_records_expired`; anything found
after it does. The value is declared in the stack config, so an acknowledgement is reviewed in a
pull request like the rest of the stack, and reaches the operator commands through the flow's
stack outputs (`flows.<flow>.lossAcknowledgedAt`).

Written as an ISO-8601 instant with its time zone: `2026-11-26T10:00:00Z` (seconds may carry a
fraction; an offset such as `+01:00` is read as the same instant in UTC). An instant without a
zone is refused (it names no instant), and so is one later than the clock of the machine running
the preview by more than `CLOCK_SKEW_S`: it would acknowledge losses that have not happened yet.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

# How far ahead of the preview's clock an acknowledgement may be: the operator's clock and the
# lag exporter's (which stamps each finding) may disagree by this much.
CLOCK_SKEW_S = 60

_INSTANT = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:(?P<utc>[Zz])|(?P<sign>[+-])(?P<hours>\d{2}):(?P<minutes>\d{2}))?$"
)


class InstantError(ValueError):
    """Why a value is not a usable instant; `zoned` is False when only the time zone is missing."""

    def __init__(self, message: str, zoned: bool = True) -> None:
        super().__init__(message)
        self.zoned = zoned


def parse_instant(value: object) -> int:
    """Milliseconds since the epoch (UTC) of an ISO-8601 instant with its zone; InstantError when
    `value` is not one. A YAML reader that made a datetime of the value is taken at its word."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise InstantError("it has no time zone", zoned=False)
        return _ms(value)
    if not isinstance(value, str):
        raise InstantError("it is not a string")
    match = _INSTANT.match(value.strip())
    if match is None:
        raise InstantError("it is not an ISO-8601 date and time")
    year, month, day, hour, minute, second = (int(match[i]) for i in range(1, 7))
    fraction = (match[7] or "").ljust(6, "0")[:6]
    if match["utc"]:
        zone = timezone.utc
    elif match["sign"]:
        hours, minutes = int(match["hours"]), int(match["minutes"])
        if hours > 23 or minutes > 59:
            raise InstantError("its offset is out of range")
        offset = timedelta(hours=hours, minutes=minutes)
        zone = timezone(-offset if match["sign"] == "-" else offset)
    else:
        raise InstantError("it has no time zone", zoned=False)
    try:
        return _ms(datetime(year, month, day, hour, minute, second, int(fraction), tzinfo=zone))
    except ValueError as exc:  # month 13, February 30, hour 24, ...
        raise InstantError(f"it is not a date and time ({exc})") from None


def instant_text(ms: int) -> str:
    """`ms` as the UTC instant the exports and the operator commands write: 2026-11-26T10:00:00Z,
    with milliseconds only when there are some."""
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{ms % 1000:03d}Z" if ms % 1000 else f"{text}Z"


def too_late(acknowledged_ms: int, now_ms: int) -> bool:
    """Whether an acknowledgement lies beyond the clock's skew in the future of `now_ms`."""
    return acknowledged_ms > now_ms + CLOCK_SKEW_S * 1000


def _ms(moment: datetime) -> int:
    # Whole milliseconds, rounded down: the exporter stamps findings in milliseconds, and rounding
    # down never acknowledges a finding the declared instant does not cover.
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return delta // timedelta(milliseconds=1)
