"""The nodes' namespaces, link and cgroups: what `bin/kube up` makes before any daemon starts and
`down` removes after the last one stopped (toolchain/kubernetes/node.py).

Each node has a network namespace and a mount namespace of its own. The first node's network
namespace holds a bridge, `mm2-node`, with the first node's address on it; every other node is
joined to that bridge by a veth pair, its end `eth0` carrying its own address (10.200.0.N/24).
That bridge is the nodes' whole link: it has no port to the host, so nothing a node does reaches
an address outside the namespaces `up` made. Each node routes every other node's pod subnet to
that node's address, so pods reach each other across nodes unmasqueraded, as with a cloud's
routed pod network.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

from toolchain.kubernetes.node_base import (
    KERNEL_SETTINGS,
    NETNS,
    NODE_NETWORK,
    Layout,
    Node,
    run,
)

BRIDGE = "mm2-node"  # in the first node's network namespace
PREFIX = NODE_NETWORK.split("/")[1]


def setup(lay: Layout, nodes: Sequence[Node]) -> None:
    for node in nodes:
        _network(node)
    for node in nodes:
        _routes(node, nodes)
        _mounts(lay, node)


def _network(node: Node) -> None:
    if not node.netns_path.exists():
        run(["ip", "netns", "add", node.netns])
    ip = ["ip", "-n", node.netns]
    run([*ip, "link", "set", "lo", "up"])
    # Forwarding between the node's pods' bridge and the nodes' link.
    run(["ip", "netns", "exec", node.netns, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
    first = ["ip", "-n", NETNS]
    if node.index == 1:
        if run([*ip, "link", "show", BRIDGE], check=False).returncode != 0:
            run([*ip, "link", "add", BRIDGE, "type", "bridge"])
            run([*ip, "addr", "add", f"{node.ip}/{PREFIX}", "dev", BRIDGE])
        run([*ip, "link", "set", BRIDGE, "up"])
        return
    port = f"mm2-n{node.index}"  # the pair's end on the first node's bridge
    if run([*first, "link", "show", port], check=False).returncode != 0:
        run([*first, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", node.netns])
        run([*ip, "addr", "add", f"{node.ip}/{PREFIX}", "dev", "eth0"])
    run([*first, "link", "set", port, "master", BRIDGE, "up"])
    run([*ip, "link", "set", "eth0", "up"])


def _routes(node: Node, nodes: Sequence[Node]) -> None:
    for other in nodes:
        if other != node:
            run(["ip", "-n", node.netns, "route", "replace", other.pod_subnet, "via", other.ip])


def _mounts(lay: Layout, node: Node) -> None:
    """A mount namespace of the node's own, kept by a bind mount on a file in its folder."""
    mntns = lay.node_mntns(node)
    if mntns.as_posix() in host_mounts_under(lay.root):
        return
    mntns.parent.mkdir(parents=True, exist_ok=True)
    mntns.touch()
    run(["unshare", f"--mount={mntns}", "--propagation", "private", "true"])
    sysctl = lay.node_dir(node) / "sysctl"
    sysctl.mkdir(exist_ok=True)
    script = [
        "set -e",
        # What the node would leave on the host (shim sockets, runc state, CNI results and
        # IP leases, pod network namespace pins, container log links) stays in memory here.
        f"mount -t tmpfs -o mode=0755 {node.name}-run /run",
        f"mount -t tmpfs -o mode=0755 {node.name}-var-lib /var/lib",
        f"mount -t tmpfs -o mode=0755 {node.name}-var-log /var/log",
        "mkdir -p /run/netns",
    ]
    # The kubelet reads the kernel settings it insists on from files mounted over them here: it
    # would otherwise write them for the whole machine.
    for setting, value in KERNEL_SETTINGS.items():
        fake = sysctl / setting.replace("/", ".")
        fake.write_text(value + "\n")
        script.append(f"mount --bind {fake} /proc/sys/{setting}")
    run(["nsenter", f"--mount={mntns}", "--", "sh", "-c", "\n".join(script)])


def host_mounts_under(root: Path) -> list[str]:
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        target = line.split()[4].replace("\\040", " ")
        if target == str(root) or target.startswith(str(root) + "/"):
            mounts.append(target)
    return sorted(mounts, key=len, reverse=True)


def namespaces_left() -> list[str]:
    """Every network namespace of a node (`mm2-kube`, `mm2-kube-N`), whatever `up` recorded."""
    folder = Path("/run/netns")
    found = folder.glob(f"{NETNS}*") if folder.is_dir() else []
    return sorted(p.name for p in found if p.name == NETNS or p.name.removeprefix(f"{NETNS}-").isdigit())


def remove_namespaces() -> None:
    # The first node's last: the other nodes' veth ends go with their own namespaces.
    for name in sorted(namespaces_left(), key=lambda n: n == NETNS):
        run(["ip", "netns", "del", name])


# --- cgroups ------------------------------------------------------------------------------------


def cgroup_hierarchies() -> list[Path]:
    return sorted(p for p in Path("/sys/fs/cgroup").iterdir() if (p / "cgroup.procs").is_file())


def cgroup_roots() -> list[Path]:
    """Every node's kubelet cgroup root, in every hierarchy."""
    return [
        path
        for hierarchy in cgroup_hierarchies()
        for path in hierarchy.glob(f"{NETNS}*")
        if path.is_dir() and (path.name == NETNS or path.name.removeprefix(f"{NETNS}-").isdigit())
    ]


def cgroup_pids(node: Node | None = None) -> set[int]:
    """The processes in the nodes' cgroups (`node`'s alone when given): their pods'."""
    pids: set[int] = set()
    roots = cgroup_roots() if node is None else [h / node.cgroup_root for h in cgroup_hierarchies()]
    for root in roots:
        for procs in root.glob("**/cgroup.procs"):
            with contextlib.suppress(OSError):
                pids.update(int(p) for p in procs.read_text().split())
    return pids


def make_cgroup_root(node: Node) -> None:
    """The kubelet's cgroup root must exist in every hierarchy; cpuset needs its cpus and mems."""
    for hierarchy in cgroup_hierarchies():
        path = hierarchy / node.cgroup_root
        path.mkdir(exist_ok=True)
        for knob in ("cpuset.cpus", "cpuset.mems"):
            if (path / knob).is_file() and not (path / knob).read_text().strip():
                (path / knob).write_text((hierarchy / knob).read_text())


def remove_cgroups() -> None:
    for top in cgroup_roots():
        for path in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            path.rmdir()
        top.rmdir()
