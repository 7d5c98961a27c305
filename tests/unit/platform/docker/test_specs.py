"""Docker container specs for brokers and workers."""

from __future__ import annotations

import pytest

from components.platform.settings import DockerSettings

from ..helpers import DOCKER, SECRET_VALUES, parse_properties, topology


def test_docker_broker_specs_follow_seed_001_on_the_host_network() -> None:
    from components.platform.docker.specs import docker_broker_specs, docker_connect_specs

    topo = topology(DOCKER)
    [b0, b1] = docker_broker_specs(topo.clusters["kafka2"], "unit", DockerSettings())
    assert (b0.name, b1.name) == ("mm2-unit-kafka2-0", "mm2-unit-kafka2-1")
    assert b1.image == "mm2-iac/kafka:4.3.1" and b1.restart == "unless-stopped" and b1.stack == "unit"
    props = parse_properties(b1.uploads["/etc/mm2/config/server.properties"])
    assert "listeners" not in props  # per broker, in its start script
    assert props["inter.broker.listener.name"] == "CLIENT"
    assert props["listener.security.protocol.map"] == "CLIENT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"
    # The local platform's port plan on loopback: broker i on port+2i, its controller on port+2i+1.
    assert props["controller.quorum.voters"] == "0@127.0.0.1:29193,1@127.0.0.1:29195"
    script = b1.uploads["/etc/mm2/config/start.sh"]
    assert "listeners=CLIENT://127.0.0.1:29194,CONTROLLER://127.0.0.1:29195" in script
    assert "advertised.listeners=CLIENT://127.0.0.1:29194" in script
    assert b1.healthcheck[1].endswith("/dev/tcp/127.0.0.1/29194'")
    [secret_file] = b1.secret_uploads
    assert secret_file.render(SECRET_VALUES) == "kafka2.mm2.password=k2-Zq89\n"
    workers = docker_connect_specs(topo.worker_groups["connect"], topo, "unit", DockerSettings())
    worker = parse_properties(workers[1].uploads["/etc/mm2/config/connect-distributed.properties"])
    assert worker["listeners"] == "http://127.0.0.1:28084"
    assert workers[1].healthcheck[1].endswith("/dev/tcp/127.0.0.1/28084'")
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


def test_docker_specs_refuse_other_platforms() -> None:
    from components.platform.docker.specs import docker_broker_specs

    config = {**DOCKER, "clusters": {**DOCKER["clusters"]}}
    config["clusters"]["kafka1"] = {**DOCKER["clusters"]["kafka1"], "platform": "kubernetes"}
    config["clusters"]["kafka1"].pop("port")
    topo = topology(config)
    with pytest.raises(ValueError, match="not a docker cluster"):
        docker_broker_specs(topo.clusters["kafka1"], "unit", DockerSettings())
