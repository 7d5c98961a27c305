"""components/topology/settings.py: the MM2 settings catalogue."""

from __future__ import annotations

from components.topology.connectors import (
    TUNED_SOURCE_CLIENT,
)
from components.topology.settings import KNOWN_SETTINGS, ROLE_SETTINGS, SOURCE_CLIENT_TUNING


def test_every_tuned_key_is_a_known_source_setting() -> None:
    # Otherwise a user could not override a default the generator emits.
    assert set(TUNED_SOURCE_CLIENT) == SOURCE_CLIENT_TUNING
    assert SOURCE_CLIENT_TUNING <= KNOWN_SETTINGS
    assert ROLE_SETTINGS["source"] >= SOURCE_CLIENT_TUNING
    assert not SOURCE_CLIENT_TUNING & (ROLE_SETTINGS["checkpoint"] | ROLE_SETTINGS["heartbeat"])
