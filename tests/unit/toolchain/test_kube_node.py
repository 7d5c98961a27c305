"""bin/kube's node, as data: every address it binds or dials stays on this machine, and the pause
image is the same archive from the same binary. (The node itself runs in the Kubernetes lane's
integration test, tests/integration/test_kube_node.py.)"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import tarfile
from pathlib import Path

import pytest

from toolchain.kubernetes import node, node_api, node_base

NODE_RANGES = [ipaddress.ip_network(n) for n in (node_base.NODE_NETWORK, node_base.CLUSTER_CIDR, node.SERVICE_RANGE)]
THREE = node_base.cluster_nodes(3)


def on_this_machine(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    return ip.is_loopback or ip.is_unspecified or any(ip in net for net in NODE_RANGES)


@pytest.fixture
def layout(tmp_path: Path) -> node.Layout:
    lay = node.Layout(root=tmp_path / "kube", bin=tmp_path / "bin", api_port=16443)
    lay.root.mkdir()
    return lay


def test_every_address_a_daemon_binds_or_dials_is_loopback_or_inside_the_nodes(layout: node.Layout) -> None:
    node.write_configs(layout, THREE)
    texts = [" ".join(node.daemon_argv(layout, d, n)) for d in node.DAEMONS for n in THREE]
    texts += [p.read_text() for p in layout.root.rglob("*") if p.is_file()]
    addresses = {m for text in texts for m in re.findall(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?![\d.])", text)}
    assert addresses, "no address found: the pattern is wrong"
    assert {a for a in addresses if not on_this_machine(a)} == set()


def test_the_host_side_listens_on_loopback_only(layout: node.Layout) -> None:
    forwarder = node.daemon_argv(layout, "forwarder")
    assert forwarder[1] == "TCP-LISTEN:16443,bind=127.0.0.1,fork,reuseaddr"
    node.write_configs(layout)
    server = json.loads(layout.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    assert server == "https://127.0.0.1:16443"


def test_pods_neither_masquerade_nor_ask_the_hosts_resolver(layout: node.Layout) -> None:
    node.write_configs(layout)
    (bridge,) = json.loads((layout.root / "cni" / "10-mm2-kube.conflist").read_text())["plugins"]
    assert bridge["ipMasq"] is False
    kubelet = json.loads((layout.root / "kubelet-config.json").read_text())
    assert Path(kubelet["resolvConf"]).read_text() == "nameserver 127.0.0.1\n"


def test_pause_archive_is_the_same_bytes_from_the_same_binary(tmp_path: Path) -> None:
    binary = tmp_path / "pause"
    binary.write_bytes(b"\x7fELF not really")
    first, second = tmp_path / "a.tar", tmp_path / "b.tar"
    node.pause_archive(binary, first)
    node.pause_archive(binary, second)
    assert first.read_bytes() == second.read_bytes()
    with tarfile.open(first) as tar:
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
    assert manifest[0]["RepoTags"] == [node.PAUSE_IMAGE]


def test_cluster_dns_answers_on_the_node_and_forwards_nothing(layout: node.Layout) -> None:
    node.write_configs(layout)
    kubelet = json.loads((layout.root / "kubelet-config.json").read_text())
    assert kubelet["clusterDNS"] == [node.NODE_IP]
    corefile = (layout.root / "Corefile").read_text()
    assert f"bind {node.NODE_IP}" in corefile and "kubernetes cluster.local" in corefile
    # Only the cluster's zones are served; a query for any other name has no server block to reach.
    assert re.findall(r"^(\S.*)\{$", corefile, re.M) == ["cluster.local:53 in-addr.arpa:53 ip6.arpa:53 "]
    assert "forward" not in corefile and "proxy" not in corefile


def test_every_daemon_user_has_a_certificate_and_a_role(layout: node.Layout) -> None:
    users = [r["metadata"]["name"] for r in node.ROLES.values()]
    bound = [o for path, o in node.BOOTSTRAP_OBJECTS if path.endswith("clusterrolebindings")]
    assert sorted(b["subjects"][0]["name"] for b in bound) == sorted(users)
    assert all(b["roleRef"]["name"] == b["subjects"][0]["name"] for b in bound)
    node.write_configs(layout)
    for cert in node.ROLES:
        assert (layout.root / f"{cert}.kubeconfig").is_file()


def test_up_installs_the_fetched_crds_and_waits_until_each_is_established(
    layout: node.Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout.crds.mkdir(parents=True)
    for kind in ("servicemonitors", "prometheusrules"):
        crd = {"kind": "CustomResourceDefinition", "metadata": {"name": f"{kind}.monitoring.coreos.com"}}
        (layout.crds / f"{kind}.json").write_text(json.dumps(crd))
    created: list[str] = []
    polls = {"n": 0}

    def create(lay: node.Layout, collection: str, obj: dict[str, object]) -> None:
        assert collection == node.CRDS
        created.append(str(obj["metadata"]["name"]))  # type: ignore[index]

    # What the API server answers for a definition as its controller takes it in: no status, then
    # conditions still null, then not yet Established, then Established.
    answers = [
        {},
        {"status": None},
        {"status": {"conditions": None, "storedVersions": ["v1"]}},
        {"status": {"conditions": [{"type": "Established", "status": "False"}]}},
    ]

    def get(lay: node.Layout, path: str, timeout: float = 3.0) -> tuple[int, bytes]:
        polls["n"] += 1
        done = {"status": {"conditions": [{"type": "Established", "status": "True"}]}}
        return 200, json.dumps(answers[polls["n"] - 1] if polls["n"] <= len(answers) else done).encode()

    monkeypatch.setattr(node_api, "api_create", create)
    monkeypatch.setattr(node_api, "api_get", get)
    names = node.install_crds(layout)
    assert names == created == ["prometheusrules.monitoring.coreos.com", "servicemonitors.monitoring.coreos.com"]
    assert polls["n"] >= len(answers) + 1


def test_without_fetched_crds_up_installs_none(layout: node.Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_api, "api_create", lambda *a: pytest.fail("nothing to create"))
    assert node.install_crds(layout) == []


def test_kube_router_runs_its_network_policy_controller_alone(layout: node.Layout) -> None:
    """Routing and the service proxy stay kube-proxy's and the bridge's: kube-router only enforces
    NetworkPolicy, inside the node's ranges (the advisory on v2.1.0 is in the proxy, not run)."""
    argv = node.daemon_argv(layout, "kube-router")
    assert {"--run-firewall=true", "--run-router=false", "--run-service-proxy=false"} <= set(argv)
    assert f"--service-cluster-ip-range={node.SERVICE_RANGE}" in argv
    assert "--service-node-port-range=30000-30099" in argv
    assert "kube-router" not in node.HOST_DAEMONS  # inside the node's network namespace


def test_each_node_has_its_own_address_subnet_zone_runtime_and_cgroup(layout: node.Layout) -> None:
    node.write_configs(layout, THREE)
    kubelets = [json.loads((layout.node_dir(n) / "kubelet-config.json").read_text()) for n in THREE]
    assert [k["address"] for k in kubelets] == ["10.200.0.1", "10.200.0.2", "10.200.0.3"]
    assert len({k["cgroupRoot"] for k in kubelets}) == len({k["containerRuntimeEndpoint"] for k in kubelets}) == 3
    subnets = [ipaddress.ip_network(n.pod_subnet) for n in THREE]
    assert all(s.subnet_of(ipaddress.ip_network(node_base.CLUSTER_CIDR)) for s in subnets)
    assert not any(a.overlaps(b) for i, a in enumerate(subnets) for b in subnets[i + 1 :])
    for n, subnet in zip(THREE, subnets, strict=True):
        (bridge,) = json.loads((layout.node_dir(n) / "cni" / "10-mm2-kube.conflist").read_text())["plugins"]
        assert bridge["ipam"]["ranges"] == [[{"subnet": str(subnet)}]]
        kubelet = node.daemon_argv(layout, "kubelet", n)
        assert f"--hostname-override={n.name}" in kubelet
        labels = next(a for a in kubelet if a.startswith("--node-labels=")).split("=", 1)[1].split(",")
        assert f"topology.kubernetes.io/zone={n.zone}" in labels
    assert [n.zone for n in THREE] == ["zone-a", "zone-b", "zone-c"]
    # The first node keeps the one-node cluster's names; every node's kubelet has a certificate of its name.
    assert THREE[0].name == node.NODE_NAME and THREE[0].netns == node.NETNS
    assert [n.daemon("kubelet") for n in THREE] == ["kubelet", "kubelet-2", "kubelet-3"]


def test_the_other_nodes_reach_the_api_server_on_the_first_nodes_address(layout: node.Layout) -> None:
    node.write_configs(layout, THREE)
    for n in THREE:
        for user in ("kubelet", "kube-proxy", "kube-router"):
            config = json.loads((layout.node_dir(n) / f"{user}.kubeconfig").read_text())
            assert config["clusters"][0]["cluster"]["server"] == f"https://{node.NODE_IP}:{node.API_PORT}"


@pytest.mark.parametrize("given", ["0", "-1", "three", "10"])
def test_a_node_count_out_of_range_is_refused_naming_the_limit(given: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        node.main(["up", "--nodes", given])
    assert exit_.value.code == 2
    limit = node_base.node_limit(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    assert f"1 to {limit}" in capsys.readouterr().err


def test_an_unknown_flag_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        node.main(["up", "--zones", "3"])
    assert "unrecognized arguments: --zones" in capsys.readouterr().err


def test_the_node_limit_follows_memory() -> None:
    gib = 2**30
    assert node_base.node_limit(24 * gib) == 6
    assert node_base.node_limit(2 * gib) == 1
    assert node_base.node_limit(1024 * gib) == node_base.MAX_NODES


@pytest.mark.parametrize(("nodes", "index"), [(3, 1), (3, 4), (1, 2), (3, 0)])
def test_losing_the_first_node_or_one_the_cluster_lacks_is_refused(layout: node.Layout, nodes: int, index: int) -> None:
    layout.count_file.write_text(f"{nodes}\n")
    for act in (node.lose_node, node.start_node):
        with pytest.raises(
            node.KubeError, match=rf"node {index}: the cluster runs {nodes} node\(s\).*Fix: name a node from 2"
        ):
            act(layout, index)


def test_losing_a_node_when_none_runs_is_refused(tmp_path: Path) -> None:
    lay = node.Layout(root=tmp_path / "absent", bin=tmp_path / "bin", api_port=16443)
    with pytest.raises(node.KubeError, match="the cluster runs 0 node"):
        node.lose_node(lay, 2)


def test_a_node_that_runs_is_not_started_again(layout: node.Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    layout.count_file.write_text("3\n")
    monkeypatch.setattr(node, "daemon_pid", lambda lay, name: 4242 if name == "kubelet-2" else None)
    with pytest.raises(node.KubeError, match=r"node mm2-kube-2 runs already \(kubelet\). Fix: bin/kube lose-node 2"):
        node.start_node(layout, 2)
