"""What people are shown of an error or a Connect trace: its first line, or the head of it.

Connect's status answers carry a Java stack trace per FAILED instance; one-line views (status
tables, drift, a roll that stopped) show its first line, errors show its head.
"""

from __future__ import annotations

NO_TRACE = "(Connect gave no trace)"
TRACE_HEAD_LINES = 8


def first_line(text: str, limit: int | None = None) -> str:
    """The first non-blank line of an error or a trace (the exception and its message),
    stripped and cut at `limit` characters; "" when there is none."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if limit is None or len(line) <= limit else line[: limit - 3] + "..."


def trace_head(trace: str, count: int = TRACE_HEAD_LINES) -> str:
    """The head of a Java stack trace: the exception and the frames that locate it."""
    lines = trace.strip().splitlines()
    if not lines:
        return NO_TRACE
    return "\n".join(lines[:count]) + ("\n\t..." if len(lines) > count else "")
