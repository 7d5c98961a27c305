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
forwarder on 127.0.0.1 (`MM2_KUBE_API_PORT`, default 16443) and a UNIX socket in the state folder.
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
import hashlib
import io
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NETNS = "mm2-kube"
NETNS_PATH = Path("/run/netns") / NETNS
NODE_NAME = "mm2-kube"
# Addresses that exist only inside the node's network namespace.
NODE_IP = "10.200.0.1"
POD_SUBNET = "10.201.0.0/24"
SERVICE_RANGE = "10.202.0.0/24"
SERVICE_IP = "10.202.0.1"  # the `kubernetes` Service: the range's first address
API_PORT = 6443  # inside the node
CGROUP_ROOT = "mm2-kube"  # the kubelet's cgroup root, in every cgroup hierarchy
PAUSE_IMAGE = "mm2-iac/pause:1"
# What the kubelet sets for the whole machine unless it reads these values already.
KERNEL_SETTINGS = {"vm/overcommit_memory": "1", "kernel/panic": "10", "kernel/panic_on_oops": "1"}
# Daemons in start order; `down` stops them in reverse.
DAEMONS = ("forwarder", "api-socket", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
           "containerd", "kubelet")
UP_TIMEOUT = float(os.environ.get("MM2_KUBE_TIMEOUT", "180"))


class KubeError(RuntimeError):
    """A part of the node did not start or stop; the message says which and how to look."""


@dataclass(frozen=True)
class Layout:
    """Where the node keeps its state, defined once."""

    root: Path
    bin: Path
    api_port: int

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def run(self) -> Path:
        return self.root / "run"

    @property
    def mntns(self) -> Path:
        return self.root / "mntns"

    @property
    def kubeconfig(self) -> Path:
        """The host's kubeconfig: the API server through the forwarder on 127.0.0.1."""
        return self.root / "kubeconfig"

    @property
    def containerd_socket(self) -> Path:
        return self.root / "containerd" / "containerd.sock"

    @property
    def api_socket(self) -> Path:
        return self.root / "run" / "api.sock"

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
    )


def _versions() -> dict[str, str]:
    pairs = (line.split("=", 1) for line in (ROOT / "toolchain" / "versions.env").read_text().splitlines()
             if "=" in line and not line.startswith("#"))
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


def in_node(argv: Sequence[str | os.PathLike[str]]) -> list[str]:
    """argv run inside the node's network and mount namespaces."""
    return ["nsenter", f"--net={NETNS_PATH}", f"--mount={LAYOUT.mntns}", "--", *map(str, argv)]


def node_http_ok(url: str) -> bool:
    """True when an http URL inside the node's network namespace answers 2xx."""
    result = subprocess.run(["nsenter", f"--net={NETNS_PATH}", "curl", "-sf", "-m", "2", "-o", "/dev/null", url],
                            capture_output=True)
    return result.returncode == 0


def port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


# --- certificates and kubeconfigs ---------------------------------------------------------------

def _openssl(*args: str) -> None:
    run(["openssl", *args])


def issue(pki: Path, name: str, subject: str, sans: Iterable[str] = (), usage: str = "clientAuth") -> None:
    """An EC P-256 key and a certificate from the node's CA (1 year)."""
    key, crt = pki / f"{name}.key", pki / f"{name}.crt"
    args = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(key),
            "-out", str(crt), "-days", "365", "-subj", subject,
            "-CA", str(pki / "ca.crt"), "-CAkey", str(pki / "ca.key"),
            "-addext", "basicConstraints=critical,CA:FALSE",
            "-addext", "keyUsage=critical,digitalSignature,keyEncipherment",
            "-addext", f"extendedKeyUsage={usage}"]
    sans = list(sans)
    if sans:
        args += ["-addext", "subjectAltName=" + ",".join(sans)]
    _openssl(*args)


def make_pki(pki: Path) -> None:
    pki.mkdir(parents=True, exist_ok=True)
    os.chmod(pki, 0o700)
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", str(pki / "ca.key"), "-out", str(pki / "ca.crt"), "-days", "3650", "-subj", "/CN=mm2-kube-ca",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature")
    names = ["kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
             "localhost", NODE_NAME]
    issue(pki, "apiserver", "/CN=kube-apiserver",
          [f"DNS:{n}" for n in names] + [f"IP:{ip}" for ip in ("127.0.0.1", NODE_IP, SERVICE_IP)], usage="serverAuth")
    issue(pki, "admin", "/O=system:masters/CN=mm2-kube-admin")
    issue(pki, "apiserver-kubelet-client", "/O=system:masters/CN=kube-apiserver-kubelet-client")
    issue(pki, "controller-manager", "/CN=system:kube-controller-manager")
    issue(pki, "scheduler", "/CN=system:kube-scheduler")
    issue(pki, "kubelet", f"/O=system:nodes/CN=system:node:{NODE_NAME}")
    # The service-account token signing key.
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(pki / "sa.key"))
    _openssl("pkey", "-in", str(pki / "sa.key"), "-pubout", "-out", str(pki / "sa.pub"))


def kubeconfig(server: str, pki: Path, user: str) -> str:
    """A kubeconfig (JSON is YAML) naming the CA and a client certificate by path."""
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": NODE_NAME, "cluster": {"server": server, "certificate-authority": str(pki / "ca.crt")}}],
        "users": [{"name": user, "user": {"client-certificate": str(pki / f"{user}.crt"),
                                           "client-key": str(pki / f"{user}.key")}}],
        "contexts": [{"name": NODE_NAME, "context": {"cluster": NODE_NAME, "user": user}}],
        "current-context": NODE_NAME,
    }, indent=2) + "\n"


# --- the pause image -----------------------------------------------------------------------------

def pause_archive(pause_binary: Path, out: Path) -> None:
    """A docker-archive holding one layer with /pause, written the same from the same binary."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("pause")
        data = pause_binary.read_bytes()
        info.size, info.mode, info.mtime = len(data), 0o755, 0
        tar.addfile(info, io.BytesIO(data))
    layer_bytes = layer.getvalue()
    diff_id = "sha256:" + hashlib.sha256(layer_bytes).hexdigest()
    config = json.dumps({
        "architecture": "amd64", "os": "linux", "created": "1970-01-01T00:00:00Z",
        "config": {"Entrypoint": ["/pause"], "User": "65535:65535"},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "bin/kube: toolchain/kubernetes/pause"}],
    }, sort_keys=True).encode()
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    layer_name = diff_id.split(":")[1] + "/layer.tar"
    manifest = json.dumps([{"Config": config_name, "RepoTags": [PAUSE_IMAGE], "Layers": [layer_name]}]).encode()
    tmp = out.with_suffix(".tmp")
    with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, blob in ((layer_name, layer_bytes), (config_name, config), ("manifest.json", manifest)):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(blob), 0o644, 0
            tar.addfile(info, io.BytesIO(blob))
    tmp.rename(out)


# --- configuration files -------------------------------------------------------------------------

def write_configs(lay: Layout) -> None:
    pki = lay.pki
    inside = f"https://127.0.0.1:{API_PORT}"
    (lay.root / "kubeconfig").write_text(kubeconfig(f"https://127.0.0.1:{lay.api_port}", pki, "admin"))
    for user in ("controller-manager", "scheduler", "kubelet"):
        (lay.root / f"{user}.kubeconfig").write_text(kubeconfig(inside, pki, user))
    cni = lay.root / "cni"
    cni.mkdir(exist_ok=True)
    (cni / "10-mm2-kube.conflist").write_text(json.dumps({
        "cniVersion": "1.0.0", "name": "mm2-kube",
        "plugins": [{
            "type": "bridge", "bridge": "mm2-pods", "isGateway": True, "ipMasq": False, "hairpinMode": True,
            "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_SUBNET}]], "routes": [{"dst": "0.0.0.0/0"}]},
        }],
    }, indent=2) + "\n")
    containerd = lay.root / "containerd"
    containerd.mkdir(exist_ok=True)
    (containerd / "config.toml").write_text(f"""version = 2
root = "{containerd}/root"
state = "/run/containerd"

[grpc]
  address = "{lay.containerd_socket}"

[plugins."io.containerd.internal.v1.opt"]
  path = "{containerd}/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  # The pause container asks for an OOM score below containerd's; lowering one needs
  # CAP_SYS_RESOURCE, which this machine does not grant even to root, and runc fails the sandbox
  # ("can't get final child's PID from pipe: EOF"). Kept at containerd's own score instead.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{cni}"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
""")
    kubelet = lay.root / "kubelet"
    kubelet.mkdir(exist_ok=True)
    # Pods resolve names through a server that cannot exist in their network: a lookup fails
    # inside the node instead of asking the host's resolver, which may be off this machine.
    (lay.root / "resolv.conf").write_text("nameserver 127.0.0.1\n")
    (lay.root / "kubelet-config.json").write_text(json.dumps({
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "address": NODE_IP, "port": 10250, "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1", "healthzPort": 10248,
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                           "x509": {"clientCAFile": str(pki / "ca.crt")}},
        "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{lay.containerd_socket}",
        "cgroupDriver": "cgroupfs", "cgroupRoot": f"/{CGROUP_ROOT}", "failCgroupV1": False,
        "failSwapOn": False, "resolvConf": str(lay.root / "resolv.conf"),
        "volumePluginDir": str(kubelet / "volume-plugins"), "podLogsDir": str(lay.root / "pod-logs"),
        "clusterDomain": "cluster.local", "registerNode": True,
        "serializeImagePulls": False, "rotateCertificates": False, "serverTLSBootstrap": False,
        # A shared disk fuller than the defaults allow (85%/10%) must not evict the pods, and no
        # image may be garbage-collected: nothing here can pull it again.
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "2%", "imagefs.available": "2%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
    }, indent=2) + "\n")


def daemon_argv(lay: Layout, name: str) -> list[str]:
    b, pki, r = lay.bin, lay.pki, lay.root
    if name == "forwarder":  # on the host: 127.0.0.1:<port> -> the UNIX socket the node listens on
        return ["socat", f"TCP-LISTEN:{lay.api_port},bind=127.0.0.1,fork,reuseaddr", f"UNIX-CONNECT:{lay.api_socket}"]
    if name == "api-socket":  # in the node: the UNIX socket -> the API server on the node's loopback
        return ["socat", f"UNIX-LISTEN:{lay.api_socket},fork,unlink-early", f"TCP:127.0.0.1:{API_PORT}"]
    if name == "etcd":
        return [str(b / "etcd"), "--name=mm2-kube", f"--data-dir={r / 'etcd'}",
                "--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
                "--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
                "--initial-cluster=mm2-kube=http://127.0.0.1:2380", "--log-level=warn"]
    if name == "kube-apiserver":
        return [str(b / "kube-apiserver"), "--etcd-servers=http://127.0.0.1:2379",
                "--bind-address=0.0.0.0", f"--secure-port={API_PORT}", f"--advertise-address={NODE_IP}",
                f"--service-cluster-ip-range={SERVICE_RANGE}",
                f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                f"--kubelet-client-certificate={pki / 'apiserver-kubelet-client.crt'}",
                f"--kubelet-client-key={pki / 'apiserver-kubelet-client.key'}",
                "--kubelet-preferred-address-types=InternalIP",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki / 'sa.pub'}", f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
                "--allow-privileged=true", "--profiling=false", "--v=1"]
    if name == "kube-controller-manager":
        return [str(b / "kube-controller-manager"), f"--kubeconfig={r / 'controller-manager.kubeconfig'}",
                f"--authentication-kubeconfig={r / 'controller-manager.kubeconfig'}",
                f"--authorization-kubeconfig={r / 'controller-manager.kubeconfig'}",
                "--bind-address=127.0.0.1", "--leader-elect=false", "--use-service-account-credentials=true",
                f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}",
                f"--cluster-signing-cert-file={pki / 'ca.crt'}", f"--cluster-signing-key-file={pki / 'ca.key'}",
                # Its default, /usr/libexec/kubernetes/..., would be created on the host's disk.
                f"--flex-volume-plugin-dir={r / 'kubelet' / 'volume-plugins'}",
                "--profiling=false", "--v=1"]
    if name == "kube-scheduler":
        return [str(b / "kube-scheduler"), f"--kubeconfig={r / 'scheduler.kubeconfig'}",
                f"--authentication-kubeconfig={r / 'scheduler.kubeconfig'}",
                f"--authorization-kubeconfig={r / 'scheduler.kubeconfig'}",
                "--bind-address=127.0.0.1", "--leader-elect=false", "--profiling=false", "--v=1"]
    if name == "containerd":
        return ["containerd", f"--config={r / 'containerd' / 'config.toml'}"]
    if name == "kubelet":
        return [str(b / "kubelet"), f"--config={r / 'kubelet-config.json'}", f"--kubeconfig={r / 'kubelet.kubeconfig'}",
                f"--root-dir={r / 'kubelet'}", f"--hostname-override={NODE_NAME}", f"--node-ip={NODE_IP}", "--v=1"]
    raise KeyError(name)


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
    if name != "forwarder":
        argv = in_node(argv)
    with lay.log(name).open("ab") as log:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True, cwd=lay.root)
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
            wait_for(f"{what} stopped", lambda: all(_proc_state(p) in (None, "Z") for p in pids),
                     timeout if sig == signal.SIGTERM else 10.0)
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

def api_get(lay: Layout, path: str, timeout: float = 3.0) -> tuple[int, bytes]:
    """GET through the host forwarder as the admin; (0, b"") when nothing answers."""
    context = ssl.create_default_context(cafile=str(lay.pki / "ca.crt"))
    context.load_cert_chain(str(lay.pki / "admin.crt"), str(lay.pki / "admin.key"))
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{lay.api_port}{path}", context=context,
                                    timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (OSError, ssl.SSLError):
        return 0, b""


def node_ready(lay: Layout) -> bool:
    status, body = api_get(lay, f"/api/v1/nodes/{NODE_NAME}")
    if status != 200:
        return False
    conditions = json.loads(body).get("status", {}).get("conditions", [])
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


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
        script = ["set -e",
                  # What the node would leave on the host (shim sockets, runc state, CNI results and
                  # IP leases, pod network namespace pins, container log links) stays in memory here.
                  "mount -t tmpfs -o mode=0755 mm2-kube-run /run",
                  "mount -t tmpfs -o mode=0755 mm2-kube-var-lib /var/lib",
                  "mount -t tmpfs -o mode=0755 mm2-kube-var-log /var/log",
                  "mkdir -p /run/netns"]
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
    binaries = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "pause")
    missing = [n for n in binaries if not os.access(lay.bin / n, os.X_OK)]
    if missing:
        raise KubeError(f"{', '.join(missing)} not in {lay.bin}. Fix: bin/bootstrap --kubernetes (builds, caches).")
    for tool in ("containerd", "ctr", "runc", "socat", "nsenter", "unshare", "ip", "curl", "openssl"):
        if shutil.which(tool) is None:
            raise KubeError(f"{tool} not on PATH. Fix: bin/bootstrap --kubernetes (installs Debian's containerd, runc, "
                            "containernetworking-plugins, socat).")
    if not port_free(lay.api_port):
        raise KubeError(f"127.0.0.1:{lay.api_port} is taken. Fix: free it, or pick another with MM2_KUBE_API_PORT.")
    t0 = time.monotonic()
    for folder in (lay.root, lay.logs, lay.run):
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
    wait_for(f"API server ready (through 127.0.0.1:{lay.api_port})",
             lambda: api_get(lay, "/readyz")[0] == 200, UP_TIMEOUT, lay.log("kube-apiserver"))
    start(lay, "kube-controller-manager")
    start(lay, "kube-scheduler")
    start(lay, "containerd")
    wait_for("containerd answering", lambda: run(["ctr", "--address", lay.containerd_socket, "version"],
                                                  check=False).returncode == 0, UP_TIMEOUT, lay.log("containerd"))
    load(lay, [_pause_image(lay)])
    start(lay, "kubelet")
    wait_for(f"node {NODE_NAME} Ready", lambda: node_ready(lay), UP_TIMEOUT, lay.log("kubelet"))
    # Pods are refused until their namespace's default service account exists.
    account = "/api/v1/namespaces/default/serviceaccounts/default"
    wait_for("the default service account", lambda: api_get(lay, account)[0] == 200, UP_TIMEOUT,
             lay.log("kube-controller-manager"))
    say(f"up in {time.monotonic() - t0:.1f}s: export KUBECONFIG={lay.kubeconfig}")
    print(lay.kubeconfig)
    return 0


def _pause_image(lay: Layout) -> Path:
    """Packed afresh on every start (milliseconds), so it is always the binary bootstrap built."""
    archive = lay.root / "pause.tar"
    pause_archive(lay.bin / "pause", archive)
    return archive


def load(lay: Layout, archives: Sequence[Path]) -> int:
    for archive in archives:
        if not Path(archive).is_file():
            raise KubeError(f"{archive}: no such image archive (bin/bootstrap --images builds the project's).")
        run(["ctr", "--address", lay.containerd_socket, "-n", "k8s.io", "images", "import", archive])
        say(f"loaded {archive}")
    return 0


def down(lay: Layout) -> int:
    t0 = time.monotonic()
    # The kubelet first, so it restarts nothing; then the pods' processes (everything in the node's
    # cgroups), then the daemons in reverse start order, then anything still naming the node.
    for name in ("kubelet",):
        pid = daemon_pid(lay, name)
        if pid:
            stop_pids([pid], name)
    pods = {int(p) for procs in Path("/sys/fs/cgroup").glob(f"*/{CGROUP_ROOT}/**/cgroup.procs")
            for p in procs.read_text().split()}
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
    loader = sub.add_parser("load", help="import docker-archive images into the node's containerd")
    loader.add_argument("archives", nargs="+", type=Path)
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
        return load(LAYOUT, args.archives)
    except KubeError as error:
        say(f"ERROR: {error}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
