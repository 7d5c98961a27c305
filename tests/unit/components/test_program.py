"""The program `__main__.py` runs (`components.program`): one validation pass over the `mm2` and
`mm2-platform` config, nothing registered on bad input, and the config read as `pulumi up` reads it.
The graph it registers on good input is tests/unit/components/test_graph.py."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pulumi
import pytest

from components.program import SECTIONS, StackConfigError, program, read_stack_config, validate
from components.topology import Platform
from tests.unit.mocks import mocked

from .program_harness import ROOT, namespace, stack_config, yaml_config


def dev_mm2() -> dict[str, Any]:
    return copy.deepcopy(namespace(yaml_config(ROOT / "Pulumi.dev.yaml"), "mm2"))


def test_a_good_config_validates_to_its_topology_and_platform_settings(tmp_path: Path) -> None:
    config = stack_config(yaml_config(ROOT / "Pulumi.prod.yaml"), tmp_path, stack="prod")
    valid = validate(config)
    assert {c.platform for c in valid.topology.clusters.values()} == {Platform.KUBERNETES}
    assert valid.kubernetes.kafka.storage_class == "ssd"  # from mm2-platform:kubernetes, not a default
    assert valid.docker.image  # defaults when the stack sets none


def test_every_problem_of_every_namespace_is_reported_at_once(tmp_path: Path) -> None:
    mm2 = dev_mm2()
    mm2["flows"]["primary->dr"]["settings"]["offset.lag.max"] = "lots"  # topology
    mm2["flows"]["primary->nowhere"] = {"workerGroup": "mm2", "topics": ["orders"]}  # topology
    platform = {"mm2-platform:kubernetes": {"namespace": "Not_A_Label"}, "mm2-platform:docker": {"kafkaUI": {}}}
    config = stack_config(platform, tmp_path, mm2=mm2)
    with pytest.raises(StackConfigError) as raised:
        validate(config)
    text = str(raised.value)
    assert text.startswith("invalid stack config for stack 'unit':")
    assert 'mm2:flows.primary->dr.settings["offset.lag.max"]' in text
    assert "primary->nowhere" in text
    assert "mm2-platform:kubernetes.namespace" in text
    assert "mm2-platform:docker.kafkaUI" in text


def test_a_loss_acknowledgement_is_judged_against_the_previews_clock(tmp_path: Path) -> None:
    mm2 = dev_mm2()
    mm2["flows"]["primary->dr"]["lossAcknowledged"] = "2026-11-18T11:06:40Z"
    config = stack_config({}, tmp_path, mm2=mm2)
    the_day_after = dataclasses.replace(config, clock=lambda: 1_795_086_400.0)
    assert validate(the_day_after).topology.flows[0].loss_acknowledged_at_ms == 1_795_000_000_000
    the_day_before = dataclasses.replace(config, clock=lambda: 1_794_913_600.0)
    with pytest.raises(StackConfigError) as raised:
        validate(the_day_before)
    assert "mm2:flows.primary->dr.lossAcknowledged: 2026-11-18T11:06:40Z is in the future" in str(raised.value)


def test_security_and_the_local_platform_are_checked_beside_the_platform_settings(tmp_path: Path) -> None:
    # Stack-wide security checks read a parsed topology: they run once the `mm2` config parses.
    mm2 = dev_mm2()
    mm2["clusters"]["primary"]["security"]["username"] = "admin"
    config = stack_config({"mm2-platform:docker": {"colour": "blue"}}, tmp_path, mm2=mm2)
    config = type(config)(**{**config.__dict__, "kafka_libs": str(tmp_path / "missing")})
    with pytest.raises(StackConfigError) as raised:
        validate(config)
    problems = raised.value.problems
    assert len(problems) == 3, problems
    assert any("mm2:clusters.primary.security.username" in p for p in problems)
    assert any("MM2_KAFKA_LIBS" in p and "bin/bootstrap" in p for p in problems)
    assert any("mm2-platform:docker.colour" in p for p in problems)


def test_the_kafka_jars_are_needed_only_by_a_stack_with_local_clusters(tmp_path: Path) -> None:
    config = stack_config(yaml_config(ROOT / "Pulumi.prod.yaml"), tmp_path, stack="prod")
    config = type(config)(**{**config.__dict__, "kafka_libs": ""})
    assert validate(config).topology.clusters


def test_bad_input_registers_nothing(tmp_path: Path) -> None:
    mm2 = dev_mm2()
    mm2["flows"]["primary->nowhere"] = {"workerGroup": "mm2", "topics": ["orders"]}
    config = stack_config({"mm2-platform:kubernetes": {"nope": 1}}, tmp_path, mm2=mm2)
    with mocked() as monitor:

        @pulumi.runtime.test
        def run() -> None:
            program(config)

        with pytest.raises(StackConfigError) as raised:
            run()
        assert [r.type for r in monitor.registrations if r.type != "pulumi:pulumi:Stack"] == []
    assert "primary->nowhere" in str(raised.value) and "mm2-platform:kubernetes.nope" in str(raised.value)
    # Nothing prepared on disk either: the run directory is made by the providers, after validation.
    assert not (tmp_path / ".mm2").exists()


def test_the_stack_config_is_read_from_both_namespaces(tmp_path: Path) -> None:
    raw = yaml_config(ROOT / "Pulumi.prod.yaml")
    with mocked(stack="prod"):
        pulumi.runtime.set_all_config({key: json.dumps(value) for key, value in raw.items()})
        read = read_stack_config(tmp_path)
    assert read.stack == "prod"
    sections = {k: v for k, v in namespace(raw, "mm2").items() if k in SECTIONS}
    assert read.mm2 == sections and {"clusters", "workerGroups", "flows"} <= set(read.mm2)
    assert read.platform == namespace(raw, "mm2-platform")
    assert read.project_dir == str(tmp_path)


def test_a_docker_stack_whose_engine_lacks_the_image_is_refused_with_the_rest(tmp_path: Path) -> None:
    from tests.unit.platform.helpers import DOCKER

    asked: list[list[str]] = []

    def engine_lacks(images: Any, claims: Any) -> list[str]:
        asked.append(list(images))
        rest = DOCKER["workerGroups"]["connect"]["restPort"]
        workers = [c.ports for c in claims if c.config_key == "mm2:workerGroups.connect.restPort"]
        assert workers == [(rest,), (rest + 1,)]  # the engine is asked about every port the stack takes
        return [f"image {images[0]} is not on the engine. Fix: run `bin/bootstrap --images`"]

    platform = {
        "mm2-platform:docker": {"image": "registry.example.com/kafka:9"},
        "mm2-platform:kubernetes": {"namespace": "Not_A_Label"},  # a problem beside the engine's
    }
    config = stack_config(platform, tmp_path, mm2=copy.deepcopy(DOCKER))
    with pytest.raises(StackConfigError) as raised:
        validate(dataclasses.replace(config, docker_problems=engine_lacks))
    text = str(raised.value)
    assert "registry.example.com/kafka:9 is not on the engine" in text and "bin/bootstrap --images" in text
    assert "mm2-platform:kubernetes.namespace" in text
    assert asked == [["registry.example.com/kafka:9"]]
    # A stack with no docker cluster or group never asks the engine.
    validate(dataclasses.replace(stack_config({}, tmp_path, mm2=dev_mm2()), docker_problems=engine_lacks))
    assert len(asked) == 1


def test_a_kubernetes_stack_whose_contexts_cannot_be_used_is_refused_before_anything_registers(
    tmp_path: Path,
) -> None:
    asked: list[list[str | None]] = []

    def unreachable(wanted: Any) -> list[str]:
        asked.append([t.context for t in wanted])
        return [f"{t.key}: the Kubernetes API server of context {t.context!r} does not answer" for t in wanted]

    prod = yaml_config(ROOT / "Pulumi.prod.yaml")
    config = dataclasses.replace(stack_config(prod, tmp_path, stack="prod"), kubernetes_problems=unreachable)
    with pytest.raises(StackConfigError) as raised:
        validate(config)
    assert sorted(asked[0], key=str) == ["prod-eu-west", "prod-us-east"]
    assert "context 'prod-us-east' does not answer" in str(raised.value)
    # A config with problems of its own is not worth dialing clusters for.
    bad = copy.deepcopy(prod)
    bad["mm2-platform:kubernetes"]["namespace"] = "Not_A_Label"
    with pytest.raises(StackConfigError):
        validate(dataclasses.replace(stack_config(bad, tmp_path, stack="prod"), kubernetes_problems=unreachable))
    assert len(asked) == 1


def test_the_container_platforms_secrets_must_all_be_given(tmp_path: Path) -> None:
    # The brokers' TLS store password is in no connector config, but the stack writes it into the
    # brokers' Secret: the credentials require it, so a stack without it fails at preview naming it.
    prod = yaml_config(ROOT / "Pulumi.prod.yaml")
    with mocked(stack="prod") as monitor:
        pulumi.runtime.test(lambda: program(stack_config(prod, tmp_path, stack="prod")))()
    state = next(r.state for urn, r in monitor.resources.items() if urn.endswith("Credentials::credentials"))
    assert {"us-east.broker.tls.password", "eu-west.broker.tls.password"} <= set(state["required"])
    assert "us-east.mm2.password" in state["required"]


def test_a_stack_whose_links_this_machine_cannot_emulate_is_refused_at_preview(tmp_path: Path) -> None:
    mm2 = dev_mm2()
    mm2["clusters"]["dr"]["datacenter"] = "dc2"
    mm2["links"] = {"dc1<->dc2": {"rtt": "50ms", "bandwidth": "200Mbit"}}
    asked: list[list[str]] = []

    def not_root(plan: Any) -> list[str]:
        asked.append([dc.namespace for dc in plan.datacenters])
        return ["mm2:links: the local platform emulates dc1<->dc2 ...; it needs root. Fix: run as root."]

    config = dataclasses.replace(stack_config({}, tmp_path, mm2=mm2), network_problems=not_root)
    with pytest.raises(StackConfigError) as raised:
        validate(config)
    assert "mm2:links: the local platform emulates dc1<->dc2" in str(raised.value)
    assert asked == [["mm2-unit-dc1", "mm2-unit-dc2"]]
    # Without links nothing is emulated and the machine is not asked.
    validate(dataclasses.replace(stack_config({}, tmp_path, mm2=dev_mm2()), network_problems=not_root))
    assert len(asked) == 1
