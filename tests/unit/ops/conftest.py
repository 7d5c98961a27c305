"""Fixtures of the ops unit tests: `connect`, the in-memory Connect `bin/status` reads (status_fakes)."""

from tests.unit.ops.status_fakes import connect

__all__ = ["connect"]
