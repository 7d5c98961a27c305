"""The `mm2-platform` settings parser."""

from __future__ import annotations

import pytest

from components.platform.settings import PlatformSettingsError, kubernetes_settings


def test_settings_report_every_problem() -> None:
    with pytest.raises(PlatformSettingsError) as err:
        kubernetes_settings(
            {
                "namespace": "Bad_NS",
                "kafka": {"zoneSpread": "sometimes", "imag": "x"},
                "clusters": {"a": {"externalHost": "a.example.com"}},
            }
        )
    text = str(err.value)
    assert "namespace" in text and "zoneSpread" in text and "imag" in text and "{ordinal}" in text
