"""Spark's Kafka source jars: resolved once with Maven, cached, then passed with `spark.jars`.

Why not `spark.jars.packages`: Spark resolves packages with Ivy and falls through to the Spark
Packages repository, which is unreachable on locked-down machines, and its cache location depends
on HOME. Maven copies the exact jars into one directory under ``$MM2_CACHE``; later runs read the
directory and need no network at all. Jars Spark already ships (scala-library, hadoop-client,
slf4j, lz4, snappy, jsr305, spark-tags, ...) are left out so the driver never sees two versions of
a class.

The Kafka source version is exactly the installed pyspark version (pinned to a release whose
Kafka source and token-provider jars are both on Maven Central: toolchain/versions.env).

Maven runs with its own settings and the user's (~/.m2/settings.xml, where mirrors belong): none
of ours. Spark's parent POM lists a mirror of Maven Central before Central itself; where that
mirror cannot be reached, Maven goes on to Central.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from spark import StageError

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
READY_MARKER = ".resolved"


class JarResolutionError(StageError):
    """Maven could not provide Spark's Kafka source."""


@dataclass(frozen=True)
class KafkaSourceJars:
    spark_version: str  # the pyspark version the jars are meant for
    kafka_source_version: str  # the spark-sql-kafka version actually resolved
    token_provider_version: str
    directory: Path
    jars: tuple[Path, ...]

    @property
    def exact(self) -> bool:
        return self.kafka_source_version == self.spark_version

    def spark_jars_conf(self) -> str:
        return ",".join(str(j) for j in self.jars)


def pyspark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def pyspark_jars_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"


# artifactId-version[-qualifier].jar; the greedy name keeps digits inside artifact ids
# (`spark-sql-kafka-0-10_2.13`) and the version may carry one qualifier (`4.1.0-preview1`).
_JAR_NAME = re.compile(r"^(?P<artifact>.+)-(?P<version>\d[\w.]*(?:-[\w.]+)?)\.jar$")


def artifact_name(jar_file: str) -> str:
    """`kafka-clients-3.9.2.jar` -> `kafka-clients`; `spark-tags_2.13-4.3.0.jar` -> `spark-tags_2.13`."""
    m = _JAR_NAME.match(jar_file)
    return m.group("artifact") if m else jar_file


def jars_to_add(resolved: list[str], shipped: set[str]) -> list[str]:
    """The resolved jars Spark does not already ship, by artifact name (versions may differ)."""
    have = {artifact_name(j) for j in shipped}
    return sorted(j for j in resolved if j.endswith(".jar") and artifact_name(j) not in have)


def cache_root() -> Path:
    root = os.environ.get("MM2_CACHE") or str(Path.home() / ".cache" / "mm2-iac")
    return Path(root)


def _cache_dir(spark_version: str, scala: str) -> Path:
    return cache_root() / f"spark-kafka-{spark_version}_{scala}"


def _load_cached(directory: Path, spark_version: str) -> KafkaSourceJars | None:
    marker = directory / READY_MARKER
    if not marker.is_file():
        return None
    fields = dict(line.split("=", 1) for line in marker.read_text().splitlines() if "=" in line)
    jars = tuple(sorted(p for p in directory.glob("*.jar")))
    if not jars or any(not j.is_file() for j in jars):
        return None
    return KafkaSourceJars(
        spark_version=spark_version,
        kafka_source_version=fields.get("kafka_source_version", spark_version),
        token_provider_version=fields.get("token_provider_version", spark_version),
        directory=directory,
        jars=jars,
    )


def _mvn(out_dir: Path, version: str, token_version: str, scala: str) -> subprocess.CompletedProcess[str]:
    mvn = shutil.which("mvn")
    if not mvn:
        raise JarResolutionError(
            "Maven (`mvn`) not found: it resolves Spark's Kafka source once. "
            "Install Maven 3.8+ (Debian: apt-get install maven) or run bin/bootstrap."
        )
    cmd = [
        mvn,
        "-q",
        "-B",
        "-Dstyle.color=never",
        "-f",
        str(POM),
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={out_dir}",
        f"-Dspark.version={version}",
        f"-Dtoken.provider.version={token_version}",
        f"-Dscala.binary.version={scala}",
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)


def ensure_kafka_source_jars(
    spark_version: str | None = None,
    scala: str | None = None,
    log: bool = True,
) -> KafkaSourceJars:
    """Return the cached jars, resolving them with Maven on first use."""
    spark_version = spark_version or os.environ.get("MM2_SPARK_VERSION") or pyspark_version()
    scala = scala or os.environ.get("MM2_SCALA_BINARY") or "2.13"
    directory = _cache_dir(spark_version, scala)
    cached = _load_cached(directory, spark_version)
    if cached is not None:
        return cached

    shipped = {p.name for p in pyspark_jars_dir().glob("*.jar")}
    tmp = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    started = time.monotonic()
    if log:
        print(
            f"[jars] resolving spark-sql-kafka-0-10_{scala}:{spark_version} with Maven into {directory} ...",
            file=sys.stderr,
            flush=True,
        )
    out = _mvn(tmp, spark_version, spark_version, scala)
    if out.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        errors = [ln for ln in (out.stdout + out.stderr).splitlines() if "ERROR" in ln][:3]
        raise JarResolutionError(
            f"could not resolve Spark's Kafka source for pyspark {spark_version} (Scala {scala}):\n  "
            + ("\n  ".join(errors) or f"mvn exit {out.returncode}")
            + "\nFix: check access to Maven Central (or the mirror in ~/.m2/settings.xml); the jars are "
            f"cached in {directory} once resolved."
        )
    keep = set(jars_to_add([p.name for p in tmp.glob("*.jar")], shipped))
    for jar in tmp.glob("*.jar"):
        if jar.name not in keep:
            jar.unlink()
    (tmp / READY_MARKER).write_text(f"kafka_source_version={spark_version}\ntoken_provider_version={spark_version}\n")
    shutil.rmtree(directory, ignore_errors=True)
    tmp.rename(directory)
    if log:
        print(
            f"[jars] resolved in {time.monotonic() - started:.1f}s: {', '.join(sorted(keep))}",
            file=sys.stderr,
            flush=True,
        )
    found = _load_cached(directory, spark_version)
    assert found is not None
    return found


def main() -> int:
    try:
        jars = ensure_kafka_source_jars()
    except JarResolutionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(jars.spark_jars_conf())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
