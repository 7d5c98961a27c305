"""The stage's progress lines on stderr: `[validate HH:MM:SS] message`, one whole line per call."""

from __future__ import annotations

import sys
import threading
from datetime import datetime

_LOCK = threading.Lock()


def log(msg: str) -> None:
    """Write one progress line whole: flows wait and check in threads side by side, and `print`
    writes the text and its newline separately (lines of two threads ran together)."""
    line = f"[validate {datetime.now().strftime('%H:%M:%S')}] {msg}\n"
    with _LOCK:
        sys.stderr.write(line)
        sys.stderr.flush()
