"""What the local node runs from, written before any daemon starts: its certificates and
kubeconfigs, the pause image, the daemons' configuration files and command lines
(toolchain/kubernetes/node.py starts and stops them)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import tarfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from components.platform.image_layout import NO_PULLS_LABEL
from toolchain.kubernetes.node_base import (
    API_PORT,
    CLUSTER_CIDR,
    CLUSTER_DNS,
    CLUSTER_DOMAIN,
    FIRST,
    KUBE_ROUTER_HEALTH_PORT,
    NETNS_PATH,
    NODE_DAEMONS,
    NODE_IP,
    NODE_NAME,
    PAUSE_IMAGE,
    SERVICE_IP,
    SERVICE_RANGE,
    ZONE_LABEL,
    Layout,
    Node,
    run,
)
from toolchain.kubernetes.node_objects import ROLES

# --- certificates and kubeconfigs ---------------------------------------------------------------


def _openssl(*args: str) -> None:
    run(["openssl", *args])


def issue(pki: Path, name: str, subject: str, sans: Iterable[str] = (), usage: str = "clientAuth") -> None:
    """An EC P-256 key and a certificate from the node's CA (1 year)."""
    key, crt = pki / f"{name}.key", pki / f"{name}.crt"
    args = [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        str(key),
        "-out",
        str(crt),
        "-days",
        "365",
        "-subj",
        subject,
        "-CA",
        str(pki / "ca.crt"),
        "-CAkey",
        str(pki / "ca.key"),
        "-addext",
        "basicConstraints=critical,CA:FALSE",
        "-addext",
        "keyUsage=critical,digitalSignature,keyEncipherment",
        "-addext",
        f"extendedKeyUsage={usage}",
    ]
    sans = list(sans)
    if sans:
        args += ["-addext", "subjectAltName=" + ",".join(sans)]
    _openssl(*args)


def make_pki(pki: Path, nodes: Sequence[Node] = (FIRST,)) -> None:
    pki.mkdir(parents=True, exist_ok=True)
    os.chmod(pki, 0o700)
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        str(pki / "ca.key"),
        "-out",
        str(pki / "ca.crt"),
        "-days",
        "3650",
        "-subj",
        "/CN=mm2-kube-ca",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
    )
    names = [
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
        "localhost",
        NODE_NAME,
    ]
    issue(
        pki,
        "apiserver",
        "/CN=kube-apiserver",
        [f"DNS:{n}" for n in names] + [f"IP:{ip}" for ip in ("127.0.0.1", NODE_IP, SERVICE_IP)],
        usage="serverAuth",
    )
    issue(pki, "admin", "/O=system:masters/CN=mm2-kube-admin")
    issue(pki, "apiserver-kubelet-client", "/O=system:masters/CN=kube-apiserver-kubelet-client")
    issue(pki, "controller-manager", "/CN=system:kube-controller-manager")
    issue(pki, "scheduler", "/CN=system:kube-scheduler")
    for node in nodes:  # the Node authorizer knows a kubelet by its node's name
        issue(pki, node.daemon("kubelet"), f"/O=system:nodes/CN=system:node:{node.name}")
    issue(pki, "kube-proxy", "/CN=system:kube-proxy")  # bound to system:node-proxier by Kubernetes itself
    for user, role in ROLES.items():  # bound to their roles by bin/kube up
        issue(pki, user, f"/CN={role['metadata']['name']}")
    # The service-account token signing key.
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(pki / "sa.key"))
    _openssl("pkey", "-in", str(pki / "sa.key"), "-pubout", "-out", str(pki / "sa.pub"))


def kubeconfig(server: str, pki: Path, user: str) -> str:
    """A kubeconfig (JSON is YAML) naming the CA and a client certificate by path."""
    return (
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "preferences": {},
                "clusters": [
                    {"name": NODE_NAME, "cluster": {"server": server, "certificate-authority": str(pki / "ca.crt")}}
                ],
                "users": [
                    {
                        "name": user,
                        "user": {
                            "client-certificate": str(pki / f"{user}.crt"),
                            "client-key": str(pki / f"{user}.key"),
                        },
                    }
                ],
                "contexts": [{"name": NODE_NAME, "context": {"cluster": NODE_NAME, "user": user}}],
                "current-context": NODE_NAME,
            },
            indent=2,
        )
        + "\n"
    )


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
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "created": "1970-01-01T00:00:00Z",
            "config": {"Entrypoint": ["/pause"], "User": "65535:65535"},
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
            "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "bin/kube: toolchain/kubernetes/pause"}],
        },
        sort_keys=True,
    ).encode()
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


def write_configs(lay: Layout, nodes: Sequence[Node] = (FIRST,)) -> None:
    pki = lay.pki
    inside = f"https://127.0.0.1:{API_PORT}"
    (lay.root / "kubeconfig").write_text(kubeconfig(f"https://127.0.0.1:{lay.api_port}", pki, "admin"))
    for user in ("controller-manager", "scheduler", *ROLES):
        (lay.root / f"{user}.kubeconfig").write_text(kubeconfig(inside, pki, user))
    (lay.root / "Corefile").write_text(corefile(lay))
    # The resolver the kubelet hands on for names outside the cluster, which CoreDNS does not
    # forward anyway: a server that cannot exist in the node's network, so such a lookup fails
    # inside the node instead of asking the host's resolver, which may be off this machine.
    (lay.root / "resolv.conf").write_text("nameserver 127.0.0.1\n")
    for node in nodes:
        _node_configs(lay, node)


def _node_configs(lay: Layout, node: Node) -> None:
    """What one node's containerd, kubelet, kube-proxy and kube-router read. They reach the API
    server on the first node's address, over the nodes' link."""
    pki, here = lay.pki, lay.node_dir(node)
    here.mkdir(parents=True, exist_ok=True)
    for user in ("kubelet", "kube-proxy", "kube-router"):
        cert = node.daemon("kubelet") if user == "kubelet" else user
        (here / f"{user}.kubeconfig").write_text(kubeconfig(f"https://{NODE_IP}:{API_PORT}", pki, cert))
    cni = here / "cni"
    cni.mkdir(exist_ok=True)
    (cni / "10-mm2-kube.conflist").write_text(json.dumps(_cni(node), indent=2) + "\n")
    containerd = here / "containerd"
    containerd.mkdir(exist_ok=True)
    (containerd / "config.toml").write_text(_containerd_toml(containerd, lay.node_containerd_socket(node), cni))
    (here / "kubelet").mkdir(exist_ok=True)
    (here / "kubelet-config.json").write_text(json.dumps(_kubelet_config(lay, node), indent=2) + "\n")


def _cni(node: Node) -> dict[str, Any]:
    """The pods' bridge on this node, its subnet alone; the other nodes' subnets are routed over
    the nodes' link (toolchain/kubernetes/node_net.py)."""
    return {
        "cniVersion": "1.0.0",
        "name": "mm2-kube",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "mm2-pods",
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": node.pod_subnet}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                },
            }
        ],
    }


def _containerd_toml(containerd: Path, socket: Path, cni: Path) -> str:
    return f"""version = 2
root = "{containerd}/root"
state = "/run/containerd"

[grpc]
  address = "{socket}"

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
"""


def _kubelet_config(lay: Layout, node: Node) -> dict[str, Any]:
    pki = lay.pki
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node.ip,
        "port": 10250,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(pki / "ca.crt")},
        },
        "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{lay.node_containerd_socket(node)}",
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": f"/{node.cgroup_root}",
        "failCgroupV1": False,
        "failSwapOn": False,
        "resolvConf": str(lay.root / "resolv.conf"),
        "volumePluginDir": str(lay.node_dir(node) / "kubelet" / "volume-plugins"),
        "podLogsDir": str(lay.node_dir(node) / "pod-logs"),
        "clusterDomain": CLUSTER_DOMAIN,
        "clusterDNS": [CLUSTER_DNS],
        "registerNode": True,
        "serializeImagePulls": False,
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        # A shared disk fuller than the defaults allow (85%/10%) must not evict the pods, and no
        # image may be garbage-collected: nothing here can pull it again.
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "2%", "imagefs.available": "2%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
    }


def daemon_argv(lay: Layout, name: str, node: Node = FIRST) -> list[str]:
    """The command line of a daemon: the control plane's on the first node; `node`'s own
    instance of a NODE_DAEMONS one."""
    if name in NODE_DAEMONS:
        return _node_daemon_argv(lay, name, node)
    b, pki, r = lay.bin, lay.pki, lay.root
    if name == "forwarder":  # on the host: 127.0.0.1:<port> -> the UNIX socket the node listens on
        return ["socat", f"TCP-LISTEN:{lay.api_port},bind=127.0.0.1,fork,reuseaddr", f"UNIX-CONNECT:{lay.api_socket}"]
    if name == "api-socket":  # in the node: the UNIX socket -> the API server on the node's loopback
        return ["socat", f"UNIX-LISTEN:{lay.api_socket},fork,unlink-early", f"TCP:127.0.0.1:{API_PORT}"]
    if name == "etcd":
        return [
            str(b / "etcd"),
            "--name=mm2-kube",
            f"--data-dir={r / 'etcd'}",
            "--listen-client-urls=http://127.0.0.1:2379",
            "--advertise-client-urls=http://127.0.0.1:2379",
            "--listen-peer-urls=http://127.0.0.1:2380",
            "--initial-advertise-peer-urls=http://127.0.0.1:2380",
            "--initial-cluster=mm2-kube=http://127.0.0.1:2380",
            "--log-level=warn",
        ]
    if name == "kube-apiserver":
        return _apiserver_argv(lay)
    if name == "kube-controller-manager":
        return [
            str(b / "kube-controller-manager"),
            f"--kubeconfig={r / 'controller-manager.kubeconfig'}",
            f"--authentication-kubeconfig={r / 'controller-manager.kubeconfig'}",
            f"--authorization-kubeconfig={r / 'controller-manager.kubeconfig'}",
            "--bind-address=127.0.0.1",
            "--leader-elect=false",
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--root-ca-file={pki / 'ca.crt'}",
            f"--cluster-signing-cert-file={pki / 'ca.crt'}",
            f"--cluster-signing-key-file={pki / 'ca.key'}",
            # Its default, /usr/libexec/kubernetes/..., would be created on the host's disk.
            f"--flex-volume-plugin-dir={r / 'kubelet' / 'volume-plugins'}",
            "--profiling=false",
            "--v=1",
        ]
    if name == "kube-scheduler":
        return [
            str(b / "kube-scheduler"),
            f"--kubeconfig={r / 'scheduler.kubeconfig'}",
            f"--authentication-kubeconfig={r / 'scheduler.kubeconfig'}",
            f"--authorization-kubeconfig={r / 'scheduler.kubeconfig'}",
            "--bind-address=127.0.0.1",
            "--leader-elect=false",
            "--profiling=false",
            "--v=1",
        ]
    if name == "coredns":
        return [str(b / "coredns"), "-conf", str(r / "Corefile")]
    if name == "nodeports":  # on the host: binds 127.0.0.1, then moves into the node's network
        script = Path(__file__).with_name("nodeports.py")
        first, last = lay.node_ports
        return [sys.executable, str(script), str(NETNS_PATH), NODE_IP, str(first), str(last), str(r)]
    if name == "provisioner":
        script = Path(__file__).with_name("provisioner.py")
        return [sys.executable, str(script), f"https://127.0.0.1:{API_PORT}", str(pki), NODE_NAME, str(lay.volumes)]
    raise KeyError(name)


def _apiserver_argv(lay: Layout) -> list[str]:
    """The API server's command line: etcd on the node's loopback, its certificates, RBAC."""
    pki = lay.pki
    return [
        str(lay.bin / "kube-apiserver"),
        "--etcd-servers=http://127.0.0.1:2379",
        "--bind-address=0.0.0.0",
        f"--secure-port={API_PORT}",
        f"--advertise-address={NODE_IP}",
        f"--service-cluster-ip-range={SERVICE_RANGE}",
        f"--service-node-port-range={lay.node_ports[0]}-{lay.node_ports[1]}",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        f"--kubelet-client-certificate={pki / 'apiserver-kubelet-client.crt'}",
        f"--kubelet-client-key={pki / 'apiserver-kubelet-client.key'}",
        "--kubelet-preferred-address-types=InternalIP",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        "--allow-privileged=true",
        "--profiling=false",
        "--v=1",
    ]


def _node_daemon_argv(lay: Layout, name: str, node: Node) -> list[str]:
    b, r = lay.bin, lay.node_dir(node)
    if name == "containerd":
        return ["containerd", f"--config={r / 'containerd' / 'config.toml'}"]
    if name == "kubelet":
        return [
            str(b / "kubelet"),
            f"--config={r / 'kubelet-config.json'}",
            f"--kubeconfig={r / 'kubelet.kubeconfig'}",
            f"--root-dir={r / 'kubelet'}",
            f"--hostname-override={node.name}",
            f"--node-ip={node.ip}",
            # No registry is reachable from the node: the program's preview names a missing image.
            # The zone label is one the kubelet may set on its own node (NodeRestriction allows it).
            f"--node-labels={NO_PULLS_LABEL}=none,{ZONE_LABEL}={node.zone}",
            "--v=1",
        ]
    if name == "kube-proxy":
        return [
            str(b / "kube-proxy"),
            f"--kubeconfig={r / 'kube-proxy.kubeconfig'}",
            f"--hostname-override={node.name}",
            f"--cluster-cidr={CLUSTER_CIDR}",
            "--proxy-mode=iptables",
            "--bind-address=0.0.0.0",
            "--metrics-bind-address=127.0.0.1:10249",
            "--healthz-bind-address=127.0.0.1:10256",
            # Connection-tracking limits are the machine's, not the node's: left as they are.
            "--conntrack-max-per-core=0",
            "--conntrack-tcp-timeout-established=0",
            "--conntrack-tcp-timeout-close-wait=0",
            "--v=1",
        ]
    if name == "kube-router":  # NetworkPolicy, enforced with iptables and ipsets in the node
        first, last = lay.node_ports
        return [
            str(b / "kube-router"),
            f"--kubeconfig={r / 'kube-router.kubeconfig'}",
            f"--hostname-override={node.name}",
            "--run-firewall=true",
            "--run-router=false",
            "--run-service-proxy=false",
            "--enable-ipv4=true",
            "--enable-ipv6=false",
            f"--service-cluster-ip-range={SERVICE_RANGE}",
            f"--service-node-port-range={first}-{last}",
            f"--health-port={KUBE_ROUTER_HEALTH_PORT}",
            "--metrics-port=0",
            "--v=1",
        ]
    raise KeyError(name)


def corefile(lay: Layout) -> str:
    """CoreDNS on the node's address: the cluster's names from the API server, every other name
    refused (no forward plugin is built in: nothing is asked of a resolver off this machine)."""
    return f"""{CLUSTER_DOMAIN}:53 in-addr.arpa:53 ip6.arpa:53 {{
    bind {CLUSTER_DNS}
    errors
    ready 127.0.0.1:8181
    health 127.0.0.1:8080
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {lay.root / "coredns.kubeconfig"} {NODE_NAME}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    cache 5
    loadbalance
}}
"""
