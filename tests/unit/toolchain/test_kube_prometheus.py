"""What `bin/kube prometheus` creates on the node (toolchain/kubernetes/prometheus.py), as data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolchain.kubernetes import prometheus
from toolchain.kubernetes.node import CRDS

IMAGE = "mm2-iac/prometheus-operator:0.85.0"


def _crds(tmp_path: Path) -> Path:
    operator = tmp_path / "operator"
    operator.mkdir()
    for kind in ("prometheuses", "podmonitors"):
        (operator / f"{kind}.json").write_text(
            json.dumps({"kind": "CustomResourceDefinition", "metadata": {"name": kind}})
        )
    for role in ("prometheus-operator", "prometheus"):
        (operator / f"role-{role}.json").write_text(json.dumps({"kind": "ClusterRole", "metadata": {"name": role}}))
    return tmp_path


def test_definitions_first_then_each_account_before_what_runs_as_it(tmp_path: Path) -> None:
    made = prometheus.objects(_crds(tmp_path), IMAGE)
    kinds = [obj["kind"] for _, obj in made]
    assert kinds[:2] == ["CustomResourceDefinition"] * 2 and all(c == CRDS for c, _ in made[:2])
    assert (
        kinds.index("Namespace") < kinds.index("ServiceAccount") < kinds.index("Deployment") < kinds.index("Prometheus")
    )
    bindings = {o["metadata"]["name"]: o for _, o in made if o["kind"] == "ClusterRoleBinding"}
    assert bindings["prometheus"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}
    ]
    assert bindings["prometheus-operator"]["roleRef"]["name"] == "prometheus-operator"


def test_one_prometheus_of_every_service_monitor_and_rule_on_the_operators_image(tmp_path: Path) -> None:
    made = {obj["kind"]: obj for _, obj in prometheus.objects(_crds(tmp_path), IMAGE)}
    spec = made["Prometheus"]["spec"]
    for selector in (
        "serviceMonitorSelector",
        "serviceMonitorNamespaceSelector",
        "ruleSelector",
        "ruleNamespaceSelector",
    ):
        assert spec[selector] == {}, selector  # empty: every one in every namespace
    assert spec["image"] == IMAGE and spec["version"] == prometheus.PROMETHEUS_VERSION
    [operator] = made["Deployment"]["spec"]["template"]["spec"]["containers"]
    assert operator["command"] == ["/usr/bin/prometheus-operator"]
    assert f"--prometheus-config-reloader={IMAGE}" in operator["args"]
    assert operator["securityContext"]["allowPrivilegeEscalation"] is False


def test_missing_roles_are_named(tmp_path: Path) -> None:
    (_crds(tmp_path) / "operator" / "role-prometheus.json").unlink()
    with pytest.raises(FileNotFoundError, match="definitions or roles are missing"):
        prometheus.objects(tmp_path, IMAGE)
