"""The local node's volume provisioner: a folder in the node's state per PersistentVolumeClaim.

bin/kube runs it as one of the node's daemons, inside the node's network namespace, talking to
the API server as `system:mm2-kube-provisioner` (bound to PROVISIONER_ROLE by bin/kube up). For a
claim of the node's default StorageClass it makes `<state>/volumes/pvc-<uid>` and a `local`
PersistentVolume there, bound to the claim and to the node the scheduler chose for the claim's
first pod (the first node when it chose none); the kubelet then gives the folder to the pod's
fsGroup, as a cloud disk's CSI driver would (the in-tree host-path provisioner does not, so a
non-root pod could not write to its volume). A released volume of reclaim policy Delete is
removed with its folder; Retain keeps both. What kind's and k3s's local-path provisioners do,
with nothing to build or pull.

Claims and volumes are read every POLL_S seconds (a list of each; the node holds a few dozen).
"""

from __future__ import annotations

import json
import shutil
import ssl
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

PROVISIONER = "mm2-kube/local"
POLL_S = 1.0
SELECTED_NODE = "volume.kubernetes.io/selected-node"  # set by the scheduler on a claim that waited for its pod
CLAIM_ANNOTATIONS = ("volume.kubernetes.io/storage-provisioner", "volume.beta.kubernetes.io/storage-provisioner")


class Api:
    """The API server inside the node, as the provisioner's user."""

    def __init__(self, server: str, pki: Path) -> None:
        self.server = server
        self.context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self.context.load_cert_chain(str(pki / "provisioner.crt"), str(pki / "provisioner.key"))

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        request = urllib.request.Request(
            self.server + path,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Content-Type": "application/json"},
            method=method,
        )
        with urllib.request.urlopen(request, context=self.context, timeout=10) as response:
            answer: dict[str, Any] = json.loads(response.read() or b"{}")
            return answer


def volume_for(claim: dict[str, Any], node: str, folder: Path, reclaim: str) -> dict[str, Any]:
    """The PersistentVolume that serves `claim` from `folder` on the node the scheduler chose for
    the claim's first pod, else on `node` (pure)."""
    meta, spec = claim["metadata"], claim["spec"]
    node = (meta.get("annotations") or {}).get(SELECTED_NODE, node)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": f"pvc-{meta['uid']}",
            "annotations": {"pv.kubernetes.io/provisioned-by": PROVISIONER},
        },
        "spec": {
            "capacity": {"storage": spec["resources"]["requests"]["storage"]},
            "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
            "volumeMode": spec.get("volumeMode", "Filesystem"),
            "storageClassName": spec.get("storageClassName", ""),
            "persistentVolumeReclaimPolicy": reclaim,
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
            },
            "local": {"path": str(folder)},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
                    ]
                }
            },
        },
    }


def wanted(claim: dict[str, Any]) -> bool:
    """A claim waiting for this provisioner."""
    annotations = claim["metadata"].get("annotations") or {}
    return (
        claim.get("status", {}).get("phase") == "Pending"
        and not claim["spec"].get("volumeName")
        and any(annotations.get(a) == PROVISIONER for a in CLAIM_ANNOTATIONS)
    )


def released(volume: dict[str, Any]) -> bool:
    """A volume of this provisioner whose claim is gone and whose policy says delete it."""
    annotations = volume["metadata"].get("annotations") or {}
    return (
        annotations.get("pv.kubernetes.io/provisioned-by") == PROVISIONER
        and volume.get("status", {}).get("phase") in ("Released", "Failed")
        and volume["spec"].get("persistentVolumeReclaimPolicy") == "Delete"
    )


def provision_once(api: Api, node: str, volumes: Path, log: Any) -> None:
    classes = {c["metadata"]["name"]: c for c in api.call("GET", "/apis/storage.k8s.io/v1/storageclasses")["items"]}
    existing = {v["metadata"]["name"]: v for v in api.call("GET", "/api/v1/persistentvolumes")["items"]}
    for claim in api.call("GET", "/api/v1/persistentvolumeclaims")["items"]:
        name = f"pvc-{claim['metadata']['uid']}"
        if not wanted(claim) or name in existing:
            continue
        storage_class = classes.get(claim["spec"].get("storageClassName") or "", {})
        folder = volumes / name
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o777)  # the kubelet sets the pod's fsGroup on what is inside; the folder itself is open
        api.call("POST", "/api/v1/persistentvolumes", volume_for(claim, node, folder, _reclaim(storage_class)))
        log(f"provisioned {name} for {claim['metadata']['namespace']}/{claim['metadata']['name']} at {folder}")
    for volume in existing.values():
        if released(volume):
            folder = Path(volume["spec"]["local"]["path"])
            if folder.parent == volumes:  # never anything outside the node's own folder
                shutil.rmtree(folder, ignore_errors=True)
            api.call("DELETE", f"/api/v1/persistentvolumes/{volume['metadata']['name']}")
            log(f"deleted {volume['metadata']['name']} and {folder}")


def _reclaim(storage_class: dict[str, Any]) -> str:
    return str(storage_class.get("reclaimPolicy") or "Delete")


def main(argv: list[str]) -> int:
    server, pki, node, volumes = argv[0], Path(argv[1]), argv[2], Path(argv[3])
    api = Api(server, pki)

    def log(message: str) -> None:
        print(f"[provisioner] {message}", flush=True)

    log(f"serving StorageClass provisioner {PROVISIONER} from {volumes}")
    while True:
        try:
            provision_once(api, node, volumes, log)
        except (urllib.error.URLError, OSError, KeyError, ValueError) as error:
            log(f"retrying after: {error}")  # the API server restarting, a claim changing under us
        time.sleep(POLL_S)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
