"""Builds the project's container images as docker-archive files, with no registry and no daemon.

    python -m toolchain.images.build --cache DIR --kafka-libs DIR --jmx-agent JAR \
        --kafka-version V --suite SUITE --watcher-suite SUITE --index .mm2/images.json

The base layer is a Debian root filesystem made by debootstrap from Debian's packages (cached
per base key); the project layer is written byte for byte the same from the same inputs. Each
image lands in `<cache>/images/<name>-<key>/image.tar` (load it with `docker load -i`, or
`ctr -n k8s.io images import`) beside `record.json`: the tag, the key, the image id (its
content digest), each layer's digest and the Debian package versions. `--index` lists the
records of this checkout's images. An image whose key is already built is not rebuilt.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from components.platform.image_layout import IMAGE_GROUP_ID, IMAGE_USER, IMAGE_USER_ID, JMX_AGENT_JAR, KAFKA_HOME
from toolchain.images.recipe import (
    MONITORING_REPOSITORY,
    Base,
    Image,
    archive_manifest,
    image_config,
    kafka_image,
    monitoring_image,
    watcher_image,
)

HERE = Path(__file__).resolve().parent
KAFKA_FILES = HERE / "kafka"
# Left out of the base layer: package caches and documentation, which no container reads.
PRUNED = ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/info", "var/log")


class BuildError(RuntimeError):
    pass


@dataclass(frozen=True)
class Record:
    tag: str
    key: str
    id: str
    archive: str
    layers: tuple[str, ...]
    bytes: int
    packages: dict[str, str]

    def to_json(self) -> dict[str, object]:
        return {**self.__dict__, "layers": list(self.layers)}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def debian_mirror() -> str:
    """`MM2_DEBIAN_MIRROR`, else the first Debian mirror apt is configured with."""
    if mirror := os.environ.get("MM2_DEBIAN_MIRROR"):
        return mirror
    for source in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        for line in (source.read_text() if source.is_file() else "").splitlines():
            words = [w for w in line.split() if not w.startswith("[")]  # deb [signed-by=...] URI suite
            if words[:1] in (["URIs:"], ["deb"]) and len(words) > 1 and "security" not in words[1]:
                return words[1].rstrip("/")
    raise BuildError("no Debian mirror found in /etc/apt/sources.list*. Fix: set MM2_DEBIAN_MIRROR to one.")


def _run(cmd: list[str], log: Path, what: str) -> None:
    with log.open("ab") as out:
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise BuildError(f"{what} failed (exit {done.returncode}):\n{tail}\nFull log: {log}")


def build_base(base: Base, cache: Path, mirror: str) -> tuple[Path, str, dict[str, str]]:
    """The base layer's tar, its digest and package versions; built once per base key."""
    home = cache / f"base-{base.name}-{base.key()[:16]}"
    layer, meta = home / "layer.tar", home / "base.json"
    if meta.is_file() and layer.is_file():
        recorded = json.loads(meta.read_text())
        return layer, recorded["diff_id"], recorded["packages"]
    if os.geteuid() != 0:
        raise BuildError("debootstrap needs root to build the image base. Fix: run `sudo bin/bootstrap --images`.")
    if shutil.which("debootstrap") is None:
        raise BuildError("debootstrap not found. Fix: apt-get install debootstrap (bin/bootstrap --test-tools does).")
    shutil.rmtree(home.with_suffix(".tmp"), ignore_errors=True)
    work = home.with_suffix(".tmp")
    rootfs = work / "rootfs"
    work.mkdir(parents=True)
    log = work / "debootstrap.log"
    include = ",".join(base.packages)
    cmd = ["debootstrap", "--variant=minbase", f"--include={include}", base.suite, str(rootfs), mirror]
    _run(cmd, log, f"debootstrap of Debian {base.suite} with {include} (from the mirror apt is configured with)")
    user = [f"--uid={IMAGE_USER_ID}", f"--gid={IMAGE_GROUP_ID}", "--no-create-home", IMAGE_USER]
    _run(["chroot", str(rootfs), "groupadd", f"--gid={IMAGE_GROUP_ID}", IMAGE_USER], log, "adding the image group")
    _run(["chroot", str(rootfs), "useradd", *user], log, "adding the image user")
    packages = _packages(rootfs)
    for pruned in PRUNED:
        for child in (rootfs / pruned).glob("*"):
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
    out = work / "layer.tar"
    # GNU tar keeps devices, hard links, xattrs (file capabilities) and numeric owners as dpkg left them.
    tar = ["tar", "--sort=name", "--numeric-owner", "--xattrs", "--xattrs-include=*", "-C", str(rootfs)]
    _run([*tar, "--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*", "-cf", str(out), "."], log, "tar")
    diff_id = "sha256:" + sha256_file(out)
    (work / "base.json").write_text(json.dumps({"diff_id": diff_id, "packages": packages, "mirror": mirror}))
    shutil.rmtree(rootfs)
    shutil.rmtree(home, ignore_errors=True)
    work.rename(home)
    return layer, diff_id, packages


def _packages(rootfs: Path) -> dict[str, str]:
    listed = subprocess.run(
        ["dpkg-query", f"--admindir={rootfs}/var/lib/dpkg", "-W", "-f", "${Package} ${Version}\n"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split(" ", 1) for line in listed.splitlines() if line)


def write_layer(image: Image, sources: dict[str, Path], out: Path) -> str:
    """The project layer, deterministic: sorted, mtime 0, numeric owners. Returns its diff id."""
    uid = IMAGE_USER_ID
    dirs: set[str] = set()
    for path in [e.path for e in image.entries] + [f"{d}/x" for d in image.writable_dirs]:
        parts = path.strip("/").split("/")[:-1]
        dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    owned = {d.strip("/") for d in image.writable_dirs}
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for d in sorted(dirs):
            info = tarfile.TarInfo(d + "/")
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            info.uid = info.gid = uid if d in owned else 0
            tar.addfile(info)
        for entry in sorted(image.entries, key=lambda e: e.path):
            data = sources[entry.path].read_bytes()
            if hashlib.sha256(data).hexdigest() != entry.sha256:
                raise BuildError(f"{sources[entry.path]} changed while the image was built; run the build again.")
            info = tarfile.TarInfo(entry.path.strip("/"))
            info.size, info.mode, info.uid, info.gid = len(data), entry.mode, entry.uid, entry.uid
            tar.addfile(info, io.BytesIO(data))
    return "sha256:" + sha256_file(out)


def write_archive(image: Image, layers: list[tuple[str, Path]], base_created_by: str, out: Path) -> str:
    """A docker-archive of `image` with `layers` (diff id, tar); returns the image id."""
    config = image_config(image, [d for d, _ in layers], base_created_by)
    image_id = hashlib.sha256(config).hexdigest()
    names = [f"{diff_id.split(':', 1)[1]}/layer.tar" for diff_id, _ in layers]
    tmp = out.with_suffix(".tmp")
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
        _add_bytes(tar, f"{image_id}.json", config)
        for name, (_, path) in zip(names, layers, strict=True):
            info = tar.gettarinfo(str(path), arcname=name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            with path.open("rb") as f:
                tar.addfile(info, f)
        _add_bytes(tar, "manifest.json", archive_manifest(image.tag, f"{image_id}.json", names))
    tmp.rename(out)
    return "sha256:" + image_id


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def build_image(image: Image, sources: dict[str, Path], cache: Path, mirror: str) -> tuple[Record, bool]:
    """The image's record, building it unless its key is built already (then False)."""
    home = cache / f"{image.name}-{image.key()[:16]}"
    record_file = home / "record.json"
    if record_file.is_file() and (home / "image.tar").is_file():
        raw = json.loads(record_file.read_text())
        return Record(**{**raw, "layers": tuple(raw["layers"])}), False
    base_layer, base_id, packages = build_base(image.base, cache, mirror)
    work = home.with_suffix(".tmp")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    own_id = write_layer(image, sources, work / "layer.tar")
    created_by = f"debootstrap --variant=minbase --include={','.join(image.base.packages)} {image.base.suite}"
    layers = [(base_id, base_layer), (own_id, work / "layer.tar")]
    image_id = write_archive(image, layers, created_by, work / "image.tar")
    (work / "layer.tar").unlink()
    size = (work / "image.tar").stat().st_size
    record = Record(image.tag, image.key(), image_id, str(home / "image.tar"), (base_id, own_id), size, packages)
    (work / "record.json").write_text(json.dumps(record.to_json(), indent=2) + "\n")
    shutil.rmtree(home, ignore_errors=True)
    work.rename(home)
    _prune(cache, image.name, keep=home)
    return record, True


def _prune(cache: Path, name: str, keep: Path) -> None:
    """Older builds of the same image go: only the inputs of this checkout matter."""
    for old in cache.glob(f"{name}-*"):
        if old != keep and old.is_dir() and len(old.name) == len(keep.name):
            shutil.rmtree(old, ignore_errors=True)


def kafka_sources(libs: Path, agent: Path) -> tuple[dict[str, str], dict[str, str], dict[str, Path]]:
    """The Kafka image's inputs: jar digests, script digests, and every entry's source file."""
    jars = {p.name: sha256_file(p) for p in sorted(libs.glob("*.jar"))}
    if not jars:
        raise BuildError(f"no jars in {libs}. Fix: run bin/bootstrap, which resolves them from Maven Central.")
    scripts = {str(p.relative_to(KAFKA_FILES)): sha256_file(p) for p in sorted(KAFKA_FILES.rglob("*")) if p.is_file()}
    sources = {f"{KAFKA_HOME}/libs/{name}": libs / name for name in jars}
    sources.update({f"{KAFKA_HOME}/{rel}": KAFKA_FILES / rel for rel in scripts})
    sources[JMX_AGENT_JAR] = agent
    return jars, scripts, sources


def images(args: argparse.Namespace) -> Iterable[tuple[Image, dict[str, Path]]]:
    agent = Path(args.jmx_agent)
    if not agent.is_file():
        raise BuildError(f"JMX exporter agent {agent} missing. Fix: run bin/bootstrap, which resolves it.")
    jars, scripts, sources = kafka_sources(Path(args.kafka_libs), agent)
    kafka = kafka_image(args.suite, args.kafka_version, jars, scripts, sha256_file(agent))
    yield kafka, sources
    yield watcher_image(args.watcher_suite), {}
    if args.operator_bin:
        yield monitoring(Path(args.operator_bin), args.monitoring_suite, args.operator_version)


def monitoring(bin_dir: Path, suite: str, version: str) -> tuple[Image, dict[str, Path]]:
    """The operator's image, from the operator and reloader bin/bootstrap --kubernetes built."""
    binaries = {name: bin_dir / name for name in ("operator", "prometheus-config-reloader")}
    missing = [str(p) for p in binaries.values() if not p.is_file()]
    if missing or not version:
        raise BuildError(
            f"the Prometheus Operator's binaries ({', '.join(missing) or 'its version'}) are missing. "
            "Fix: bin/bootstrap --kubernetes, which builds them from their Go module."
        )
    operator, reloader = (sha256_file(p) for p in binaries.values())
    image = monitoring_image(suite, version, operator, reloader)
    sources = {
        "/usr/bin/prometheus-operator": binaries["operator"],
        "/usr/bin/prometheus-config-reloader": binaries["prometheus-config-reloader"],
    }
    return image, sources


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    for flag in ("--cache", "--kafka-libs", "--jmx-agent", "--kafka-version", "--suite", "--watcher-suite", "--index"):
        parser.add_argument(flag, required=True)
    # Also the Prometheus Operator's image for bin/kube's node: where its binaries are, its version.
    parser.add_argument("--operator-bin", default="")
    parser.add_argument("--operator-version", default="")
    parser.add_argument("--monitoring-suite", default="trixie")
    args = parser.parse_args(argv)
    cache = Path(args.cache) / "images"
    cache.mkdir(parents=True, exist_ok=True)
    records = []
    try:
        mirror = ""
        for image, sources in images(args):
            started = time.monotonic()
            if not (cache / f"{image.name}-{image.key()[:16]}" / "record.json").is_file():
                mirror = mirror or debian_mirror()
                print(f"[images] building {image.tag} from Debian {image.base.suite} packages ...", file=sys.stderr)
            record, built = build_image(image, sources, cache, mirror)
            records.append(record)
            if built:
                print(
                    f"[images] {record.tag}: built in {time.monotonic() - started:.0f}s, "
                    f"{record.bytes / 1e6:.0f} MB, id {record.id[:19]}",
                    file=sys.stderr,
                )
    except BuildError as exc:
        print(f"[images] ERROR: {exc}", file=sys.stderr)
        return 1
    # Merged: a build without the operator's image keeps the one a build with it recorded.
    index = Path(args.index)
    before = {} if args.operator_bin or not index.is_file() else json.loads(index.read_text())
    kept = {tag: r for tag, r in before.items() if tag.startswith(MONITORING_REPOSITORY + ":")}
    index.write_text(json.dumps({**kept, **{r.tag: r.to_json() for r in records}}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
