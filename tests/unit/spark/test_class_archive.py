"""The driver JVM's class archive: used when there, written by one run when not, never half-written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spark import class_archive


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MM2_CACHE", str(tmp_path))
    return tmp_path / "spark-class-archive"


def test_the_first_run_writes_it_and_later_runs_use_it(cache: Path) -> None:
    first = class_archive.class_archive(["/j/kafka.jar"])
    assert first.writing is not None and f"-XX:ArchiveClassesAtExit={first.writing}" in first.options
    assert not first.final.exists()
    first.final.write_bytes(b"archive")
    later = class_archive.class_archive(["/j/kafka.jar"])
    assert later.writing is None and later.options.startswith(f"-XX:SharedArchiveFile={first.final} ")


def test_other_jars_make_another_archive(cache: Path) -> None:
    assert class_archive.archive_key(["/j/a.jar"]) != class_archive.archive_key(["/j/b.jar"])
    assert class_archive.archive_key(["/j/a.jar"]) == class_archive.archive_key(["/j/a.jar"])


def test_no_second_writer_while_one_runs_and_a_dead_writers_file_is_dropped(cache: Path) -> None:
    final = class_archive.class_archive([]).final
    alive = final.with_suffix(f".{os.getpid()}.writing")
    alive.write_bytes(b"half")
    assert class_archive.class_archive([]) == class_archive.ClassArchive("", final)
    alive.unlink()
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = final.with_suffix(f".{done.stdout.strip()}.writing")
    stale.write_bytes(b"half")
    again = class_archive.class_archive([])
    assert again.writing is not None and not stale.exists()
