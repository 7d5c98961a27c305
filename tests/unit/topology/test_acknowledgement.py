"""components/topology/acknowledgement.py and the `lossAcknowledged` key: instants with their zone,
the flow over the defaults, and bad values (no instant, no zone, in the future) named with
their key and the fix."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from components.topology import TopologyError, parse_topology
from components.topology.acknowledgement import CLOCK_SKEW_S, InstantError, instant_text, parse_instant
from tests.unit.topology.helpers import FLOW, dev_config

AT = 1_795_000_000_000  # 2026-11-18T11:06:40Z
NOW = AT + 86_400_000  # a day later: the clock the preview passes


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("2026-11-18T11:06:40Z", AT),
        ("2026-11-18t11:06:40z", AT),
        (" 2026-11-18T11:06:40Z ", AT),
        ("2026-11-18T11:06:40.25Z", AT + 250),
        ("2026-11-18T11:06:40.123456789Z", AT + 123),  # below a millisecond is dropped, never rounded up
        ("2026-11-18T12:06:40+01:00", AT),
        ("2026-11-18T06:36:40-04:30", AT),
        (datetime(2026, 11, 18, 11, 6, 40, tzinfo=timezone.utc), AT),  # what a YAML reader may make of it
    ],
)
def test_an_instant_with_its_zone_is_milliseconds_in_utc(text: Any, ms: int) -> None:
    assert parse_instant(text) == ms


@pytest.mark.parametrize(
    ("value", "zoned"),
    [
        ("2026-11-18T11:06:40", False),
        (datetime(2026, 11, 18, 11, 6, 40), False),
        ("2026-11-18", True),
        ("2026-11-18 11:06:40Z", True),
        ("2026-13-18T11:06:40Z", True),
        ("2026-02-30T11:06:40Z", True),
        ("2026-11-18T11:06:40+24:00", True),
        ("yesterday", True),
        (1_795_000_000, True),
        (None, True),
    ],
)
def test_what_is_not_an_instant_says_whether_only_the_zone_is_missing(value: Any, zoned: bool) -> None:
    with pytest.raises(InstantError) as raised:
        parse_instant(value)
    assert raised.value.zoned is zoned


def test_instants_are_written_in_utc_with_milliseconds_only_when_there_are_some() -> None:
    assert instant_text(AT) == "2026-11-18T11:06:40Z"
    assert instant_text(AT + 5) == "2026-11-18T11:06:40.005Z"
    assert parse_instant(instant_text(AT + 5)) == AT + 5


def _parse(config: dict[str, Any], now_ms: int | None = NOW) -> Any:
    return parse_topology(config, now_ms=now_ms)


def _problems(config: dict[str, Any], now_ms: int | None = NOW) -> list[Any]:
    with pytest.raises(TopologyError) as raised:
        _parse(config, now_ms)
    return list(raised.value.problems)


def test_nothing_is_acknowledged_unless_declared() -> None:
    assert _parse(dev_config()).flows[0].loss_acknowledged_at_ms is None


def test_a_flow_takes_the_defaults_acknowledgement_and_its_own_replaces_it() -> None:
    config = dev_config()
    config["defaults"]["lossAcknowledged"] = "2026-11-18T11:06:40Z"
    assert _parse(config).flows[0].loss_acknowledged_at_ms == AT
    # The flow's own value wins whole, even an earlier one (as every key of a flow does).
    config["flows"]["primary->dr"]["lossAcknowledged"] = "2026-11-18T10:06:40Z"
    assert _parse(config).flows[0].loss_acknowledged_at_ms == AT - 3_600_000


def test_an_instant_without_a_zone_is_a_problem_naming_the_key_and_the_fix() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["lossAcknowledged"] = "2026-11-18T11:06:40"
    [problem] = _problems(config)
    assert problem.key == f"{FLOW}.lossAcknowledged"
    assert problem.message == "2026-11-18T11:06:40 has no time zone, so it names no instant."
    assert problem.fix == 'Add "Z" for UTC (or an offset such as "+01:00"), quoted: "2026-11-18T11:06:40Z".'


@pytest.mark.parametrize("value", ["last tuesday", "2026-11-18", 1_795_000_000, True])
def test_what_is_not_an_instant_is_a_problem_naming_the_key_and_an_example(value: Any) -> None:
    config = dev_config()
    config["defaults"]["lossAcknowledged"] = value
    [problem] = _problems(config)
    assert problem.key == "mm2:defaults.lossAcknowledged"
    assert problem.message.startswith(f"expected an ISO-8601 instant, got {value!r}: ")
    assert problem.fix.endswith('with its zone, e.g. "2026-11-19T11:06:40Z".')  # the preview's now


def test_an_acknowledgement_in_the_future_is_refused_beyond_the_clock_skew() -> None:
    config = dev_config()
    ahead = datetime.fromtimestamp(NOW / 1000, tz=timezone.utc) + timedelta(seconds=CLOCK_SKEW_S)
    config["flows"]["primary->dr"]["lossAcknowledged"] = ahead.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert _parse(config).flows[0].loss_acknowledged_at_ms == NOW + CLOCK_SKEW_S * 1000  # within the skew
    later = ahead + timedelta(seconds=1)
    config["flows"]["primary->dr"]["lossAcknowledged"] = later.strftime("%Y-%m-%dT%H:%M:%SZ")
    [problem] = _problems(config)
    assert problem.key == f"{FLOW}.lossAcknowledged"
    assert problem.message == (
        "2026-11-19T11:07:41Z is in the future (now is 2026-11-19T11:06:40Z, 60 s of clock skew allowed): "
        "it would acknowledge losses that have not happened yet."
    )
    assert "at the latest now" in problem.fix
    # Without a clock (bin/mm2props, bin/prometheus-config) no instant is judged by it.
    assert _parse(config, now_ms=None).flows[0].loss_acknowledged_at_ms == NOW + (CLOCK_SKEW_S + 1) * 1000


def test_a_bad_acknowledgement_is_listed_with_the_other_problems() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["lossAcknowledged"] = "soon"
    config["flows"]["primary->dr"]["rpo"] = "0s"
    assert sorted(p.key for p in _problems(config)) == [f"{FLOW}.lossAcknowledged", f"{FLOW}.rpo"]
