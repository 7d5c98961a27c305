"""Class-data sharing (CDS) archives for the local platform's JVMs: brokers, Connect workers and
the storage format tool.

Most of a JVM's start-up here is loading and linking Kafka's classes. JDK 17 writes the classes a
run loaded to a dynamic archive when the JVM exits (`-XX:ArchiveClassesAtExit`) and maps them at
a later start (`-XX:SharedArchiveFile`). Measured side by side on 2 cores
(bench/jvm_start, bench/results/jvm_start-20261126.md), CPU until ready with the archive against
without: broker 0.56x, Connect worker 0.53x, format tool 0.61x.

- One archive per main class and classpath, kept beside the classpath directory (the bootstrap's
  cache: `$MM2_CACHE/kafka-<version>/class-archives/`), keyed by the JDK, the main class and every
  jar's name, size and modification time; the JVM checks it again itself and, should it not match,
  starts without it (`-Xshare:auto`, silently).
- A JVM started while there is no archive writes `<key>.<writer>.writing` when it exits, where
  `<writer>` names its process (a restart of the same process overwrites its own). The next start
  promotes a complete one to `<key>.jsa` and removes the others: the JDK writes the header, with
  its magic number, last, so a file cut short by a SIGKILL during the write is never used.
  Replacing `<key>.jsa` while a JVM maps it is safe: the JVM keeps the old file open.
- Containers (Kubernetes, Docker) do not use this module.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

ARCHIVE_DIR = "class-archives"
# What a complete dynamic archive starts with: CDS_DYNAMIC_ARCHIVE_MAGIC, 0xf00baba8, little-endian.
DYNAMIC_MAGIC = bytes.fromhex("a8ab0bf0")
# CDS's own notices ("Skipping ...: Signed JAR", an archive that does not match) stay out of the
# process's stdout log; every other JVM warning still shows.
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
STALE_S = 3600.0  # an incomplete `.writing` file this old belongs to no running JVM: removed


def archive_options(classpath_dir: str, main_class: str, java: str, writer: str) -> tuple[str, ...]:
    """The JVM options for a start of `main_class`: map the archive when there is one, else write
    one at exit. No options when the classpath directory does not exist (nothing to key it on)."""
    final = archive_path(classpath_dir, main_class, java)
    if final is None:
        return ()
    if _promote(final):
        return sharing_options(final)
    token = hashlib.sha256(writer.encode()).hexdigest()[:12]
    return writing_options(final.with_name(f"{final.stem}.{token}.writing"))


def sharing_options(archive: Path) -> tuple[str, ...]:
    """Map `archive` at start."""
    return (f"-XX:SharedArchiveFile={archive}", *QUIET)


def writing_options(archive: Path) -> tuple[str, ...]:
    """Write the classes this run loads to `archive` at exit."""
    return (f"-XX:ArchiveClassesAtExit={archive}", *QUIET)


def is_complete(archive: Path) -> bool:
    """Whether the JVM finished writing `archive`: it writes the header, with the magic, last."""
    try:
        with archive.open("rb") as fh:
            return fh.read(len(DYNAMIC_MAGIC)) == DYNAMIC_MAGIC
    except OSError:
        return False


def archive_path(classpath_dir: str, main_class: str, java: str) -> Path | None:
    """`<classpath_dir>/../class-archives/<Main>-<key>.jsa`, its directory created; None when the
    classpath directory is missing or the directory cannot be made."""
    libs = Path(classpath_dir)
    try:
        jars = sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in os.scandir(libs) if e.is_file())
        directory = libs.parent / ARCHIVE_DIR
        directory.mkdir(exist_ok=True)
    except OSError:
        return None
    parts = [os.path.realpath(shutil.which(java) or java), main_class, *(f"{n}:{s}:{m}" for n, s, m in jars)]
    key = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    return directory / f"{main_class.rsplit('.', 1)[-1]}-{key}.jsa"


def _promote(final: Path) -> bool:
    """Whether `final` is in place after moving a complete `.writing` archive of its key there.

    Once it is, the other complete ones (JVMs that started together before any existed each wrote
    one) are removed; an incomplete one is removed once stale, as it may still be being written."""
    for candidate in sorted(final.parent.glob(f"{final.stem}.*.writing")):
        complete = is_complete(candidate)
        try:
            if complete and not final.exists():
                os.replace(candidate, final)
            elif complete or time.time() - candidate.stat().st_mtime > STALE_S:
                candidate.unlink()
        except OSError:
            continue  # another start promoted or removed it first
    return final.exists()
