"""Process-wide memory the product keeps between a provider host's calls, cleared between tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from components.connect import client


@pytest.fixture(autouse=True)
def forget_accepted_stops() -> Iterator[None]:
    """ConnectClient's stops accepted in this process (a later update does not ask again): one
    test's stop must not stand in for another's."""
    client._ACCEPTED_STOPS.clear()
    yield
    client._ACCEPTED_STOPS.clear()
