"""A Kubernetes of one or more nodes on this machine that the project starts and stops itself
(like kind).

    bin/kube up [--nodes N]     start it (a no-op when it is up); prints the kubeconfig to use
    bin/kube down               stop every process, unmount, delete its namespaces and state folder
    bin/kube status             one line per part; exit 1 unless every part is up
    bin/kube load ARCHIVE...    import docker-archive images into every node's containerd
    bin/kube lose-node N        kill every process of node N at once (N >= 2), as a power cut would
    bin/kube start-node N       start node N again on the state it kept

Each node (its containerd with runc and the CNI bridge, its kubelet, kube-proxy and kube-router,
and its pods) runs inside a network namespace and a mount namespace of its own that `up` creates;
node N is `mm2-kube-N` (the first: `mm2-kube`), at 10.200.0.N, labelled with the zone
`zone-a`, `zone-b` or `zone-c` in turn. The first node also runs the control plane (etcd, the API
server, controller manager and scheduler), CoreDNS and the volume provisioner. The nodes are
joined by a bridge in the first node's namespace with no port to the host (node_net.py), so
nothing a node does can reach an address outside this machine. Each node has its own cgroup root
and runtime root, but all share this machine's CPUs and memory: each reports all of them.
The host reaches the API server through a forwarder on 127.0.0.1 (`MM2_KUBE_API_PORT`, default
16443) and a UNIX socket in the state folder, and the NodePorts at the same ports on 127.0.0.1
(`MM2_KUBE_NODE_PORTS`, default 30000-30099; toolchain/kubernetes/nodeports.py), through the first
node.
A node's mount namespace keeps what it mounts (container root filesystems, volumes, the pods'
network namespace pins) and the files it would otherwise write under /run, /var/lib and /var/log
off the host; a bind mount in the node's folder keeps it, so a node lost and started again
(`lose-node`, `start-node`) finds its containers' state and its pods' volumes, until `down`.
The kubelet reads the three kernel settings it insists on from files mounted over them inside
that namespace: it would otherwise write them for the whole machine.

State lives in `<repo>/.mm2/kube` (`MM2_KUBE_DIR`); the binaries come from
`bin/bootstrap --kubernetes` (`MM2_KUBE_BIN`). Every wait is a bounded poll on its condition
(`MM2_KUBE_TIMEOUT` seconds each, default 180); a part that does not come up fails `up` with the
tail of its log and leaves the cluster as it is, logs in `<state>/logs`, until `down` clears it.
One cluster per machine: the namespace and cgroup names are fixed.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from toolchain.kubernetes import node_net
from toolchain.kubernetes.node_api import (  # noqa: F401 (re-exported: the Prometheus install, the tests)
    CRDS,
    api_create,
    api_get,
    condition_true,
    install_crds,
    node_ready,
)
from toolchain.kubernetes.node_base import (  # noqa: F401 (re-exported: bin/kube, the tests, the bench)
    API_PORT,
    CGROUP_ROOT,
    DAEMONS,
    FIRST,
    HOST_DAEMONS,
    KERNEL_SETTINGS,
    KUBE_ROUTER_HEALTH_PORT,
    MAX_NODES,
    NETNS,
    NETNS_PATH,
    NODE_DAEMONS,
    NODE_IP,
    NODE_MEMORY_GIB,
    NODE_NAME,
    PAUSE_IMAGE,
    POD_SUBNET,
    ROOT,
    SERVICE_IP,
    SERVICE_RANGE,
    UP_TIMEOUT,
    ZONES,
    KubeError,
    Layout,
    Node,
    cluster_nodes,
    instances,
    layout_from_env,
    node_limit,
    run,
    say,
    wait_for,
)
from toolchain.kubernetes.node_files import (  # noqa: F401 (re-exported)
    daemon_argv,
    issue,
    kubeconfig,
    make_pki,
    pause_archive,
    write_configs,
)
from toolchain.kubernetes.node_objects import BOOTSTRAP_OBJECTS, ROLES  # noqa: F401 (re-exported)


def in_node(argv: Sequence[str | os.PathLike[str]], node: Node = FIRST) -> list[str]:
    """argv run inside a node's network and mount namespaces."""
    return ["nsenter", f"--net={node.netns_path}", f"--mount={LAYOUT.node_mntns(node)}", "--", *map(str, argv)]


def node_http_ok(url: str, node: Node = FIRST) -> bool:
    """True when an http URL inside a node's network namespace answers 2xx."""
    result = subprocess.run(
        ["nsenter", f"--net={node.netns_path}", "curl", "-sf", "-m", "2", "-o", "/dev/null", url], capture_output=True
    )
    return result.returncode == 0


def port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


# --- processes ------------------------------------------------------------------------------------


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def ours(pid: int, lay: Layout) -> bool:
    """A process of this node: its command line names the state folder."""
    return str(lay.root) in _cmdline(pid)


def daemon_pid(lay: Layout, name: str) -> int | None:
    """The daemon's pid when it runs (its pid file names a live process of ours), else None."""
    try:
        pid = int(lay.pidfile(name).read_text())
    except (OSError, ValueError):
        return None
    state = _proc_state(pid)
    return pid if state not in (None, "Z") and ours(pid, lay) else None


def _proc_state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def start(lay: Layout, name: str, node: Node = FIRST) -> None:
    argv = daemon_argv(lay, name, node)
    if name not in HOST_DAEMONS:
        argv = in_node(argv, node)
    name = node.daemon(name) if name in NODE_DAEMONS else name
    with lay.log(name).open("ab") as log:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=lay.root
        )
    # nsenter execs the daemon in place: its pid is the daemon's.
    lay.pidfile(name).write_text(f"{process.pid}\n")


def stop_pids(pids: Iterable[int], what: str, timeout: float = 20.0, graceful: bool = True) -> None:
    """SIGTERM, then SIGKILL for what is still there after `timeout` seconds (bounded polls);
    SIGKILL at once unless `graceful`."""
    pids = [p for p in pids if p != os.getpid()]
    for sig in (signal.SIGTERM, signal.SIGKILL) if graceful else (signal.SIGKILL,):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        try:
            wait_for(
                f"{what} stopped",
                lambda: all(_proc_state(p) in (None, "Z") for p in pids),
                timeout if sig == signal.SIGTERM else 10.0,
            )
            return
        except KubeError:
            if sig == signal.SIGKILL:
                raise


def stray_pids(lay: Layout) -> set[int]:
    """Every process left of the node: in its network namespace, in its cgroups, or naming its folder."""
    found = node_net.cgroup_pids()
    for netns in node_net.namespaces_left():
        found.update(int(p) for p in run(["ip", "netns", "pids", netns], check=False).stdout.split())
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and ours(int(entry.name), lay):
            found.add(int(entry.name))
    found.discard(os.getpid())
    return {p for p in found if _proc_state(p) not in (None, "Z")}


# --- up / down / status ---------------------------------------------------------------------------


def recorded_nodes(lay: Layout) -> tuple[Node, ...]:
    """The nodes `up` started (one for a state folder from before `--nodes`)."""
    try:
        count = int(lay.count_file.read_text())
    except (OSError, ValueError):
        count = 1
    return cluster_nodes(count)


def is_up(lay: Layout, nodes: Sequence[Node]) -> bool:
    daemons = [d for name in DAEMONS for d in instances(name, nodes)]
    return all(daemon_pid(lay, d) for d in daemons) and all(node_ready(lay, n) for n in nodes)


def up(lay: Layout, count: int | None = None) -> int:
    """Start the cluster of `count` nodes (one when not given and none runs)."""
    running = recorded_nodes(lay)
    if lay.root.exists() and is_up(lay, running):
        if count not in (None, len(running)):
            raise KubeError(
                f"up already with {len(running)} node(s), not {count}. Fix: bin/kube down (it deletes "
                f"everything on the cluster), then bin/kube up --nodes {count}."
            )
        say(f"up already ({len(running)} node(s)): export KUBECONFIG={lay.kubeconfig}")
        print(lay.kubeconfig)
        return 0
    nodes = cluster_nodes(count or 1)
    if lay.root.exists() or node_net.namespaces_left():
        say("a part of the node is missing or left over: taking it down first")
        down(lay)
    _preflight(lay)
    t0 = time.monotonic()
    for folder in (lay.root, lay.logs, lay.run, lay.volumes):
        folder.mkdir(parents=True, exist_ok=True)
    lay.count_file.write_text(f"{len(nodes)}\n")
    make_pki(lay.pki, nodes)
    write_configs(lay, nodes)
    node_net.setup(lay, nodes)
    for node in nodes:
        node_net.make_cgroup_root(node)
    _control_plane(lay)
    pause = _pause_image(lay)
    for node in nodes:
        _start_node(lay, node, pause)
    for node in nodes:
        kubelet_log = lay.log(node.daemon("kubelet"))
        wait_for(f"node {node.name} Ready", functools.partial(node_ready, lay, node), UP_TIMEOUT, kubelet_log)
    _cluster_services(lay, nodes)
    say(f"up in {time.monotonic() - t0:.1f}s, {_nodes_text(nodes)}: export KUBECONFIG={lay.kubeconfig}")
    print(lay.kubeconfig)
    return 0


def _nodes_text(nodes: Sequence[Node]) -> str:
    if len(nodes) == 1:
        return f"node {nodes[0].name}"
    return f"{len(nodes)} nodes ({', '.join(f'{n.name} in {n.zone}' for n in nodes)})"


def _control_plane(lay: Layout) -> None:
    """etcd, the API server and what it needs before a node joins, on the first node."""
    start(lay, "forwarder")
    start(lay, "api-socket")
    start(lay, "etcd")
    wait_for("etcd healthy", lambda: node_http_ok("http://127.0.0.1:2379/health"), UP_TIMEOUT, lay.log("etcd"))
    start(lay, "kube-apiserver")
    wait_for(
        f"API server ready (through 127.0.0.1:{lay.api_port})",
        lambda: api_get(lay, "/readyz")[0] == 200,
        UP_TIMEOUT,
        lay.log("kube-apiserver"),
    )
    for collection, obj in BOOTSTRAP_OBJECTS:
        api_create(lay, collection, obj)
    install_crds(lay)
    start(lay, "kube-controller-manager")
    start(lay, "kube-scheduler")


def _start_node(lay: Layout, node: Node, pause: Path) -> None:
    """A node's container runtime with the pause image (`pause`, its archive), then its kubelet
    (which registers it)."""
    start(lay, "containerd", node)
    socket_path = lay.node_containerd_socket(node)
    wait_for(
        f"containerd of {node.name} answering",
        lambda: run(["ctr", "--address", socket_path, "version"], check=False).returncode == 0,
        UP_TIMEOUT,
        lay.log(node.daemon("containerd")),
    )
    imported(lay, [pause], [node])  # before the kubelet: nothing lists it yet
    start(lay, "kubelet", node)


def _cluster_services(lay: Layout, nodes: Sequence[Node]) -> None:
    """Services, NetworkPolicy and DNS on every node; volumes and NodePorts from the first."""
    for node in nodes:
        start(lay, "kube-proxy", node)
        start(lay, "kube-router", node)
    for daemon in ("coredns", "provisioner", "nodeports"):
        start(lay, daemon)
    for node in nodes:
        _proxies_synced(lay, node)
    wait_for(
        "CoreDNS ready (cluster names resolve)",
        lambda: node_http_ok("http://127.0.0.1:8181/ready"),
        UP_TIMEOUT,
        lay.log("coredns"),
    )
    # Pods are refused until their namespace's default service account exists.
    account = "/api/v1/namespaces/default/serviceaccounts/default"
    wait_for(
        "the default service account",
        lambda: api_get(lay, account)[0] == 200,
        UP_TIMEOUT,
        lay.log("kube-controller-manager"),
    )


def _proxies_synced(lay: Layout, node: Node) -> None:
    wait_for(
        f"kube-proxy of {node.name} synced (Services reachable)",
        functools.partial(node_http_ok, "http://127.0.0.1:10256/healthz", node),
        UP_TIMEOUT,
        lay.log(node.daemon("kube-proxy")),
    )
    wait_for(
        f"kube-router of {node.name} synced (NetworkPolicy enforced)",
        functools.partial(node_http_ok, f"http://127.0.0.1:{KUBE_ROUTER_HEALTH_PORT}/healthz", node),
        UP_TIMEOUT,
        lay.log(node.daemon("kube-router")),
    )


# --- a node lost and back -------------------------------------------------------------------------


def _other_node(lay: Layout, index: int) -> Node:
    """Node `index` of the running cluster, which must not be the first (it holds the control plane)."""
    nodes = recorded_nodes(lay)
    if not lay.root.exists() or not 2 <= index <= len(nodes):
        raise KubeError(
            f"node {index}: the cluster runs {len(nodes) if lay.root.exists() else 0} node(s), and the first holds "
            "the control plane. Fix: name a node from 2 on, of a cluster from bin/kube up --nodes 3."
        )
    return nodes[index - 1]


def lose_node(lay: Layout, index: int) -> int:
    """Node `index` lost as in a power cut: every process of it killed at once (its daemons, its
    pods and their container shims), while its state, volumes and namespaces stay for `start-node`."""
    node = _other_node(lay, index)
    shim_marker = str(lay.node_containerd_socket(node))
    pids = {pid for pid in (daemon_pid(lay, node.daemon(d)) for d in NODE_DAEMONS) if pid}
    pids |= node_net.cgroup_pids(node)
    pids |= {int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit() and shim_marker in _cmdline(int(e.name))}
    stop_pids(pids, f"node {node.name}", graceful=False)
    say(
        f"node {node.name} ({node.zone}) lost: {len(pids)} processes killed; bin/kube start-node {index} brings it back"
    )
    return 0


def start_node(lay: Layout, index: int) -> int:
    """Node `index` back after `lose-node`: its runtime, kubelet and proxies on the state it kept."""
    node = _other_node(lay, index)
    running = [d for d in NODE_DAEMONS if daemon_pid(lay, node.daemon(d))]
    if running:
        raise KubeError(f"node {node.name} runs already ({', '.join(running)}). Fix: bin/kube lose-node {index} first.")
    t0 = time.monotonic()
    node_net.make_cgroup_root(node)
    _start_node(lay, node, _pause_image(lay))
    start(lay, "kube-proxy", node)
    start(lay, "kube-router", node)
    kubelet_log = lay.log(node.daemon("kubelet"))
    wait_for(f"node {node.name} Ready", functools.partial(node_ready, lay, node), UP_TIMEOUT, kubelet_log)
    _proxies_synced(lay, node)
    say(f"node {node.name} ({node.zone}) back in {time.monotonic() - t0:.1f}s")
    return 0


def _preflight(lay: Layout) -> None:
    """What `up` needs before it starts anything: the built binaries, the host tools, and its
    ports on 127.0.0.1 free."""
    binaries = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"]
    binaries += ["kube-router", "coredns", "pause"]
    missing = [n for n in binaries if not os.access(lay.bin / n, os.X_OK)]
    if missing:
        raise KubeError(f"{', '.join(missing)} not in {lay.bin}. Fix: bin/bootstrap --kubernetes (builds, caches).")
    for tool in ("containerd", "ctr", "runc", "socat", "nsenter", "unshare", "ip", "curl", "openssl", "ipset"):
        if shutil.which(tool) is None:
            raise KubeError(
                f"{tool} not on PATH. Fix: bin/bootstrap --kubernetes (installs Debian's containerd, runc, "
                "containernetworking-plugins, socat, ipset)."
            )
    if not port_free(lay.api_port):
        raise KubeError(f"127.0.0.1:{lay.api_port} is taken. Fix: free it, or pick another with MM2_KUBE_API_PORT.")
    taken = [p for p in range(lay.node_ports[0], lay.node_ports[1] + 1) if not port_free(p)]
    if taken:
        raise KubeError(
            f"127.0.0.1:{','.join(map(str, taken[:5]))} of the NodePort range {lay.node_ports[0]}-{lay.node_ports[1]} "
            "taken. Fix: free them, or pick another range with MM2_KUBE_NODE_PORTS=FIRST-LAST."
        )


def _pause_image(lay: Layout) -> Path:
    """Packed afresh on every start (milliseconds), so it is always the binary bootstrap built."""
    archive = lay.root / "pause.tar"
    pause_archive(lay.bin / "pause", archive)
    return archive


# The kubelet lists a new image in the node's status within about a minute (seen: 40 s).
LOAD_LISTED_S = 120.0


def built_archives() -> list[Path]:
    """Every image this checkout built (bin/bootstrap --images lists them in .mm2/images.json)."""
    index = Path(os.environ.get("MM2_IMAGES", ROOT / ".mm2" / "images.json"))
    if not index.is_file():
        raise KubeError(f"{index}: no images built in this checkout. Fix: bin/bootstrap --images, then bin/kube load.")
    return [Path(record["archive"]) for record in json.loads(index.read_text()).values()]


def load(lay: Layout, archives: Sequence[Path]) -> int:
    """Import the archives into every node, then wait (bounded) until every node's status lists
    their images: the kubelet reports them up to a minute later, and the program's preview asks
    the nodes' status."""
    nodes = recorded_nodes(lay)
    names = imported(lay, archives or built_archives(), nodes)
    wait_for(
        f"the nodes to list {', '.join(sorted(names))}",
        lambda: all(names <= node_images(lay, n) for n in nodes),
        LOAD_LISTED_S,
    )
    return 0


def imported(lay: Layout, archives: Sequence[Path], nodes: Sequence[Node]) -> set[str]:
    """Import docker archives into the nodes' containerd (the nodes at once); the image names
    they held."""
    for archive in archives:
        if not Path(archive).is_file():
            raise KubeError(f"{archive}: no such image archive (bin/bootstrap --images builds the project's).")
    names: set[str] = set()
    for archive in archives:
        imports = [
            subprocess.Popen(
                ["ctr", "--address", str(lay.node_containerd_socket(n)), "-n", "k8s.io", "images", "import", archive],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for n in nodes
        ]
        for node, process in zip(nodes, imports, strict=True):
            output, _ = process.communicate()
            if process.returncode != 0:
                raise KubeError(f"importing {archive} into {node.name} failed: {output.strip()[-2000:]}")
            names |= set(re.findall(r"unpacking (\S+) \(sha256:", output))
        say(f"loaded {archive}" + (f" into {len(nodes)} nodes" if len(nodes) > 1 else ""))
    return names


def node_images(lay: Layout, node: Node = FIRST) -> set[str]:
    status, body = api_get(lay, f"/api/v1/nodes/{node.name}")
    if status != 200:
        return set()
    return {name for image in json.loads(body).get("status", {}).get("images") or [] for name in image["names"]}


def down(lay: Layout) -> int:
    t0 = time.monotonic()
    nodes = recorded_nodes(lay)
    # The kubelets first, so they restart nothing; then the pods' processes (everything in the
    # nodes' cgroups), then the daemons in reverse start order, then anything still naming the node.
    kubelets = [pid for pid in (daemon_pid(lay, n.daemon("kubelet")) for n in nodes) if pid]
    if kubelets:
        stop_pids(kubelets, "the kubelets")
    pods = node_net.cgroup_pids()
    if pods:
        # Nothing of a pod outlives the node, and a container's PID 1 without a handler ignores
        # SIGTERM: killed at once.
        stop_pids(pods, "the pods' processes", graceful=False)
    for name in reversed(DAEMONS):
        pids = [pid for pid in (daemon_pid(lay, d) for d in instances(name, nodes)) if pid]
        if pids:
            stop_pids(pids, name)
    left = stray_pids(lay)
    if left:
        stop_pids(left, f"processes left of the node ({sorted(left)})", timeout=5.0)
    for target in node_net.host_mounts_under(lay.root):
        run(["umount", target])
    node_net.remove_namespaces()
    node_net.remove_cgroups()
    if lay.root.exists():
        shutil.rmtree(lay.root)
    say(f"down in {time.monotonic() - t0:.1f}s")
    return 0


def status(lay: Layout) -> int:
    ok = True
    nodes = recorded_nodes(lay)
    for name in DAEMONS:
        for instance in instances(name, nodes):
            pid = daemon_pid(lay, instance)
            ok &= pid is not None
            print(f"{instance:24} {'running, pid ' + str(pid) if pid else 'not running'}")
    for node in nodes:
        ready = lay.pki.is_dir() and node_ready(lay, node)
        ok &= ready
        print(f"{'node ' + node.name:24} {'Ready' if ready else 'not Ready'} ({node.zone}, {node.ip})")
    print(f"{'kubeconfig':24} {lay.kubeconfig if lay.kubeconfig.is_file() else '-'}")
    print(f"{'network namespaces':24} {', '.join(node_net.namespaces_left()) or '-'}")
    return 0 if ok else 1


LAYOUT = layout_from_env()


def node_count(text: str) -> int:
    """`--nodes`: a whole number from 1 to what this machine holds (NODE_MEMORY_GIB each)."""
    limit = node_limit(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of nodes (1 to {limit})") from None
    if not 1 <= count <= limit:
        raise argparse.ArgumentTypeError(
            f"{count} nodes: this machine holds 1 to {limit} ({NODE_MEMORY_GIB} GiB of its memory each, "
            f"at most {MAX_NODES}); 3 give one node per zone"
        )
    return count


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bin/kube", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    starter = sub.add_parser("up", help="start the cluster (a no-op when it is up)")
    starter.add_argument(
        "--nodes",
        type=node_count,
        default=None,
        help=f"how many nodes, each in a zone of {', '.join(ZONES)} in turn (default 1; 3 for the prod shape)",
    )
    sub.add_parser("down", help="stop it and remove everything it made")
    sub.add_parser("status", help="what runs; exit 1 unless all of it")
    loader = sub.add_parser(
        "load",
        help="import docker-archive images into every node's containerd (default: every image this checkout built)",
    )
    loader.add_argument("archives", nargs="*", type=Path)
    sub.add_parser("prometheus", help="run the Prometheus Operator and a Prometheus of every ServiceMonitor and rule")
    for command, said in (
        ("lose-node", "kill every process of node N at once, as a power cut"),
        ("start-node", "start node N again after lose-node"),
    ):
        sub.add_parser(command, help=said).add_argument(
            "node", type=int, metavar="N", help="2 or more (the first holds the control plane)"
        )
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.error("needs root (network and mount namespaces, cgroups); run it with sudo")
    try:
        if args.command == "up":
            return up(LAYOUT, args.nodes)
        if args.command == "down":
            return down(LAYOUT)
        if args.command == "status":
            return status(LAYOUT)
        if args.command in ("lose-node", "start-node"):
            return (lose_node if args.command == "lose-node" else start_node)(LAYOUT, args.node)
        if args.command == "prometheus":
            from toolchain.kubernetes import prometheus  # it imports this module

            return prometheus.install(LAYOUT)
        return load(LAYOUT, args.archives)
    except KubeError as error:
        say(f"ERROR: {error}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
