"""The local node's NodePorts on this machine's loopback: 127.0.0.1:P -> the node's address, port P.

bin/kube runs it as one of the node's daemons. It binds every port of the node's NodePort range on
127.0.0.1 in the host's network namespace, then moves itself into the node's network namespace:
sockets keep the namespace they were made in, so it accepts on the host's loopback and dials the
node's address (10.200.0.1, which exists only inside the node). One process for the whole range,
so a Service of type NodePort (a Kafka external listener, Connect's REST API) is reachable from
the host at the port Kubernetes gave it, as on a real node, without a link between the namespaces.

    python nodeports.py NETNS_PATH NODE_IP FIRST LAST STATE_FOLDER

(STATE_FOLDER only names the process as the node's, for `bin/kube down` and `status`.)
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import socket
import sys
from collections.abc import Awaitable, Callable

CLONE_NEWNET = 0x40000000
CHUNK = 65536


def enter_netns(path: str) -> None:
    """setns(2) into the network namespace at `path` (os.setns arrives with Python 3.12)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"setns {path}: {os.strerror(error)}")
    finally:
        os.close(fd)


def listen_all(first: int, last: int) -> list[socket.socket]:
    """A listening socket on 127.0.0.1 for every port of the range; a taken port fails at once."""
    sockets = []
    for port in range(first, last + 1):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as error:
            raise SystemExit(f"127.0.0.1:{port} is taken ({error}): free it or pick another range") from None
        sock.listen(64)
        sock.setblocking(False)
        sockets.append(sock)
    return sockets


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        if not writer.is_closing():
            writer.close()


async def serve(sockets: list[socket.socket], node_ip: str) -> None:
    async def forward(port: int, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            node_r, node_w = await asyncio.wait_for(asyncio.open_connection(node_ip, port), 10)
        except (OSError, asyncio.TimeoutError):
            client_w.close()  # nothing listens on that NodePort: the client sees the connection closed
            return
        await asyncio.gather(_pipe(client_r, node_w), _pipe(node_r, client_w))

    def handler(port: int) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
        return lambda reader, writer: forward(port, reader, writer)

    servers = [await asyncio.start_server(handler(s.getsockname()[1]), sock=s) for s in sockets]
    first, last = sockets[0].getsockname()[1], sockets[-1].getsockname()[1]
    print(f"[nodeports] 127.0.0.1:{first}-{last} -> {node_ip}", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


def main(argv: list[str]) -> int:
    netns, node_ip, first, last = argv[0], argv[1], int(argv[2]), int(argv[3])
    sockets = listen_all(first, last)
    enter_netns(netns)
    asyncio.run(serve(sockets, node_ip))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
