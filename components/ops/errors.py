"""The operator commands' error root (the whole tree of the project's errors is drawn in
`components/__init__.py`). `OutputsError` is shared with the Spark stage, so it is not an
`OpsError`; the commands report both the same way (exit code 1)."""

from __future__ import annotations


class OpsError(RuntimeError):
    """An operator command cannot go on; the message names the component, the cause and the next step."""
