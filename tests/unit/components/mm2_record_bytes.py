"""MM2 records laid out by hand with struct (mm2-internals.md 3), for the Python and Spark decoder tests."""

from __future__ import annotations

import struct


def s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


CKPT_KEY = s("consumer-group-1") + s("primary.test-topic-1") + struct.pack(">i", 3)
CKPT_VALUE = struct.pack(">h", 0) + struct.pack(">q", 150) + struct.pack(">q", 251) + s("")
SYNC_KEY = s("test-topic-1") + struct.pack(">i", 3)
SYNC_VALUE = struct.pack(">qq", 100, 200)
HB_KEY = s("backup") + s("primary")
HB_VALUE = struct.pack(">hq", 0, 1_700_000_000_000)
