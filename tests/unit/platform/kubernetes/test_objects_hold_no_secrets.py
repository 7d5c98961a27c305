"""No Kubernetes object holds a secret: secrets are mounted from Secrets and read through placeholders."""

from __future__ import annotations

from components.platform.kubernetes.connect_objects import connect_objects
from components.platform.kubernetes.kafka_objects import kafka_objects
from components.platform.topology_facts import kraft_cluster_id

from ..helpers import prod_settings, prod_topology
from .objects import connect, kafka, secret_leaks


def test_no_secret_literal_in_any_object() -> None:
    objs = (*kafka("a").all(), *kafka("b").all(), *connect().all())
    assert secret_leaks(objs) == []


def test_leak_check_can_fail() -> None:
    objs = connect()
    bad = dict(objs.config_map)
    bad["data"] = {**bad["data"], "connect-distributed.properties": "sasl.jaas.config=plain password=x\n"}
    assert secret_leaks((bad,)) == ["ConfigMap connect-distributed.properties: sasl.jaas.config is not a placeholder"]


def test_prod_settings_and_objects_build() -> None:
    topo = prod_topology()
    settings = prod_settings()
    assert settings.namespace == "mm2"
    assert settings.cluster("us-east").context == "prod-us-east"
    for alias, cluster in topo.clusters.items():
        objs = kafka_objects(cluster, settings, kraft_cluster_id("prod", alias))
        assert objs.stateful_set["spec"]["replicas"] == 3
        assert len(objs.external_services) == 4
        assert secret_leaks(objs.all()) == []
    for group in topo.worker_groups.values():
        objs = connect_objects(group, topo, settings)
        assert objs.url.startswith("https://mm2-connect.")
        assert objs.deployment["spec"]["replicas"] == 3
        assert secret_leaks(objs.all()) == []
