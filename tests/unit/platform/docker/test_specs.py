"""Docker container specs for brokers, workers and Kafka UI."""

from __future__ import annotations

import pytest

from components.platform.settings import DockerSettings

from ..helpers import DOCKER, SECRET_VALUES, parse_properties, topology


def test_docker_broker_specs_follow_seed_001() -> None:
    from components.platform.docker.specs import docker_broker_specs, docker_connect_specs

    topo = topology(DOCKER)
    [b0, b1] = docker_broker_specs(topo.clusters["kafka2"], "unit", DockerSettings())
    assert (b0.name, b1.name) == ("mm2-unit-kafka2-0", "mm2-unit-kafka2-1")
    assert b1.ports == ((9092, 29194),)
    props = parse_properties(b1.uploads["/etc/mm2/config/server.properties"])
    assert props["inter.broker.listener.name"] == "INTERNAL"
    assert props["listener.security.protocol.map"] == "CLIENT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT"
    assert props["controller.quorum.voters"] == "0@mm2-unit-kafka2-0:9093,1@mm2-unit-kafka2-1:9093"
    script = b1.uploads["/etc/mm2/config/start.sh"]
    assert "advertised.listeners=CLIENT://127.0.0.1:29194,INTERNAL://mm2-unit-kafka2-1:9091" in script
    [secret_file] = b1.secret_uploads
    assert secret_file.render(SECRET_VALUES) == "kafka2.mm2.password=k2-Zq89\n"
    workers = docker_connect_specs(topo.worker_groups["connect"], topo, "unit", DockerSettings())
    assert [w.host_network for w in workers] == [True, True]
    worker = parse_properties(workers[1].uploads["/etc/mm2/config/connect-distributed.properties"])
    assert worker["listeners"] == "http://127.0.0.1:28084"
    users = next(u for u in workers[0].secret_uploads if u.path.endswith("users.properties"))
    assert users.render(SECRET_VALUES) == "mm2-admin: rest-Zq90\n"
    for spec in (b0, b1, *workers):
        for text in (*spec.uploads.values(), *spec.env.values()):
            assert not any(v in text for v in SECRET_VALUES.values())


def test_docker_refuses_tls() -> None:
    import dataclasses

    from components.platform.docker.specs import docker_broker_specs
    from components.topology import SecurityProtocol

    cluster = topology(DOCKER).clusters["kafka1"]
    tls = dataclasses.replace(
        cluster, security=dataclasses.replace(cluster.security, protocol=SecurityProtocol.SASL_SSL)
    )
    with pytest.raises(ValueError, match="does not provision TLS"):
        docker_broker_specs(tls, "unit", DockerSettings())


def test_kafka_ui_config_resolves_secrets_only_in_its_secret_file() -> None:
    import json

    from components.platform.docker.specs import docker_kafka_ui_spec
    from components.platform.settings import docker_settings

    topo = topology(DOCKER)
    spec = docker_kafka_ui_spec(topo, "unit", docker_settings({"kafkaUi": {"enabled": True, "port": 8081}}))
    assert spec.env["SERVER_PORT"] == "8081" and spec.host_network
    [upload] = spec.secret_uploads
    config = json.loads(upload.render(SECRET_VALUES))
    clusters = {c["name"]: c for c in config["kafka"]["clusters"]}
    assert clusters["kafka1"]["bootstrapServers"] == "127.0.0.1:29092"
    assert 'password="k1-Zq88"' in clusters["kafka1"]["properties"]["sasl.jaas.config"]
    assert clusters["kafka2"]["kafkaConnect"] == [
        {"name": "connect", "address": "http://127.0.0.1:28083", "username": "mm2-admin", "password": "rest-Zq90"}
    ]
    with pytest.raises(KeyError, match=r"kafka1\.mm2\.password"):
        upload.render({})


def test_docker_specs_refuse_other_platforms() -> None:
    from components.platform.docker.specs import docker_broker_specs

    config = {**DOCKER, "clusters": {**DOCKER["clusters"]}}
    config["clusters"]["kafka1"] = {**DOCKER["clusters"]["kafka1"], "platform": "kubernetes"}
    config["clusters"]["kafka1"].pop("port")
    topo = topology(config)
    with pytest.raises(ValueError, match="not a docker cluster"):
        docker_broker_specs(topo.clusters["kafka1"], "unit", DockerSettings())
