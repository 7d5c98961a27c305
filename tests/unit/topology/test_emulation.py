"""components/topology/emulation.py: where a local stack's datacenters live when its links are
emulated (namespaces, home addresses in one /24 of 198.18.0.0/15), and what listens where."""

from __future__ import annotations

import copy
import ipaddress
from typing import Any

from components.topology import bootstrap_servers, broker_properties, parse_topology, worker_rest_urls
from components.topology.emulated_network import NetworkPlan
from components.topology.emulation import (
    MAX_DATACENTERS,
    block_prefix,
    emulated_datacenters,
    emulation_problems,
    emulation_warnings,
    network_plan,
    stack_block,
    with_network,
)
from components.topology.model import LOOPBACK
from components.topology.runtime_config import worker_properties
from components.topology.tls import tls_plan
from tests.unit.platform.helpers import DOCKER
from tests.unit.topology.helpers import dev_config, external_cluster, wan, wan_config

ROOT = "/projects/mm2/.mm2/run/dev"
BENCHMARKS = ipaddress.ip_network("198.18.0.0/15")


def test_a_stack_without_links_stays_on_loopback() -> None:
    topology = parse_topology(dev_config())
    assert with_network(topology, "dev", ROOT) is topology
    assert network_plan(topology, "dev", ROOT) is None


def test_each_linked_datacenter_gets_a_namespace_and_a_home_address_in_the_stacks_block() -> None:
    plan = network_plan(wan(), "dev", ROOT)
    assert plan is not None
    block = ipaddress.ip_network(plan.block)
    assert block.prefixlen == 24 and block.subnet_of(BENCHMARKS)
    assert block.network_address == ipaddress.ip_address(f"{block_prefix(stack_block(ROOT))}.0")
    assert [dc.name for dc in plan.datacenters] == ["dc1", "dc2"]
    assert [dc.namespace for dc in plan.datacenters] == ["mm2-dev-dc1", "mm2-dev-dc2"]
    addresses = [a for dc in plan.datacenters for a in (dc.home, dc.outer_address, dc.inner_address)]
    addresses += [a for link in plan.links for a in (link.a_address, link.b_address)]
    assert len(set(addresses)) == len(addresses), "every address once"
    assert all(ipaddress.ip_address(a) in block for a in addresses)
    assert all(len(dc.outer_if) <= 15 for dc in plan.datacenters)  # the kernel's limit on a device name
    [link] = plan.links
    assert (link.name, link.a, link.b, link.rtt_ms, link.bandwidth_bps) == ("dc1<->dc2", 0, 1, 50.0, 200e6)


def test_the_plan_travels_to_the_provider_and_back_unchanged() -> None:
    plan = network_plan(wan(), "dev", ROOT)
    assert plan is not None
    carried: dict[str, Any] = plan.to_inputs()
    # Pulumi carries numbers as floats.
    carried["links"] = [{**link, "a": float(link["a"]), "b": float(link["b"])} for link in carried["links"]]
    assert NetworkPlan.from_inputs(carried) == plan


def test_clusters_and_their_workers_listen_on_their_datacenters_home_address() -> None:
    topology = with_network(wan(), "dev", ROOT)
    assert topology.network is not None
    home = {dc.name: dc.home for dc in topology.network.datacenters}
    primary, dr = topology.clusters["primary"], topology.clusters["dr"]
    assert (primary.host, dr.host) == (home["dc1"], home["dc2"])
    assert bootstrap_servers(dr) == f"{home['dc2']}:19192"
    props = broker_properties(dr, 0, "/data")
    assert props["advertised.listeners"].endswith(f"://{home['dc2']}:19192")
    assert "127.0.0.1:19193" in props["listeners"]  # the quorum stays on the namespace's loopback
    group = topology.worker_groups["mm2"]
    assert group.host == home["dc2"]
    assert worker_rest_urls(group)[0] == f"http://{home['dc2']}:18083"
    assert worker_properties(topology, group, 0)["rest.advertised.host.name"] == home["dc2"]
    assert topology.network.namespace_of(home["dc1"]) == "mm2-dev-dc1"
    assert topology.network.namespace_of(LOOPBACK) is None


def test_a_tls_cluster_in_a_namespace_is_certified_for_its_home_address() -> None:
    config = wan_config()
    config["clusters"]["dr"]["security"] = {"protocol": "SSL"}
    topology = with_network(parse_topology(config), "dev", ROOT)
    [leaf] = [leaf for leaf in tls_plan(topology, "dev").leaves if leaf.name == "cluster-dr"]
    assert f"IP:{topology.clusters['dr'].host}" in leaf.sans and "IP:127.0.0.1" in leaf.sans


def test_only_links_between_datacenters_with_local_clusters_are_emulated() -> None:
    config = wan_config()
    config["clusters"]["dr"] = external_cluster("dc2", "dr.example.com")
    config["workerGroups"]["mm2"]["cluster"] = "primary"
    topology = parse_topology(config)
    assert emulated_datacenters(topology) == ()
    assert with_network(topology, "dev", ROOT) is topology


def test_more_datacenters_than_a_block_holds_are_a_problem_naming_the_key() -> None:
    config = dev_config()
    count = MAX_DATACENTERS + 1
    for i in range(count):
        config["clusters"][f"c{i}"] = {
            "platform": "local",
            "port": 20000 + 10 * i,
            "datacenter": f"dc{i}",
            "security": {"protocol": "PLAINTEXT"},
        }
    config["links"] = {f"dc{i}<->dc{i + 1}": {"rtt": "10ms", "bandwidth": "1Gbit"} for i in range(count - 1)}
    [problem] = emulation_problems(parse_topology(config))
    assert problem.startswith("mm2:links:") and f"at most {MAX_DATACENTERS}" in problem and "Fix:" in problem


def test_two_stacks_on_a_machine_get_their_block_from_their_run_root() -> None:
    blocks = {stack_block(f"/projects/mm2/.mm2/run/stack-{i}") for i in range(64)}
    assert len(blocks) > 48  # spread over the 512 /24s, not one for all


def test_docker_parts_in_a_linked_datacenter_are_warned_to_stay_off_the_link() -> None:
    config = copy.deepcopy(DOCKER)
    config["clusters"]["kafka1"]["datacenter"] = "dc1"
    config["clusters"]["kafka2"]["datacenter"] = "dc2"
    config["links"] = {"dc1<->dc2": {"rtt": "50ms", "bandwidth": "200Mbit"}}
    warnings = emulation_warnings(parse_topology(config))
    assert [w.split(": ", 1)[0] for w in warnings] == [
        "mm2:clusters.kafka1",
        "mm2:clusters.kafka2",
        "mm2:workerGroups.connect",
    ]
    assert "its traffic does not cross the link" in warnings[0]
    del config["links"]
    assert emulation_warnings(parse_topology(config)) == []
    assert emulation_warnings(parse_topology(wan_config())) == []  # local clusters are emulated
