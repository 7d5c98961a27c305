"""The local node's names, addresses and state layout, defined once, and the small helpers every
part of it uses (toolchain/kubernetes/node.py, node_files.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NETNS = "mm2-kube"
NETNS_PATH = Path("/run/netns") / NETNS
NODE_NAME = "mm2-kube"
# Addresses that exist only inside the nodes' network namespaces. The first node's: the control
# plane and CoreDNS are there; node N has 10.200.0.N and the pod subnet 10.201.(N-1).0/24.
NODE_IP = "10.200.0.1"
NODE_NETWORK = "10.200.0.0/24"  # the nodes' own link (a bridge in the first node, nodes.py)
POD_SUBNET = "10.201.0.0/24"
CLUSTER_CIDR = "10.201.0.0/16"  # every node's pod subnet
SERVICE_RANGE = "10.202.0.0/24"
SERVICE_IP = "10.202.0.1"  # the `kubernetes` Service: the range's first address
CLUSTER_DOMAIN = "cluster.local"
CLUSTER_DNS = NODE_IP  # CoreDNS answers the pods on the node's address
STORAGE_CLASS = "standard"  # the node's default StorageClass: folders of the state (provisioner.py)
API_PORT = 6443  # inside the node
CGROUP_ROOT = "mm2-kube"  # the kubelet's cgroup root, in every cgroup hierarchy
PAUSE_IMAGE = "mm2-iac/pause:1"
# What the kubelet sets for the whole machine unless it reads these values already.
KERNEL_SETTINGS = {"vm/overcommit_memory": "1", "kernel/panic": "10", "kernel/panic_on_oops": "1"}
# Daemons in start order; `down` stops them in reverse.
DAEMONS = (
    "forwarder",
    "api-socket",
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "containerd",
    "kubelet",
    "kube-proxy",
    "kube-router",
    "coredns",
    "provisioner",
    "nodeports",
)
HOST_DAEMONS = ("forwarder", "nodeports")  # run in the host's namespaces (nodeports moves itself)
KUBE_ROUTER_HEALTH_PORT = 20244  # inside the node, on its loopback
UP_TIMEOUT = float(os.environ.get("MM2_KUBE_TIMEOUT", "180"))
ZONE_LABEL = "topology.kubernetes.io/zone"
ZONES = ("zone-a", "zone-b", "zone-c")  # node N is in ZONES[(N - 1) % 3]
# The first node runs the control plane and the cluster's own services; every node runs these.
NODE_DAEMONS = ("containerd", "kubelet", "kube-proxy", "kube-router")
# What a node takes of this machine's memory: its daemons (about 0.3 GiB idle) and room for the
# pods the scheduler gives it (a broker and a worker). `up --nodes` refuses more than fit.
NODE_MEMORY_GIB = 4
MAX_NODES = 9  # the zones' names and the nodes' addresses allow more; this machine does not


@dataclass(frozen=True)
class Node:
    """One node of the cluster, by its place (1 is the first). Every name and address of it,
    defined once: the first node keeps the one-node cluster's names."""

    index: int

    @property
    def name(self) -> str:
        return NODE_NAME if self.index == 1 else f"{NODE_NAME}-{self.index}"

    @property
    def netns(self) -> str:
        return self.name

    @property
    def netns_path(self) -> Path:
        return Path("/run/netns") / self.netns

    @property
    def ip(self) -> str:
        return f"10.200.0.{self.index}"

    @property
    def pod_subnet(self) -> str:
        return f"10.201.{self.index - 1}.0/24"

    @property
    def zone(self) -> str:
        return ZONES[(self.index - 1) % len(ZONES)]

    @property
    def cgroup_root(self) -> str:
        return CGROUP_ROOT if self.index == 1 else f"{CGROUP_ROOT}-{self.index}"

    def daemon(self, name: str) -> str:
        """The name of its instance of a NODE_DAEMONS daemon (pid file, log)."""
        return name if self.index == 1 else f"{name}-{self.index}"


FIRST = Node(1)


def cluster_nodes(count: int) -> tuple[Node, ...]:
    return tuple(Node(i) for i in range(1, count + 1))


def instances(name: str, nodes: Sequence[Node]) -> list[str]:
    """The pid-file names of daemon `name`: one per node for NODE_DAEMONS, else the first node's alone."""
    return [n.daemon(name) for n in nodes] if name in NODE_DAEMONS else [name]


def node_limit(mem_total_bytes: int) -> int:
    """How many nodes this machine holds: NODE_MEMORY_GIB of its memory each, at most MAX_NODES."""
    return max(1, min(MAX_NODES, mem_total_bytes // (NODE_MEMORY_GIB * 2**30)))


class KubeError(RuntimeError):
    """A part of the node did not start or stop; the message says which and how to look."""


@dataclass(frozen=True)
class Layout:
    """Where the node keeps its state, defined once."""

    root: Path
    bin: Path
    api_port: int
    node_ports: tuple[int, int] = (30000, 30099)  # the NodePort range, also on 127.0.0.1 (nodeports.py)

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def crds(self) -> Path:
        """Custom resource definitions `up` installs (bin/bootstrap --kubernetes writes them)."""
        return self.bin.parent / "crds"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def run(self) -> Path:
        return self.root / "run"

    @property
    def volumes(self) -> Path:
        """The persistent volumes' folders (toolchain/kubernetes/provisioner.py)."""
        return self.root / "volumes"

    @property
    def kubeconfig(self) -> Path:
        """The host's kubeconfig: the API server through the forwarder on 127.0.0.1."""
        return self.root / "kubeconfig"

    @property
    def api_socket(self) -> Path:
        return self.root / "run" / "api.sock"

    def node_dir(self, node: Node) -> Path:
        """Where a node keeps what is its own; the first node's is the state folder itself."""
        return self.root if node.index == 1 else self.root / "nodes" / node.name

    def node_mntns(self, node: Node) -> Path:
        return self.node_dir(node) / "mntns"

    def node_containerd_socket(self, node: Node) -> Path:
        return self.node_dir(node) / "containerd" / "containerd.sock"

    @property
    def count_file(self) -> Path:
        """How many nodes `up` started."""
        return self.root / "node-count"

    def pidfile(self, name: str) -> Path:
        return self.run / f"{name}.pid"

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"


def layout_from_env() -> Layout:
    cache = Path(os.environ.get("MM2_CACHE", Path.home() / ".cache" / "mm2-iac"))
    version = _versions().get("KUBERNETES_VERSION", "")
    return Layout(
        root=Path(os.environ.get("MM2_KUBE_DIR", ROOT / ".mm2" / "kube")).resolve(),
        bin=Path(os.environ.get("MM2_KUBE_BIN", cache / f"kubernetes-{version}" / "bin")),
        api_port=int(os.environ.get("MM2_KUBE_API_PORT", "16443")),
        node_ports=_port_range(os.environ.get("MM2_KUBE_NODE_PORTS", "30000-30099")),
    )


def _port_range(text: str) -> tuple[int, int]:
    first, _, last = text.partition("-")
    try:
        low, high = int(first), int(last)
    except ValueError:
        raise KubeError(f"MM2_KUBE_NODE_PORTS={text!r}: give a range FIRST-LAST, e.g. 30000-30099") from None
    if not 1024 < low <= high < 32768 or high - low > 999:
        raise KubeError(f"MM2_KUBE_NODE_PORTS={text!r}: ports 1025-32767, at most 1000 of them (default 30000-30099)")
    return low, high


def _versions() -> dict[str, str]:
    pairs = (
        line.split("=", 1)
        for line in (ROOT / "toolchain" / "versions.env").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    return {k.strip(): v.strip() for k, v in pairs}


# --- small helpers ------------------------------------------------------------------------------


def say(message: str) -> None:
    print(f"[kube] {message}", file=sys.stderr, flush=True)


def run(argv: Sequence[str | os.PathLike[str]], check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise KubeError(f"{' '.join(map(str, argv))} failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
    return result


def wait_for(what: str, condition: Callable[[], bool], timeout: float, log: Path | None = None) -> None:
    """Polls `condition` until it holds; after `timeout` seconds fails naming what and the log tail."""
    deadline = time.monotonic() + timeout
    interval = 0.05
    while not condition():
        if time.monotonic() > deadline:
            tail = ""
            if log is not None and log.is_file():
                tail = "\n  " + "\n  ".join(log.read_text(errors="replace").splitlines()[-25:])
            raise KubeError(f"{what}: not after {timeout:.0f}s.{' Log ' + str(log) + ':' if log else ''}{tail}")
        time.sleep(interval)  # the poll's interval, not a wait for the condition
        interval = min(interval * 2, 0.5)
