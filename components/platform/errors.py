"""The platform layer's error root (pure: importable by the settings parser without pulumi)."""

from __future__ import annotations


class PlatformError(RuntimeError):
    """Base of every error a platform raises: its settings, its processes, its TLS material."""
