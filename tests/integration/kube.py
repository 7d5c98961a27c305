"""What the tests on bin/kube's node share: running bin/kube and kubectl, and the image archives
the node loads (tests/integration/test_kube_node.py, test_kube_stack.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.harness import ROOT

STATE = Path(os.environ.get("MM2_KUBE_DIR", ROOT / ".mm2" / "kube")).resolve()
NETNS = "mm2-kube"
WATCHER_TAG = "mm2-iac/watcher:py3.11"
KAFKA_TAG = "mm2-iac/kafka:4.3.1"


def kube(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "bin" / "kube"), *args], capture_output=True, text=True, timeout=timeout)


def kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    # Its discovery cache goes with the node's state, not into ~/.kube.
    return subprocess.run(
        ["kubectl", f"--kubeconfig={kubeconfig}", f"--cache-dir={STATE / 'kubectl-cache'}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def image_archive(tag: str) -> Path:
    """The built archive of `tag`: from this checkout's image index, else the newest record in the cache."""
    index = Path(os.environ.get("MM2_IMAGES", ROOT / ".mm2" / "images.json"))
    if index.is_file():
        record = json.loads(index.read_text()).get(tag)
        if record and Path(record["archive"]).is_file():
            return Path(record["archive"])
    cache = Path(os.environ.get("MM2_CACHE", Path.home() / ".cache" / "mm2-iac")) / "images"
    records = [json.loads(p.read_text()) for p in cache.glob("*/record.json")]
    found = sorted(
        (Path(r["archive"]) for r in records if r.get("tag") == tag and Path(r["archive"]).is_file()),
        key=lambda p: p.stat().st_mtime,
    )
    if not found:
        pytest.skip(f"no built {tag} image: run bin/bootstrap --images")
    return found[-1]
