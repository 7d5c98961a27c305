"""Pulumi's Python dynamic-provider host, serving with a thread pool wide enough for waits.

The host a Pulumi release ships (`python -m pulumi.dynamic`, 3.259.0) serves its gRPC
requests from a pool of 4 threads. A Connector's create and update hold their thread until
the connector runs (seconds each), so however high the engine's --parallel, a stack with 48
connectors was created 4 at a time. This host runs the very same servicer (Pulumi's
DynamicResourceProviderServicer, imported, not copied) with a pool of PULUMI_DYNAMIC_THREADS
threads (default 64). Everything else - provider caching, (de)serialization - is Pulumi's.

It replaces `-m pulumi.dynamic` in the `pulumi-resource-pulumi-python` plugin script that
bin/bootstrap installs beside the CLI; with `-m`, Python puts the working directory (the
project) first on sys.path, so this host does the same for the providers' modules to import.
"""

from __future__ import annotations

import os
import sys
from concurrent import futures
from threading import Event

DEFAULT_THREADS = 64


def threads() -> int:
    raw = os.environ.get("PULUMI_DYNAMIC_THREADS", "")
    try:
        value = int(raw) if raw else DEFAULT_THREADS
    except ValueError:
        sys.stderr.write(f"PULUMI_DYNAMIC_THREADS={raw!r} is not a number; using {DEFAULT_THREADS}\n")
        return DEFAULT_THREADS
    return max(1, value)


def main() -> None:
    sys.path.insert(0, os.getcwd())
    import grpc
    from pulumi.dynamic.__main__ import DynamicResourceProviderServicer
    from pulumi.runtime._grpc_settings import _GRPC_CHANNEL_OPTIONS
    from pulumi.runtime.proto import provider_pb2_grpc

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=threads()), options=_GRPC_CHANNEL_OPTIONS)
    provider_pb2_grpc.add_ResourceProviderServicer_to_server(DynamicResourceProviderServicer(), server)
    port = server.add_insecure_port(address="127.0.0.1:0")
    server.start()
    # The engine reads the port from the first line of stdout, as from Pulumi's own host.
    sys.stdout.buffer.write(f"{port}\n".encode())
    sys.stdout.flush()
    try:
        Event().wait()
    except KeyboardInterrupt:
        server.stop(0)


if __name__ == "__main__":
    main()
