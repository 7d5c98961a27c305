"""The post-deploy validation stage: proves with Spark that each flow replicated (see README.md)."""

from __future__ import annotations


class StageError(RuntimeError):
    """Base of every error the validation stage raises before it can judge a flow."""
