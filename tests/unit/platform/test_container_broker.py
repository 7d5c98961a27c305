"""components/platform/container_broker.py: the properties every container broker shares."""

from __future__ import annotations

from dataclasses import replace

import pytest

from components.platform.container_broker import BrokerNetwork, container_broker_properties
from components.topology import parse_topology
from components.topology.config_provider import FILE_PROVIDER_PROPERTIES
from components.topology.model import frozen_map
from tests.unit.topology.helpers import dev_config

NETWORK = BrokerNetwork(voter_host="b-{ordinal}", advertised_host="b-{ordinal}")


def test_brokers_resolve_file_placeholders() -> None:
    props = container_broker_properties(parse_topology(dev_config()).clusters["primary"], NETWORK)
    assert props.items() >= FILE_PROVIDER_PROPERTIES.items()


def test_owned_keys_in_a_hand_built_cluster_are_refused_as_on_the_local_platform() -> None:
    cluster = parse_topology(dev_config()).clusters["primary"]
    with pytest.raises(ValueError, match=r'cluster primary brokerConfig: "node\.id" is owned by a typed field'):
        container_broker_properties(replace(cluster, broker_config=frozen_map({"node.id": "7"})), NETWORK)
