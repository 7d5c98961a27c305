"""The driver JVM's class archive: used when there, written by one run when not, never half-written;
the cache pruned to the recently used archives, never one a run holds."""

from __future__ import annotations

import os
import subprocess
import sys
import time
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
    later.release()


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


def archives(cache: Path, ages_s: dict[str, float]) -> dict[str, Path]:
    """Archives of other checkouts, each last used `ages_s[name]` seconds ago."""
    cache.mkdir(parents=True, exist_ok=True)
    now = time.time()
    made = {}
    for name, age in ages_s.items():
        path = cache / f"{name}.jsa"
        path.write_bytes(b"archive")
        os.utime(path, (now - age, now - age))
        made[name] = path
    return made


def test_the_most_recently_used_archives_stay_and_the_rest_go(cache: Path) -> None:
    made = archives(cache, {"a": 60, "b": 3600, "c": 7200, "d": 86400, "e": 2 * 86400})
    assert sorted(class_archive.prune(cache, keep=3)) == [made["d"], made["e"]]
    assert sorted(p.stem for p in cache.glob("*.jsa")) == ["a", "b", "c"]


def test_an_archive_unused_for_long_goes_even_among_the_most_recent(cache: Path) -> None:
    made = archives(cache, {"a": 60, "old": class_archive.IDLE_S + 60})
    assert class_archive.prune(cache, keep=3) == [made["old"]]


def test_a_run_uses_its_archive_as_most_recent_and_holds_it_until_released(cache: Path) -> None:
    first = class_archive.class_archive(["/j/kafka.jar"])
    first.final.write_bytes(b"archive")
    os.utime(first.final, (0, 0))  # last used long ago
    run = class_archive.class_archive(["/j/kafka.jar"])
    assert run.held is not None and time.time() - run.final.stat().st_mtime < 60
    os.utime(run.final, (0, 0))
    assert class_archive.prune(cache, keep=0) == [] and run.final.exists()
    run.release()
    assert class_archive.prune(cache, keep=0) == [run.final] and not run.final.exists()


def test_an_archive_another_process_holds_is_never_pruned(cache: Path) -> None:
    made = archives(cache, {"held": class_archive.IDLE_S * 2, "free": class_archive.IDLE_S * 2})
    hold = "import fcntl, sys; f = open(sys.argv[1], 'rb'); fcntl.flock(f, fcntl.LOCK_SH); print(1, flush=True)"
    hold += "; input()"  # holds it until told
    with subprocess.Popen(
        [sys.executable, "-c", hold, str(made["held"])], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as other:
        assert other.stdout is not None and other.stdout.readline() == "1\n"
        assert class_archive.prune(cache, keep=0) == [made["free"]]
        other.communicate("\n")
    assert class_archive.prune(cache, keep=0) == [made["held"]]


def test_a_fresh_clones_run_prunes_the_cache_to_the_recent_archives(cache: Path) -> None:
    made = archives(cache, {f"clone{i}": 3600.0 * (i + 1) for i in range(class_archive.KEEP + 2)})
    run = class_archive.class_archive(["/j/kafka.jar"])
    assert run.writing is not None  # its own archive: written at its JVM's exit
    left = {p.stem for p in cache.glob("*.jsa")}
    assert left == {f"clone{i}" for i in range(class_archive.KEEP)} and not made[f"clone{class_archive.KEEP}"].exists()


def test_an_old_writing_file_is_no_runs_even_when_its_pid_runs_now(cache: Path) -> None:
    final = class_archive.class_archive([]).final
    reused = final.with_suffix(f".{os.getpid()}.writing")  # a live pid, as pids repeat in fresh containers
    reused.write_bytes(b"half")
    hours_ago = time.time() - class_archive.WRITING_STALE_S - 60
    os.utime(reused, (hours_ago, hours_ago))
    again = class_archive.class_archive([])
    assert again.writing is not None and not reused.exists()
