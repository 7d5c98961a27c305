"""The local JVMs' class-data sharing archives: written at a first exit, promoted only when
complete, keyed by what they were made from (components/platform/local/class_archive.py)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from components.platform.local import process as proc
from components.platform.local.class_archive import DYNAMIC_MAGIC, STALE_S, archive_options, archive_path

MAIN = "kafka.Kafka"


def _libs(tmp: Path) -> Path:
    libs = tmp / "kafka-9.9.9" / "libs"
    libs.mkdir(parents=True)
    (libs / "kafka-clients.jar").write_bytes(b"jar")
    return libs


def _option(options: tuple[str, ...], flag: str) -> Path:
    (found,) = [o.split("=", 1)[1] for o in options if o.startswith(flag)]
    return Path(found)


def test_a_first_start_writes_at_exit_and_the_next_start_maps_the_promoted_archive(tmp_path: Path) -> None:
    libs = _libs(tmp_path)
    first = archive_options(str(libs), MAIN, "java", writer="stack/broker-0")
    writing = _option(first, "-XX:ArchiveClassesAtExit=")
    assert writing.parent == libs.parent / "class-archives" and writing.name.endswith(".writing")
    assert "-Xlog:cds=off" in first

    writing.write_bytes(DYNAMIC_MAGIC + b"\0" * 64)  # what the JVM leaves at a clean exit
    second = archive_options(str(libs), MAIN, "java", writer="stack/broker-1")
    final = _option(second, "-XX:SharedArchiveFile=")
    assert final == archive_path(str(libs), MAIN, "java") and final.exists() and not writing.exists()
    assert archive_options(str(libs), MAIN, "java", writer="x") == second


def test_an_archive_cut_short_is_never_used_and_a_stale_one_is_removed(tmp_path: Path) -> None:
    libs = _libs(tmp_path)
    writing = _option(archive_options(str(libs), MAIN, "java", writer="w"), "-XX:ArchiveClassesAtExit=")
    writing.write_bytes(b"\0" * 64)  # SIGKILLed while writing: the header (magic) comes last
    again = archive_options(str(libs), MAIN, "java", writer="w")
    assert _option(again, "-XX:ArchiveClassesAtExit=") == writing and writing.exists()

    old = time.time() - STALE_S - 10
    os.utime(writing, (old, old))
    archive_options(str(libs), MAIN, "java", writer="other")
    assert not writing.exists()


def test_the_key_follows_the_jars_the_main_class_and_the_jdk(tmp_path: Path) -> None:
    libs = _libs(tmp_path)
    before = archive_path(str(libs), MAIN, "java")
    assert archive_path(str(libs), "org.apache.kafka.connect.cli.ConnectDistributed", "java") != before
    assert archive_path(str(libs), MAIN, "/opt/other-jdk/bin/java") != before
    (libs / "extra.jar").write_bytes(b"new")
    assert archive_path(str(libs), MAIN, "java") != before


def test_without_a_classpath_directory_the_jvm_starts_as_before(tmp_path: Path) -> None:
    assert archive_options(str(tmp_path / "missing"), MAIN, "java", writer="w") == ()


def test_the_archive_options_come_before_the_classpath(tmp_path: Path) -> None:
    libs = _libs(tmp_path)
    spec = proc.JvmSpec(
        component="t", marker="m", main_class=MAIN, classpath_dir=str(libs), run_dir="/r", properties={}
    )
    cmd = proc._jvm_command(spec, MAIN, [], "256m")
    archive = next(i for i, c in enumerate(cmd) if c.startswith("-XX:ArchiveClassesAtExit="))
    assert archive < cmd.index("-cp") < cmd.index(MAIN)


def test_once_promoted_the_other_complete_archives_of_the_key_are_removed(tmp_path: Path) -> None:
    libs = _libs(tmp_path)
    writers = [_option(archive_options(str(libs), MAIN, "java", writer=f"w{i}"), "-XX:ArchiveClassesAtExit=")
               for i in range(3)]  # fmt: skip
    for path in writers[:2]:
        path.write_bytes(DYNAMIC_MAGIC + b"\0" * 64)  # two JVMs that started together both wrote one
    writers[2].write_bytes(b"\0" * 64)  # a third is still writing
    archive_options(str(libs), MAIN, "java", writer="next")
    assert archive_path(str(libs), MAIN, "java").exists()  # type: ignore[union-attr]
    assert [p.exists() for p in writers] == [False, False, True]
