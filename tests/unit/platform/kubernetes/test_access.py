"""Which kubeconfig contexts a stack deploys to, and the preview's problems when one is missing or
its API server does not answer (the dial is real, on 127.0.0.1)."""

from __future__ import annotations

import dataclasses
import json
import socket
from pathlib import Path

from components.platform.kubernetes.access import (
    Server,
    Target,
    access_problems,
    merged,
    missing_images,
    reference,
    resolve,
    targets,
)
from tests.unit.platform.helpers import prod_settings, prod_topology


def kubeconfig(server: str, contexts: tuple[str, ...] = ("mm2-kube",), current: str = "mm2-kube") -> dict:
    return {
        "clusters": [{"name": "node", "cluster": {"server": server}}],
        "contexts": [{"name": c, "context": {"cluster": "node", "user": "admin"}} for c in contexts],
        "users": [{"name": "admin", "user": {}}],
        "current-context": current,
    }


def test_prod_deploys_to_its_two_contexts_each_named_by_the_first_key_that_uses_it() -> None:
    found = targets(prod_topology(), prod_settings())
    assert {t.context for t in found} == {"prod-us-east", "prod-eu-west"}
    assert all(t.key.startswith("mm2-platform:kubernetes.clusters.") for t in found)


def test_each_image_is_named_by_the_setting_that_sets_it() -> None:
    settings = prod_settings()
    found = {t.context: dict(t.images) for t in targets(prod_topology(), settings)}
    us = found["prod-us-east"]
    assert us[settings.cluster("us-east").image].startswith("mm2-platform:kubernetes.clusters.")
    assert (
        us[settings.group("to-us-east").watcher_image] == "mm2-platform:kubernetes.workerGroups.to-us-east.watcherImage"
    )


def test_rendering_to_a_directory_dials_nothing() -> None:
    settings = dataclasses.replace(prod_settings(), render_dir="/tmp/out")
    assert targets(prod_topology(), settings) == []


def test_a_missing_context_names_the_key_the_contexts_there_and_bin_kube() -> None:
    problem = resolve(kubeconfig("https://127.0.0.1:16443"), Target("prod-us", "k.context"), "/x/kubeconfig")
    assert isinstance(problem, str)
    assert problem.startswith("k.context: the kubeconfig context 'prod-us' does not exist in /x/kubeconfig")
    assert "(it has mm2-kube)" in problem and "bin/kube up" in problem


def test_an_exec_plugin_named_by_a_relative_path_is_refused_naming_the_fix() -> None:
    config = kubeconfig("https://h:1")
    config["users"][0]["user"] = {"exec": {"command": "bin/get-token"}}
    problem = resolve(config, Target(None, "k.context"), "/x")
    assert isinstance(problem, str) and problem.startswith("k.context: the user of kubeconfig context 'mm2-kube'")
    assert "relative path 'bin/get-token'" in problem and "Fix: name the plugin by its absolute path" in problem
    for command in ("/usr/local/bin/get-token", "aws"):
        config["users"][0]["user"] = {"exec": {"command": command}}
        assert isinstance(resolve(config, Target(None, "k"), "/x"), Server), command


def test_no_context_and_no_current_context_is_named() -> None:
    problem = resolve(kubeconfig("https://h:1", current=""), Target(None, "k.context"), "/x")
    assert isinstance(problem, str) and "no current context" in problem and "use-context" in problem


def test_the_current_context_resolves_to_its_server_with_the_scheme_default_port() -> None:
    server = resolve(kubeconfig("https://api.example.com"), Target(None, "k"), "/x")
    assert server == Server("mm2-kube", "https://api.example.com", "api.example.com", 443)


def test_files_merge_first_wins() -> None:
    first = kubeconfig("https://first:1", contexts=("a",), current="")
    second = kubeconfig("https://second:2", contexts=("a", "b"), current="b")
    config = merged([first, second])
    assert [c["name"] for c in config["contexts"]] == ["a", "b"]
    assert config["current-context"] == "b"
    server = resolve(config, Target("a", "k"), "/x")
    assert isinstance(server, Server) and server.host == "first"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_server_that_does_not_answer_is_a_problem_and_one_that_does_is_not(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    down = closed_port()
    path.write_text(json.dumps(kubeconfig(f"https://127.0.0.1:{down}")))
    problems = access_problems([Target("mm2-kube", "k.context")], {"KUBECONFIG": str(path)})
    assert len(problems) == 1
    assert f"context 'mm2-kube' (https://127.0.0.1:{down}) does not answer" in problems[0]
    assert "bin/kube up" in problems[0]
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        path.write_text(json.dumps(kubeconfig(f"https://127.0.0.1:{listening.getsockname()[1]}")))
        assert access_problems([Target("mm2-kube", "k.context")], {"KUBECONFIG": str(path)}) == []


def test_no_kubeconfig_at_all_is_one_problem(tmp_path: Path) -> None:
    problems = access_problems([Target(None, "k.context")], {"HOME": str(tmp_path)})
    assert problems == [
        f"k.context: the kubernetes platform needs a kubeconfig, and {tmp_path}/.kube/config does not exist. "
        "Fix: export KUBECONFIG=FILE; on this machine, `bin/kube up` starts a cluster "
        "(context mm2-kube; `--nodes 3` for three zones) and prints its kubeconfig."
    ]
    assert access_problems([], {"HOME": str(tmp_path)}) == []


def node(labels: dict[str, str], *names: str) -> dict:
    return {"metadata": {"labels": labels}, "status": {"images": [{"names": [n, f"{n}@sha256:00"]} for n in names]}}


def test_references_are_compared_as_containerd_names_them() -> None:
    assert reference("mm2-iac/kafka:4.3.1") == "docker.io/mm2-iac/kafka:4.3.1"
    assert reference("busybox:1") == "docker.io/library/busybox:1"
    assert reference("registry.example.com/kafka:9") == "registry.example.com/kafka:9"
    assert reference("localhost:5000/kafka:9") == "localhost:5000/kafka:9"


def test_an_image_is_missing_only_where_no_node_pulls() -> None:
    no_pulls = {"mm2-iac.dev/image-pulls": "none"}
    nodes = {"items": [node(no_pulls, "docker.io/mm2-iac/kafka:4.3.1")]}
    assert missing_images(nodes, ["mm2-iac/kafka:4.3.1", "mm2-iac/watcher:py3.13"]) == ["mm2-iac/watcher:py3.13"]
    # A node that pulls (no label) fetches what it lacks: nothing is missing at preview.
    nodes["items"].append(node({}, "docker.io/library/other:1"))
    assert missing_images(nodes, ["mm2-iac/watcher:py3.13"]) == []
    assert missing_images({"items": []}, ["mm2-iac/watcher:py3.13"]) == []
