"""The platform's rendering modules stay pure: importing one pulls in no Pulumi or provider SDK."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PURE = (
    "components.platform.settings",
    "components.platform.container_broker",
    "components.platform.image_layout",
    "components.platform.secret_files",
    "components.platform.topology_facts",
    "components.platform.lag_exporter",
    "components.platform.kubernetes.names",
    "components.platform.kubernetes.metadata",
    "components.platform.kubernetes.monitoring",
    "components.platform.kubernetes.kafka_objects",
    "components.platform.kubernetes.connect_objects",
    "components.platform.kubernetes.watcher_objects",
    "components.platform.kubernetes.shipped_code",
    "components.platform.kubernetes.lag_exporter_objects",
    "components.platform.kubernetes.fixed_fields",
    "components.platform.docker.specs",
    "components.platform.local.layout",
)
SDKS = ("pulumi", "pulumi_kubernetes", "httpx", "confluent_kafka")


def sdks_imported_by(module: str) -> list[str]:
    """The SDKs a fresh interpreter has loaded after importing `module` alone."""
    code = f"import sys, {module}\nprint(','.join(sorted({{m.split('.')[0] for m in sys.modules}} & {set(SDKS)!r})))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return [name for name in out.stdout.strip().split(",") if name]


@pytest.mark.parametrize("module", PURE)
def test_rendering_module_imports_no_sdk(module: str) -> None:
    assert sdks_imported_by(module) == []


def test_the_check_sees_an_sdk_import() -> None:
    assert "pulumi_kubernetes" in sdks_imported_by("components.platform.kubernetes.deploy")
