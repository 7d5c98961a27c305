"""A live process carrying a marker, as the local platform finds its JVMs."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest

from components.platform.local import process as proc


@pytest.fixture
def marked() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    marker = f"unit/{uuid.uuid4().hex[:8]}"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", f"{proc.MARKER_FLAG}{marker}"])
    try:
        # Popen may return before the exec: wait (bounded) for the child's own command line.
        deadline = time.monotonic() + 10
        while proc.find_pids(marker) != [child.pid] and time.monotonic() < deadline:
            time.sleep(0.05)
        yield child, marker
    finally:
        child.kill()
        child.wait()
