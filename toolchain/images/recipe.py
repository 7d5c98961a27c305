"""What goes into the project's container images, and the docker-archive metadata derived from it.

Pure: no I/O. `build.py` runs debootstrap, reads the files and writes the archives.

An image is two layers: a Debian root filesystem (`Base`: debootstrap's minbase of a pinned
suite plus named packages, and the unprivileged user the pods run as) and the project's own
layer (`Entry`s: jars, scripts, configuration). Its cache key covers every input, so an image is
rebuilt when, and only when, an input changes; its id is the digest of its config, which names
the digest of each layer, so a changed input also changes the recorded id.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from components.platform.image_layout import (
    BROKER_DATA_DIR,
    BROKER_SECRETS_FILE,
    BROKER_TLS_DIR,
    CONFIG_DIR,
    IMAGE_GROUP_ID,
    IMAGE_USER,
    IMAGE_USER_ID,
    JMX_AGENT_JAR,
    KAFKA_HOME,
    KAFKA_IMAGE,
    REST_USERS_DIR,
    RUNTIME_DIR,
    WATCHER_IMAGE,
)

EPOCH = "1970-01-01T00:00:00Z"  # the project layer's files and the config carry no build time
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The Prometheus Operator's image on bin/kube's node (tagged with the operator's version).
MONITORING_REPOSITORY = "mm2-iac/prometheus-operator"


@dataclass(frozen=True)
class Base:
    """A Debian root filesystem: debootstrap's minbase of `suite` with `packages`."""

    name: str
    suite: str
    packages: tuple[str, ...]

    def key(self) -> str:
        text = json.dumps({"suite": self.suite, "packages": sorted(self.packages), "user": _user()}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Entry:
    """One file of the project layer: where it goes, the sha256 of its content, its mode and owner."""

    path: str
    sha256: str
    mode: int = 0o644
    uid: int = 0


@dataclass(frozen=True)
class Image:
    name: str  # the cache folder's prefix: kafka, watcher
    tag: str
    base: Base
    entries: tuple[Entry, ...] = ()
    writable_dirs: tuple[str, ...] = ()  # created empty, owned by the image user
    env: Mapping[str, str] = field(default_factory=dict)
    cmd: tuple[str, ...] = ()
    workdir: str = "/"
    entrypoint: tuple[str, ...] = ()  # what runs when a pod gives only `args`

    def key(self) -> str:
        """Every input: the base's, each file's path, digest, mode and owner, and the config."""
        text = json.dumps(
            {
                "base": self.base.key(),
                "entries": sorted((e.path, e.sha256, e.mode, e.uid) for e in self.entries),
                "dirs": sorted(self.writable_dirs),
                "config": _runtime_config(self),
            },
            sort_keys=True,
        )
        return hashlib.sha256(text.encode()).hexdigest()


def _user() -> str:
    return f"{IMAGE_USER}:{IMAGE_USER_ID}:{IMAGE_GROUP_ID}"


def jre_base(suite: str) -> Base:
    # curl: the brokers' init container asks the API server for its node's zone (rack.py).
    return Base("jre", suite, ("openjdk-17-jre-headless", "curl"))


def python_base(suite: str) -> Base:
    # python-is-python3: the watcher and lag exporter pods run `python -m ...`, as in a stock
    # Python image. python3-confluent-kafka (trixie: 1.7.0 on librdkafka 2.8.0, with SASL/SCRAM
    # and TLS; bookworm's librdkafka 2.0.2 cannot log in to Kafka 4 with SCRAM, see
    # WATCHER_DEBIAN_SUITE): the lag exporter's Kafka client, Debian's build, so the pod installs nothing.
    # ca-certificates: librdkafka verifies a TLS cluster without a truststoreLocation against the
    # system CAs, as the workers' JVM does against its own.
    return Base("python", suite, ("python3", "python-is-python3", "python3-confluent-kafka", "ca-certificates"))


def kafka_image(
    suite: str, kafka_version: str, jars: Mapping[str, str], scripts: Mapping[str, str], agent: str
) -> Image:
    """Broker, Connect and MirrorMaker 2 on one classpath, with the JMX exporter agent baked in.

    `jars`: file name -> sha256 of each jar of the classpath; `scripts`: path under KAFKA_HOME
    (bin/..., config/...) -> sha256; `agent`: sha256 of the exporter agent jar.
    """
    tag_version = KAFKA_IMAGE.rsplit(":", 1)[1]
    if tag_version != kafka_version:
        raise ValueError(
            f"image_layout.KAFKA_IMAGE is {KAFKA_IMAGE} but toolchain/versions.env pins Kafka {kafka_version}. "
            "Fix: make KAFKA_IMAGE's tag the pinned Kafka version."
        )
    entries = [Entry(f"{KAFKA_HOME}/libs/{name}", digest) for name, digest in jars.items()]
    entries += [
        Entry(f"{KAFKA_HOME}/{path}", digest, 0o755 if path.startswith("bin/") else 0o644)
        for path, digest in scripts.items()
    ]
    entries.append(Entry(JMX_AGENT_JAR, agent))
    dirs = (
        BROKER_DATA_DIR,
        RUNTIME_DIR,
        CONFIG_DIR,
        REST_USERS_DIR,
        BROKER_TLS_DIR,
        BROKER_SECRETS_FILE.rsplit("/", 1)[0],
    )
    return Image(
        name="kafka",
        tag=KAFKA_IMAGE,
        base=jre_base(suite),
        entries=tuple(entries),
        writable_dirs=dirs,
        env={"KAFKA_HOME": KAFKA_HOME, "LANG": "C.UTF-8", "PATH": f"{KAFKA_HOME}/bin:{PATH}"},
        cmd=(f"{KAFKA_HOME}/bin/kafka-server-start.sh",),
        workdir=KAFKA_HOME,
    )


def watcher_image(suite: str) -> Image:
    """Python and Debian's confluent-kafka: the watcher's and the lag exporter's modules are
    mounted, nothing is installed at start."""
    return Image(
        name="watcher",
        tag=WATCHER_IMAGE,
        base=python_base(suite),
        env={"LANG": "C.UTF-8", "PATH": PATH, "PYTHONDONTWRITEBYTECODE": "1"},
        cmd=("python", "--version"),
    )


def monitoring_image(suite: str, operator_version: str, operator: str, reloader: str) -> Image:
    """Debian's prometheus with the Prometheus Operator and its config reloader (built from their
    Go module): one image for the operator's Deployment and for each Prometheus it runs, whose
    server container gets only `args` (the entrypoint) and whose reloader runs
    /bin/prometheus-config-reloader (Debian's /bin is /usr/bin). `operator`, `reloader`: sha256s."""
    entries = (
        Entry("/usr/bin/prometheus-operator", operator, 0o755),
        Entry("/usr/bin/prometheus-config-reloader", reloader, 0o755),
    )
    return Image(
        name="monitoring",
        tag=f"{MONITORING_REPOSITORY}:{operator_version}",
        base=Base("prometheus", suite, ("prometheus",)),
        entries=entries,
        writable_dirs=("/prometheus",),
        env={"LANG": "C.UTF-8", "PATH": PATH},
        entrypoint=("/usr/bin/prometheus",),
        workdir="/prometheus",
    )


def _runtime_config(image: Image) -> dict[str, object]:
    config: dict[str, object] = {
        "User": f"{IMAGE_USER_ID}:{IMAGE_GROUP_ID}",
        "Env": [f"{k}={v}" for k, v in sorted(image.env.items())],
        "Cmd": list(image.cmd),
        "WorkingDir": image.workdir,
        "Labels": {"io.mm2-iac.image": image.name},
    }
    if image.entrypoint:  # only where set: the other images' keys stay as they were
        config["Entrypoint"] = list(image.entrypoint)
    return config


def image_config(image: Image, diff_ids: Sequence[str], base_created_by: str) -> bytes:
    """The image config (OCI/Docker), byte for byte: its sha256 is the image id."""
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": EPOCH,
        "config": _runtime_config(image),
        "rootfs": {"type": "layers", "diff_ids": list(diff_ids)},
        "history": [
            {"created": EPOCH, "created_by": base_created_by},
            {"created": EPOCH, "created_by": f"mm2-iac {image.name} layer", "comment": image.key()},
        ],
    }
    return json.dumps(config, sort_keys=True, separators=(",", ":")).encode()


def archive_manifest(tag: str, config_name: str, layer_names: Sequence[str]) -> bytes:
    """`manifest.json` of a docker-archive (what `docker load` and `ctr images import` read)."""
    return json.dumps([{"Config": config_name, "RepoTags": [tag], "Layers": list(layer_names)}]).encode()
