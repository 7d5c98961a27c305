"""Pulumi's Python dynamic-provider host, serving with a thread pool wide enough for waits.

The host a Pulumi release ships (`python -m pulumi.dynamic`, 3.259.0) serves its gRPC
requests from `futures.ThreadPoolExecutor(max_workers=4)`. A Connector's create and update
hold their thread until the connector runs (seconds each), so however high the engine's
--parallel, a stack with 48 connectors was created 4 at a time.

This host runs Pulumi's own module unchanged (it starts its server when imported), with one
difference: while it builds its pool, `concurrent.futures.ThreadPoolExecutor` is a subclass
that asks for at least PULUMI_DYNAMIC_THREADS workers (default 64). Serving, provider caching,
(de)serialization and the Ctrl-C/SIGINT shutdown the engine relies on are all Pulumi's.

It replaces `-m pulumi.dynamic` in the `pulumi-resource-pulumi-python` plugin script that
bin/bootstrap installs beside the CLI; with `-m`, Python puts the working directory (the
project) first on sys.path, so this host does the same for the providers' modules to import.
"""

from __future__ import annotations

import os
import sys
from concurrent import futures

DEFAULT_THREADS = 64


def threads() -> int:
    raw = os.environ.get("PULUMI_DYNAMIC_THREADS", "")
    try:
        value = int(raw) if raw else DEFAULT_THREADS
    except ValueError:
        sys.stderr.write(f"PULUMI_DYNAMIC_THREADS={raw!r} is not a number; using {DEFAULT_THREADS}\n")
        return DEFAULT_THREADS
    return max(1, value)


class WidePool(futures.ThreadPoolExecutor):
    """A ThreadPoolExecutor with at least `threads()` workers."""

    def __init__(self, max_workers: int | None = None, *args: object, **kwargs: object) -> None:
        super().__init__(max(threads(), max_workers or 0), *args, **kwargs)  # type: ignore[arg-type]


def main() -> None:
    sys.path.insert(0, os.getcwd())
    futures.ThreadPoolExecutor = WidePool  # type: ignore[misc]
    # Pulumi's module serves when imported and returns when the engine interrupts it.
    import pulumi.dynamic.__main__  # noqa: F401


if __name__ == "__main__":
    main()
