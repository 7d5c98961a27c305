"""A class-data sharing (CDS) archive for the driver JVM the stage launches itself (local master).

Most of a small stack's validation is the JVM loading and linking Spark's classes, at session
start and in the first job. JDK 17 can write the classes a run loaded to an archive when the JVM
exits (`-XX:ArchiveClassesAtExit`) and map them at the next start (`-XX:SharedArchiveFile`):
measured here, session start ~5-7 s -> ~4 s and the first job ~3.5 s -> ~1.7 s. The first local
run writes the archive (its exit takes some seconds longer); later runs use it. The archive lives
beside the Kafka source jars under ``$MM2_CACHE``, keyed by what it was made from (JDK, pyspark,
the jars); the JVM checks it again itself and, should it not match, starts without it. Under
spark-submit or on a cluster the stage launches no JVM, and nothing here applies.

The key names the checkout's pyspark install (the JVM checks the archive against the classpath,
which lies inside it), so every fresh clone writes an archive of its own (~170 MB). Each run
therefore prunes: a run holds its archive open under a shared lock (`flock`) and sets its
modification time, the last use; the archives beyond the `KEEP` most recently used, and those
unused for `IDLE_S`, are removed under an exclusive lock a running run's shared one refuses, so
no archive a run is using goes (one a JVM has already mapped may go: the JVM keeps the file).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from spark.jars import cache_root, pyspark_version

EXIT_WAIT_S = 120.0  # the JVM writing the archive at exit (~10-20 s on 2 busy cores)
# Class-sharing notices ("Skipping ...: Signed JAR") would flood the terminal; errors still show.
QUIET = "-Xlog:disable -Xlog:all=error:stderr"
KEEP = 3  # the most recently used archives kept: a few checkouts' worth, ~170 MB each
IDLE_S = 14 * 86400.0  # an archive no run used for this long goes, even among those
WRITING_STALE_S = 3600.0  # the JVM writes its archive within EXIT_WAIT_S of its exit


@dataclass(frozen=True)
class ClassArchive:
    """JVM options for this run; `writing`: the file this run's JVM writes at exit (then `final`)."""

    options: str
    final: Path
    writing: Path | None = None
    # `final` opened and share-locked while this run uses it: no pruning removes it meanwhile
    held: IO[bytes] | None = field(default=None, compare=False, repr=False)

    def release(self) -> None:
        """This run no longer needs the archive (its JVM mapped it at start): others may prune it."""
        if self.held is not None:
            self.held.close()

    def finish(self, spark: Any) -> None:
        """After `spark.stop()`: when this run writes the archive, end the JVM (it writes at exit),
        wait for it, and move the archive into place; a run that wrote none leaves nothing."""
        if self.writing is None:
            return
        from pyspark import SparkContext

        gateway: Any = SparkContext._gateway
        proc = getattr(gateway, "proc", None)
        if proc is None:
            return
        gateway.shutdown()
        SparkContext._gateway = None
        SparkContext._jvm = None
        if proc.stdin is not None:
            proc.stdin.close()  # the gateway JVM exits on EOF of its stdin
        try:
            proc.wait(timeout=EXIT_WAIT_S)
        except Exception:
            self.writing.unlink(missing_ok=True)
            return
        if proc.returncode == 0 and self.writing.exists() and self.writing.stat().st_size > 0:
            os.replace(self.writing, self.final)
        else:
            self.writing.unlink(missing_ok=True)


def class_archive(jars: list[str]) -> ClassArchive:
    """The archive to use, or to write when there is none yet (and no other run is writing one)."""
    directory = cache_root() / "spark-class-archive"
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"{archive_key(jars)}.jsa"
    held = _hold(final)
    prune(directory)
    if held is not None:
        return ClassArchive(f"-XX:SharedArchiveFile={final} {QUIET}", final, held=held)
    writing = final.with_suffix(f".{os.getpid()}.writing")
    if any(p for p in directory.glob(f"{final.stem}.*.writing") if _writer_alive(p)):
        return ClassArchive("", final)  # another run is writing it
    return ClassArchive(f"-XX:ArchiveClassesAtExit={writing} {QUIET}", final, writing)


def archive_key(jars: list[str]) -> str:
    """What the archive was made from: the JDK, pyspark (version and install) and the extra jars."""
    import pyspark

    java = os.environ.get("JAVA_HOME") or os.path.realpath(shutil.which("java") or "java")
    parts = [java, pyspark_version(), str(Path(pyspark.__file__).parent), *jars]
    return f"spark-{pyspark_version()}-" + hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def prune(directory: Path, keep: int = KEEP, idle_s: float = IDLE_S) -> list[Path]:
    """Remove the archives beyond the `keep` most recently used and those unused for `idle_s`,
    unless a run holds them, and the `.writing` files of runs that ended; the archives removed."""
    for writing in directory.glob("*.writing"):
        _writer_alive(writing)  # removes the file of a run that ended
    used: list[tuple[float, Path]] = []
    for archive in directory.glob("*.jsa"):
        try:
            used.append((archive.stat().st_mtime, archive))
        except OSError:
            continue  # removed meanwhile
    now = time.time()
    ranked = sorted(used, key=lambda u: u[0], reverse=True)
    return [a for rank, (at, a) in enumerate(ranked) if (rank >= keep or now - at > idle_s) and _remove_unheld(a)]


def _hold(final: Path) -> IO[bytes] | None:
    """`final` opened and share-locked, its last use set to now; None when there is none (or a
    pruning run removed it before the lock was had)."""
    try:
        held = final.open("rb")
    except OSError:
        return None
    try:
        fcntl.flock(held, fcntl.LOCK_SH)  # waits for a pruning run's exclusive lock, held briefly
        if os.fstat(held.fileno()).st_ino == final.stat().st_ino:
            _touch(final)
            return held
    except OSError:
        pass  # gone: removed while this run waited for the lock
    held.close()
    return None


def _touch(archive: Path) -> None:
    # Another user's archive in a shared cache cannot be touched: still held, only ranked older.
    with contextlib.suppress(OSError):
        os.utime(archive)


def _remove_unheld(archive: Path) -> bool:
    """Remove `archive` unless a run holds it (its shared lock refuses the exclusive one)."""
    try:
        with archive.open("rb") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.fstat(fh.fileno()).st_ino != archive.stat().st_ino:
                return False  # replaced by a new archive of its key meanwhile
            archive.unlink()
            return True
    except OSError:  # held (BlockingIOError), or removed meanwhile
        return False


def _writer_alive(path: Path) -> bool:
    """Whether the run that names `path` (`<key>.<pid>.writing`) is still writing it; the file of
    one that is not is removed. A file older than `WRITING_STALE_S` is no run's, whatever process
    has its pid now (pids repeat, in a fresh container at once)."""
    try:
        pid = int(path.suffixes[-2].lstrip("."))
        if time.time() - path.stat().st_mtime <= WRITING_STALE_S:
            os.kill(pid, 0)
            return True
    except PermissionError:
        return True  # another user's running process
    except (ValueError, IndexError, OSError):
        pass  # no pid in the name, or the run ended
    path.unlink(missing_ok=True)  # left by a run that ended before moving it into place
    return False
