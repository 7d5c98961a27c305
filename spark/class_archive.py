"""A class-data sharing (CDS) archive for the driver JVM the stage launches itself (local master).

Most of a small stack's validation is the JVM loading and linking Spark's classes, at session
start and in the first job. JDK 17 can write the classes a run loaded to an archive when the JVM
exits (`-XX:ArchiveClassesAtExit`) and map them at the next start (`-XX:SharedArchiveFile`):
measured here, session start ~5-7 s -> ~4 s and the first job ~3.5 s -> ~1.7 s. The first local
run writes the archive (its exit takes some seconds longer); later runs use it. The archive lives
beside the Kafka source jars under ``$MM2_CACHE``, keyed by what it was made from (JDK, pyspark,
the jars); the JVM checks it again itself and, should it not match, starts without it. Under
spark-submit or on a cluster the stage launches no JVM, and nothing here applies.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spark.jars import cache_root, pyspark_version

EXIT_WAIT_S = 120.0  # the JVM writing the archive at exit (~10-20 s on 2 busy cores)
# Class-sharing notices ("Skipping ...: Signed JAR") would flood the terminal; errors still show.
QUIET = "-Xlog:disable -Xlog:all=error:stderr"


@dataclass(frozen=True)
class ClassArchive:
    """JVM options for this run; `writing`: the file this run's JVM writes at exit (then `final`)."""

    options: str
    final: Path
    writing: Path | None = None

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
    if final.exists():
        return ClassArchive(f"-XX:SharedArchiveFile={final} {QUIET}", final)
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


def _writer_alive(path: Path) -> bool:
    """Whether the run that names `path` (`<key>.<pid>.writing`) is still running."""
    try:
        pid = int(path.suffixes[-2].lstrip("."))
        os.kill(pid, 0)
    except (ValueError, IndexError, ProcessLookupError):
        path.unlink(missing_ok=True)  # left by a run that ended before moving it into place
        return False
    except PermissionError:
        return True
    return True
