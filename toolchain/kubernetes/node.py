"""A single-node Kubernetes on this machine that the project starts and stops itself (like kind).

    bin/kube up                 start it (a no-op when it is up); prints the kubeconfig to use
    bin/kube down               stop every process, unmount, delete its namespaces and state folder
    bin/kube status             one line per part; exit 1 unless every part is up
    bin/kube load ARCHIVE...    import docker-archive images into the node's containerd

The node (etcd, the API server, controller manager and scheduler, containerd with runc and the
CNI bridge, the kubelet, and every pod) runs inside a network namespace and a mount namespace that
`up` creates. The network namespace has no interface to the host and no route out, so nothing
the node does can reach an address outside this machine; its own addresses (the node's, the pods'
bridge, the service range) exist only inside it. The host reaches the API server through a
forwarder on 127.0.0.1 (`MM2_KUBE_API_PORT`, default 16443) and a UNIX socket in the state folder,
and the node's NodePorts at the same ports on 127.0.0.1 (`MM2_KUBE_NODE_PORTS`, default
30000-30099; toolchain/kubernetes/nodeports.py).
The mount namespace keeps what the node mounts (container root filesystems, volumes, the pods'
network namespace pins) and the files it would otherwise write under /run, /var/lib and /var/log
off the host; it goes away with the node's last process. The kubelet reads the three kernel
settings it insists on from files mounted over them inside that namespace: it would otherwise
write them for the whole machine.

State lives in `<repo>/.mm2/kube` (`MM2_KUBE_DIR`); the binaries come from
`bin/bootstrap --kubernetes` (`MM2_KUBE_BIN`). Every wait is a bounded poll on its condition
(`MM2_KUBE_TIMEOUT` seconds each, default 180); a part that does not come up fails `up` with the
tail of its log and leaves the node as it is, logs in `<state>/logs`, until `down` clears it.
One node per machine: the namespace and cgroup names are fixed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from pathlib import Path

from toolchain.kubernetes.node_base import (  # noqa: F401 (re-exported: bin/kube, the tests, the bench)
    API_PORT,
    CGROUP_ROOT,
    DAEMONS,
    HOST_DAEMONS,
    KERNEL_SETTINGS,
    KUBE_ROUTER_HEALTH_PORT,
    NETNS,
    NETNS_PATH,
    NODE_IP,
    NODE_NAME,
    PAUSE_IMAGE,
    POD_SUBNET,
    ROOT,
    SERVICE_IP,
    SERVICE_RANGE,
    UP_TIMEOUT,
    KubeError,
    Layout,
    layout_from_env,
    run,
    say,
    wait_for,
)
from toolchain.kubernetes.node_files import (  # noqa: F401 (re-exported)
    BOOTSTRAP_OBJECTS,
    ROLES,
    daemon_argv,
    issue,
    kubeconfig,
    make_pki,
    pause_archive,
    write_configs,
)


def in_node(argv: Sequence[str | os.PathLike[str]]) -> list[str]:
    """argv run inside the node's network and mount namespaces."""
    return ["nsenter", f"--net={NETNS_PATH}", f"--mount={LAYOUT.mntns}", "--", *map(str, argv)]


def node_http_ok(url: str) -> bool:
    """True when an http URL inside the node's network namespace answers 2xx."""
    result = subprocess.run(
        ["nsenter", f"--net={NETNS_PATH}", "curl", "-sf", "-m", "2", "-o", "/dev/null", url], capture_output=True
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


def start(lay: Layout, name: str) -> None:
    argv = daemon_argv(lay, name)
    if name not in HOST_DAEMONS:
        argv = in_node(argv)
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
    found: set[int] = set()
    if NETNS_PATH.exists():
        found.update(int(p) for p in run(["ip", "netns", "pids", NETNS], check=False).stdout.split())
    for procs in Path("/sys/fs/cgroup").glob(f"*/{CGROUP_ROOT}/**/cgroup.procs"):
        with contextlib.suppress(OSError):
            found.update(int(p) for p in procs.read_text().split())
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and ours(int(entry.name), lay):
            found.add(int(entry.name))
    found.discard(os.getpid())
    return {p for p in found if _proc_state(p) not in (None, "Z")}


# --- the API ------------------------------------------------------------------------------------


def _admin(lay: Layout) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(lay.pki / "ca.crt"))
    context.load_cert_chain(str(lay.pki / "admin.crt"), str(lay.pki / "admin.key"))
    return context


def api_get(lay: Layout, path: str, timeout: float = 3.0) -> tuple[int, bytes]:
    """GET through the host forwarder as the admin; (0, b"") when nothing answers."""
    try:
        with urllib.request.urlopen(
            f"https://127.0.0.1:{lay.api_port}{path}", context=_admin(lay), timeout=timeout
        ) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (OSError, ssl.SSLError):
        return 0, b""


def api_create(lay: Layout, collection: str, obj: dict[str, object]) -> None:
    """POST an object as the admin; one that exists already is left as it is."""
    request = urllib.request.Request(
        f"https://127.0.0.1:{lay.api_port}{collection}",
        data=json.dumps(obj).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, context=_admin(lay), timeout=10):
            return
    except urllib.error.HTTPError as error:
        if error.code != 409:
            raise KubeError(f"creating {collection}/{obj['metadata']}: {error.code} {error.read()[:500]!r}") from None


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def install_crds(lay: Layout) -> list[str]:
    """Create every definition in `lay.crds` (the Prometheus Operator's ServiceMonitor and
    PrometheusRule, so a stack with metrics on deploys here) and wait until the API serves each."""
    names = []
    for path in sorted(lay.crds.glob("*.json")):
        crd = json.loads(path.read_text())
        api_create(lay, CRDS, crd)
        names.append(crd["metadata"]["name"])
    wait_for(
        f"CRDs {', '.join(names)} established",
        lambda: all(_established(lay, name) for name in names),
        UP_TIMEOUT,
        lay.log("kube-apiserver"),
    )
    return names


def _established(lay: Layout, name: str) -> bool:
    return condition_true(lay, f"{CRDS}/{name}", "Established")


def node_ready(lay: Layout) -> bool:
    return condition_true(lay, f"/api/v1/nodes/{NODE_NAME}", "Ready")


def condition_true(lay: Layout, path: str, kind: str) -> bool:
    """Whether the object at `path` reports its status condition `kind` as True."""
    status, body = api_get(lay, path)
    # A definition just created reads `"conditions": null` until its controller's first pass.
    found = (json.loads(body).get("status") or {}).get("conditions") if status == 200 else None
    conditions = found or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


# --- up / down / status ---------------------------------------------------------------------------


def _cgroup_hierarchies() -> list[Path]:
    return sorted(p for p in Path("/sys/fs/cgroup").iterdir() if (p / "cgroup.procs").is_file())


def _make_cgroup_root() -> None:
    """The kubelet's cgroup root must exist in every hierarchy; cpuset needs its cpus and mems."""
    for hierarchy in _cgroup_hierarchies():
        path = hierarchy / CGROUP_ROOT
        path.mkdir(exist_ok=True)
        for knob in ("cpuset.cpus", "cpuset.mems"):
            if (path / knob).is_file() and not (path / knob).read_text().strip():
                (path / knob).write_text((hierarchy / knob).read_text())


def _remove_cgroups() -> None:
    for hierarchy in _cgroup_hierarchies():
        top = hierarchy / CGROUP_ROOT
        if top.is_dir():
            for path in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
                path.rmdir()
            top.rmdir()


def _host_mounts_under(root: Path) -> list[str]:
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        target = line.split()[4].replace("\\040", " ")
        if target == str(root) or target.startswith(str(root) + "/"):
            mounts.append(target)
    return sorted(mounts, key=len, reverse=True)


def _setup_namespaces(lay: Layout) -> None:
    if not NETNS_PATH.exists():
        run(["ip", "netns", "add", NETNS])
    ip = ["ip", "-n", NETNS]
    run([*ip, "link", "set", "lo", "up"])
    # The node's own address, on a bridge with no ports: reachable only from inside.
    if run([*ip, "link", "show", "mm2-node"], check=False).returncode != 0:
        run([*ip, "link", "add", "mm2-node", "type", "bridge"])
        run([*ip, "addr", "add", f"{NODE_IP}/32", "dev", "mm2-node"])
    run([*ip, "link", "set", "mm2-node", "up"])
    # A mount namespace of the node's own, kept by a bind mount on a file in the state folder.
    if lay.mntns.as_posix() not in _host_mounts_under(lay.root):
        lay.mntns.touch()
        run(["unshare", f"--mount={lay.mntns}", "--propagation", "private", "true"])
        sysctl = lay.root / "sysctl"
        sysctl.mkdir(exist_ok=True)
        script = [
            "set -e",
            # What the node would leave on the host (shim sockets, runc state, CNI results and
            # IP leases, pod network namespace pins, container log links) stays in memory here.
            "mount -t tmpfs -o mode=0755 mm2-kube-run /run",
            "mount -t tmpfs -o mode=0755 mm2-kube-var-lib /var/lib",
            "mount -t tmpfs -o mode=0755 mm2-kube-var-log /var/log",
            "mkdir -p /run/netns",
        ]
        for setting, value in KERNEL_SETTINGS.items():
            fake = sysctl / setting.replace("/", ".")
            fake.write_text(value + "\n")
            script.append(f"mount --bind {fake} /proc/sys/{setting}")
        run(["nsenter", f"--mount={lay.mntns}", "--", "sh", "-c", "\n".join(script)])


def up(lay: Layout) -> int:
    if all(daemon_pid(lay, d) for d in DAEMONS) and node_ready(lay):
        say(f"up already: export KUBECONFIG={lay.kubeconfig}")
        print(lay.kubeconfig)
        return 0
    if lay.root.exists() or NETNS_PATH.exists():
        say("a part of the node is missing or left over: taking it down first")
        down(lay)
    _preflight(lay)
    t0 = time.monotonic()
    for folder in (lay.root, lay.logs, lay.run, lay.volumes):
        folder.mkdir(parents=True, exist_ok=True)
    make_pki(lay.pki)
    write_configs(lay)
    _setup_namespaces(lay)
    _make_cgroup_root()

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
    start(lay, "containerd")
    wait_for(
        "containerd answering",
        lambda: run(["ctr", "--address", lay.containerd_socket, "version"], check=False).returncode == 0,
        UP_TIMEOUT,
        lay.log("containerd"),
    )
    imported(lay, [_pause_image(lay)])  # before the kubelet: nothing lists it yet
    start(lay, "kubelet")
    wait_for(f"node {NODE_NAME} Ready", lambda: node_ready(lay), UP_TIMEOUT, lay.log("kubelet"))
    for daemon in ("kube-proxy", "kube-router", "coredns", "provisioner", "nodeports"):
        start(lay, daemon)
    wait_for(
        "kube-proxy synced (Services reachable)",
        lambda: node_http_ok("http://127.0.0.1:10256/healthz"),
        UP_TIMEOUT,
        lay.log("kube-proxy"),
    )
    wait_for(
        "kube-router synced (NetworkPolicy enforced)",
        lambda: node_http_ok(f"http://127.0.0.1:{KUBE_ROUTER_HEALTH_PORT}/healthz"),
        UP_TIMEOUT,
        lay.log("kube-router"),
    )
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
    say(f"up in {time.monotonic() - t0:.1f}s: export KUBECONFIG={lay.kubeconfig}")
    print(lay.kubeconfig)
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
    """Import the archives, then wait (bounded) until the node's status lists their images: the
    kubelet reports them up to a minute later, and the program's preview asks the node's status."""
    names = imported(lay, archives or built_archives())
    wait_for(f"the node to list {', '.join(sorted(names))}", lambda: names <= node_images(lay), LOAD_LISTED_S)
    return 0


def imported(lay: Layout, archives: Sequence[Path]) -> set[str]:
    """Import docker archives into the node's containerd; the image names they held."""
    names: set[str] = set()
    for archive in archives:
        if not Path(archive).is_file():
            raise KubeError(f"{archive}: no such image archive (bin/bootstrap --images builds the project's).")
        done = run(["ctr", "--address", lay.containerd_socket, "-n", "k8s.io", "images", "import", archive])
        names |= set(re.findall(r"unpacking (\S+) \(sha256:", done.stdout + done.stderr))
        say(f"loaded {archive}")
    return names


def node_images(lay: Layout) -> set[str]:
    status, body = api_get(lay, f"/api/v1/nodes/{NODE_NAME}")
    if status != 200:
        return set()
    return {name for image in json.loads(body).get("status", {}).get("images") or [] for name in image["names"]}


def down(lay: Layout) -> int:
    t0 = time.monotonic()
    # The kubelet first, so it restarts nothing; then the pods' processes (everything in the node's
    # cgroups), then the daemons in reverse start order, then anything still naming the node.
    for name in ("kubelet",):
        pid = daemon_pid(lay, name)
        if pid:
            stop_pids([pid], name)
    pods = {
        int(p)
        for procs in Path("/sys/fs/cgroup").glob(f"*/{CGROUP_ROOT}/**/cgroup.procs")
        for p in procs.read_text().split()
    }
    if pods:
        # Nothing of a pod outlives the node, and a container's PID 1 without a handler ignores
        # SIGTERM: killed at once.
        stop_pids(pods, "the pods' processes", graceful=False)
    for name in reversed(DAEMONS):
        pid = daemon_pid(lay, name)
        if pid:
            stop_pids([pid], name)
    left = stray_pids(lay)
    if left:
        stop_pids(left, f"processes left of the node ({sorted(left)})", timeout=5.0)
    for target in _host_mounts_under(lay.root):
        run(["umount", target])
    if NETNS_PATH.exists():
        run(["ip", "netns", "del", NETNS])
    _remove_cgroups()
    if lay.root.exists():
        shutil.rmtree(lay.root)
    say(f"down in {time.monotonic() - t0:.1f}s")
    return 0


def status(lay: Layout) -> int:
    ok = True
    for name in DAEMONS:
        pid = daemon_pid(lay, name)
        ok &= pid is not None
        print(f"{name:24} {'running, pid ' + str(pid) if pid else 'not running'}")
    ready = lay.pki.is_dir() and node_ready(lay)
    ok &= ready
    print(f"{'node ' + NODE_NAME:24} {'Ready' if ready else 'not Ready'}")
    print(f"{'kubeconfig':24} {lay.kubeconfig if lay.kubeconfig.is_file() else '-'}")
    print(f"{'network namespace':24} {NETNS if NETNS_PATH.exists() else '-'}")
    return 0 if ok else 1


LAYOUT = layout_from_env()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bin/kube", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("up", help="start the node (a no-op when it is up)")
    sub.add_parser("down", help="stop it and remove everything it made")
    sub.add_parser("status", help="what runs; exit 1 unless all of it")
    loader = sub.add_parser(
        "load",
        help="import docker-archive images into the node's containerd (default: every image this checkout built)",
    )
    loader.add_argument("archives", nargs="*", type=Path)
    sub.add_parser("prometheus", help="run the Prometheus Operator and a Prometheus of every ServiceMonitor and rule")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.error("needs root (network and mount namespaces, cgroups); run it with sudo")
    try:
        if args.command == "up":
            return up(LAYOUT)
        if args.command == "down":
            return down(LAYOUT)
        if args.command == "status":
            return status(LAYOUT)
        if args.command == "prometheus":
            from toolchain.kubernetes import prometheus  # it imports this module

            return prometheus.install(LAYOUT)
        return load(LAYOUT, args.archives)
    except KubeError as error:
        say(f"ERROR: {error}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
