"""The local node's volume provisioner, as data: which claims it serves, the volume it makes for one,
and which volumes it removes (the daemon itself runs in tests/integration/test_kube_node.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolchain.kubernetes import provisioner as p


def claim(phase: str = "Pending", by: str = p.PROVISIONER, volume: str = "") -> dict[str, Any]:
    return {
        "metadata": {
            "name": "data-kafka-0",
            "namespace": "mm2",
            "uid": "1234",
            "annotations": {"volume.kubernetes.io/storage-provisioner": by},
        },
        "spec": {
            "storageClassName": "standard",
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "2Gi"}},
            **({"volumeName": volume} if volume else {}),
        },
        "status": {"phase": phase},
    }


def test_serves_only_pending_unbound_claims_of_its_own_class() -> None:
    assert p.wanted(claim())
    assert not p.wanted(claim(phase="Bound"))
    assert not p.wanted(claim(volume="pvc-1234"))
    assert not p.wanted(claim(by="ebs.csi.aws.com"))


def test_the_volume_is_bound_to_the_claim_on_the_node(tmp_path: Path) -> None:
    volume = p.volume_for(claim(), "mm2-kube", tmp_path / "pvc-1234", "Delete")
    spec = volume["spec"]
    assert volume["metadata"]["name"] == "pvc-1234"
    assert spec["claimRef"] == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "namespace": "mm2",
        "name": "data-kafka-0",
        "uid": "1234",
    }
    assert spec["capacity"] == {"storage": "2Gi"} and spec["storageClassName"] == "standard"
    # `local`, not hostPath: the kubelet gives a local volume to the pod's fsGroup.
    assert spec["local"] == {"path": str(tmp_path / "pvc-1234")}
    (term,) = spec["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert term["matchExpressions"][0]["values"] == ["mm2-kube"]


def test_a_claim_that_waited_for_its_pod_gets_its_volume_on_the_pods_node(tmp_path: Path) -> None:
    waited = claim()
    waited["metadata"]["annotations"][p.SELECTED_NODE] = "mm2-kube-3"
    volume = p.volume_for(waited, "mm2-kube", tmp_path / "pvc-1234", "Delete")
    (term,) = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["mm2-kube-3"]}]


def test_removes_only_its_released_volumes_whose_policy_says_delete(tmp_path: Path) -> None:
    volume = p.volume_for(claim(), "mm2-kube", tmp_path / "pvc-1234", "Delete")
    assert not p.released(volume | {"status": {"phase": "Bound"}})
    assert p.released(volume | {"status": {"phase": "Released"}})
    kept = p.volume_for(claim(), "mm2-kube", tmp_path / "pvc-1234", "Retain")
    assert not p.released(kept | {"status": {"phase": "Released"}})
    foreign = volume | {"metadata": {"name": "pv-x", "annotations": {}}, "status": {"phase": "Released"}}
    assert not p.released(foreign)
