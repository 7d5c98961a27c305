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


def test_removed_keys_say_why_and_what_to_do() -> None:
    from components.platform.settings import docker_settings

    with pytest.raises(PlatformSettingsError) as err:
        docker_settings({"kafkaUi": {"enabled": True}, "imagee": "x"})
    text = str(err.value)
    assert "mm2-platform:docker.kafkaUi: no longer a setting" in text and "bin/status" in text
    assert "mm2-platform:docker.imagee: unknown field" in text
    with pytest.raises(PlatformSettingsError) as err:
        kubernetes_settings({"connect": {"agentUrl": "https://example.com/agent.jar", "downloaderImage": "curl"}})
    text = str(err.value)
    assert text.count("baked into the Kafka image") == 2 and "Fix: delete the key" in text


def test_images_default_to_the_ones_this_project_builds() -> None:
    from components.platform.image_layout import KAFKA_IMAGE, WATCHER_IMAGE
    from components.platform.settings import docker_settings

    k8s = kubernetes_settings({})
    assert k8s.kafka.image == k8s.connect.image == docker_settings({}).image == KAFKA_IMAGE
    assert k8s.connect.watcher_image == WATCHER_IMAGE


def test_no_doc_or_stack_file_offers_a_kafka_ui() -> None:
    """Kafka UI is never deployed, so nothing may offer it (docs/kubernetes.md says there is none)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    files = [
        root / "README.md",
        *root.glob("docs/*.md"),
        *root.glob("Pulumi*.yaml"),
        *(p for p in root.glob("examples/**/*") if p.is_file()),
    ]
    for path in files:
        text = path.read_text()
        assert "kafkaUi" not in text and "kafka-ui" not in text.lower(), path
        for line in (line for line in text.splitlines() if "Kafka UI" in line):
            assert "There is no Kafka UI" in line, f"{path}: {line}"


def test_ready_timeout_bounds_the_providers_wait_and_must_be_a_duration() -> None:
    assert kubernetes_settings({}).ready_timeout == "5m"
    assert kubernetes_settings({"readyTimeout": "90s"}).ready_timeout == "90s"
    with pytest.raises(PlatformSettingsError) as raised:
        kubernetes_settings({"readyTimeout": "soon"})
    assert "mm2-platform:kubernetes.readyTimeout: 'soon' is not a duration" in str(raised.value)


def test_alert_times_are_durations_and_counts_whole_numbers_each_named_when_wrong() -> None:
    settings = kubernetes_settings(
        {
            "kafka": {"alerts": {"underReplicatedFor": "30s"}},
            "clusters": {"us": {"alerts": {"criticalFor": "120s"}}},
            "connect": {"alerts": {"failureFor": "1m", "heartbeatWindowMinutes": "1"}},
        }
    )
    # Written as Prometheus takes them, in the largest unit that is exact.
    assert settings.cluster("us").alerts.critical_for == "2m"
    assert settings.cluster("us").alerts.under_replicated_for == "30s"
    assert settings.cluster("eu").alerts.critical_for == "1m"  # the default: no override for eu
    assert (settings.connect.alerts.failure_for, settings.connect.alerts.heartbeat_window_minutes) == ("1m", 1)
    assert settings.connect.alerts.for_duration == "5m"
    with pytest.raises(PlatformSettingsError) as raised:
        kubernetes_settings(
            {
                "kafka": {"alerts": {"underReplicatedFor": "3 minutes", "forr": "1m"}},
                "connect": {"alerts": {"failureFor": 60, "replicationLatencyMs": 0, "for": True}},
            }
        )
    text = str(raised.value)
    assert "mm2-platform:kubernetes.kafka.alerts.underReplicatedFor: '3 minutes' is not a duration" in text
    assert "mm2-platform:kubernetes.kafka.alerts.forr: unknown field" in text
    assert "mm2-platform:kubernetes.connect.alerts.failureFor: 60 is not a duration" in text
    assert "mm2-platform:kubernetes.connect.alerts.replicationLatencyMs: 0 is not a positive whole number" in text
    assert "mm2-platform:kubernetes.connect.alerts.for: True is not a duration" in text
