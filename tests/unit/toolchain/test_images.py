"""The container images' recipe and archive writer (toolchain/images), without debootstrap: the
base layer is a small tar put where the builder caches its base, so every other step is real."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from components.platform.image_layout import JMX_AGENT_JAR, KAFKA_IMAGE
from components.platform.local.deploy import CONNECT_MAIN, KAFKA_MAIN
from toolchain.images import build
from toolchain.images.recipe import Base, image_config, kafka_image, monitoring_image, watcher_image

ROOT = Path(__file__).resolve().parents[3]


def _inputs(tmp: Path, jar_text: bytes = b"jar-one") -> tuple[Path, Path, Path]:
    """A cache holding a fake base layer, a libs dir with one jar, and an agent jar."""
    cache, libs = tmp / "cache", tmp / "libs"
    libs.mkdir(parents=True, exist_ok=True)
    (libs / "kafka-clients.jar").write_bytes(jar_text)
    agent = tmp / "agent.jar"
    agent.write_bytes(b"agent")
    _fake_base(cache, kafka_image("bookworm", "4.3.1", {}, {}, "").base)
    return cache, libs, agent


def _fake_base(cache: Path, base: Base) -> None:
    """A small tar where the builder caches `base`, so debootstrap is not run."""
    home = cache / f"base-{base.name}-{base.key()[:16]}"
    home.mkdir(parents=True, exist_ok=True)
    with tarfile.open(home / "layer.tar", "w") as tar:
        info = tarfile.TarInfo("etc/os-release")
        info.size = 6
        tar.addfile(info, io.BytesIO(b"Debian"))
    digest = "sha256:" + build.sha256_file(home / "layer.tar")
    (home / "base.json").write_text(json.dumps({"diff_id": digest, "packages": {"bash": "5.2"}}))


def _build(cache: Path, libs: Path, agent: Path) -> build.Record:
    jars, scripts, sources = build.kafka_sources(libs, agent)
    image = kafka_image("bookworm", "4.3.1", jars, scripts, build.sha256_file(agent))
    record, _ = build.build_image(image, sources, cache, mirror="unused: the base is cached")
    return record


def test_the_same_inputs_give_the_same_image_and_a_changed_input_another(tmp_path: Path) -> None:
    first = _build(*_inputs(tmp_path / "a"))
    again = _build(*_inputs(tmp_path / "b"))  # built from scratch elsewhere: byte for byte the same
    assert (again.key, again.id, again.layers) == (first.key, first.id, first.layers)
    changed = _build(*_inputs(tmp_path / "c", jar_text=b"jar-two"))
    assert changed.key != first.key and changed.id != first.id
    assert changed.layers[0] == first.layers[0]  # the same base, another project layer


def test_an_image_already_built_is_not_rebuilt_and_older_builds_go(tmp_path: Path) -> None:
    cache, libs, agent = _inputs(tmp_path)
    first = _build(cache, libs, agent)
    jars, scripts, sources = build.kafka_sources(libs, agent)
    image = kafka_image("bookworm", "4.3.1", jars, scripts, build.sha256_file(agent))
    assert build.build_image(image, sources, cache, mirror="")[1] is False
    (libs / "kafka-clients.jar").write_bytes(b"jar-three")
    second = _build(cache, libs, agent)
    assert not Path(first.archive).exists() and Path(second.archive).exists()


def test_the_archive_is_one_docker_load_reads(tmp_path: Path) -> None:
    record = _build(*_inputs(tmp_path))
    with tarfile.open(record.archive) as tar:
        [manifest] = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        config_bytes = tar.extractfile(manifest["Config"]).read()  # type: ignore[union-attr]
        assert "sha256:" + hashlib.sha256(config_bytes).hexdigest() == record.id
        assert manifest["RepoTags"] == [KAFKA_IMAGE]
        config = json.loads(config_bytes)
        layers = [hashlib.sha256(tar.extractfile(n).read()).hexdigest() for n in manifest["Layers"]]  # type: ignore[union-attr]
        assert ["sha256:" + d for d in layers] == config["rootfs"]["diff_ids"] == list(record.layers)
        assert config["config"]["User"] == "1000:1000"
        with tarfile.open(fileobj=tar.extractfile(manifest["Layers"][1])) as own:
            names = own.getnames()
            agent = own.getmember(JMX_AGENT_JAR.lstrip("/"))
            assert agent.mtime == 0 and agent.uid == 0
            data_dir = own.getmember("var/lib/kafka/data")
            assert data_dir.isdir() and data_dir.uid == 1000  # writable by the image user
    assert "opt/kafka/libs/kafka-clients.jar" in names and "opt/kafka/bin/connect-distributed.sh" in names


def test_the_kafka_tag_is_the_pinned_kafka_version() -> None:
    pinned = dict(
        line.split("=", 1) for line in (ROOT / "toolchain/versions.env").read_text().splitlines() if "=" in line
    )
    assert KAFKA_IMAGE.endswith(":" + pinned["KAFKA_VERSION"])
    with pytest.raises(ValueError, match="KAFKA_IMAGE"):
        kafka_image("bookworm", "9.9.9", {}, {}, "")


def test_the_image_scripts_start_the_local_platforms_main_classes() -> None:
    bin_dir = ROOT / "toolchain/images/kafka/bin"
    assert KAFKA_MAIN in (bin_dir / "kafka-server-start.sh").read_text()
    assert CONNECT_MAIN in (bin_dir / "connect-distributed.sh").read_text()
    assert "kafka.tools.StorageTool" in (bin_dir / "kafka-storage.sh").read_text()


def test_the_python_image_carries_the_lag_exporters_kafka_client() -> None:
    """The watcher image runs the lag exporter too: Debian's confluent-kafka (and the system CAs
    librdkafka verifies TLS clusters against), so its pod installs nothing at start."""
    packages = watcher_image("bookworm").base.packages
    assert {"python3", "python-is-python3", "python3-confluent-kafka", "ca-certificates"} <= set(packages)


def test_the_operators_image_runs_prometheus_by_default_and_has_the_operators_binaries() -> None:
    """The operator gives the Prometheus container only `args` and runs its reloader as
    /bin/prometheus-config-reloader: the image's entrypoint is Debian's prometheus, the binaries
    sit in /usr/bin (Debian's /bin), and the other images' configs (and keys) have no entrypoint."""
    image = monitoring_image("bookworm", "0.85.0", "a" * 64, "b" * 64)
    assert image.tag == "mm2-iac/prometheus-operator:0.85.0"
    assert image.base.packages == ("prometheus",)
    assert {e.path: e.mode for e in image.entries} == {
        "/usr/bin/prometheus-operator": 0o755,
        "/usr/bin/prometheus-config-reloader": 0o755,
    }
    config = json.loads(image_config(image, ["sha256:x"], "debootstrap"))["config"]
    assert config["Entrypoint"] == ["/usr/bin/prometheus"]
    assert "Entrypoint" not in json.loads(image_config(watcher_image("bookworm"), ["sha256:x"], "d"))["config"]
    assert monitoring_image("bookworm", "0.85.0", "a" * 64, "c" * 64).key() != image.key()


def test_a_build_without_the_operators_image_keeps_it_in_the_index(tmp_path: Path) -> None:
    """bin/test's two bootstraps both build images: the one without --operator-bin must not drop
    the operator's image the other recorded."""
    _, libs, agent = _inputs(tmp_path)
    cache = tmp_path / "main"  # build.main caches under <cache>/images
    for image in (kafka_image("bookworm", "4.3.1", {}, {}, ""), watcher_image("bookworm")):
        _fake_base(cache / "images", image.base)
    index = tmp_path / "images.json"
    index.write_text(json.dumps({"mm2-iac/prometheus-operator:0.85.0": {"archive": "/x"}, "stale:1": {}}))
    args = ["--cache", str(cache), "--kafka-libs", str(libs), "--jmx-agent", str(agent), "--kafka-version", "4.3.1"]
    args += ["--suite", "bookworm", "--watcher-suite", "bookworm", "--index", str(index)]
    assert build.main(args) == 0
    assert set(json.loads(index.read_text())) == {
        KAFKA_IMAGE,
        watcher_image("bookworm").tag,
        "mm2-iac/prometheus-operator:0.85.0",
    }
