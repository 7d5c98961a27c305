"""The local platform's process handling: markers, run directories, secret files, command lines."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from components.platform.local import process as proc
from components.topology.java_properties import parse_properties


def test_a_float_pid_from_pulumi_state_is_the_same_process(marked: tuple[subprocess.Popen[bytes], str]) -> None:
    child, marker = marked
    assert proc.is_running(float(child.pid), marker)
    assert not proc.is_running(float(child.pid), marker + "-other")


def test_secret_files_are_owner_only_and_inside_the_run_dir(tmp_path: Path) -> None:
    spec = proc.JvmSpec(
        component="test",
        marker="m",
        main_class="X",
        classpath_dir="/x",
        run_dir=str(tmp_path),
        properties={"a": "b"},
        secret_files={"config/secrets.properties": "k=v\n"},
    )
    proc.prepare_run_dir(spec)
    written = tmp_path / "config" / "secrets.properties"
    assert written.read_text() == "k=v\n"
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    escape = proc.JvmSpec(**{**spec.__dict__, "secret_files": {"../outside": "x"}})
    try:
        proc.write_secret_files(escape)
    except proc.ProcessError as exc:
        assert "outside its run directory" in str(exc) and "x" not in str(exc).split("'")[-1]
    else:
        raise AssertionError("a secret file outside the run directory was written")


def test_the_process_properties_read_back_as_java_reads_them(tmp_path: Path) -> None:
    """The file is written with the topology's java.util.Properties writer: keys sorted, and a
    value's leading space, a key's `=`/`:`/`#`, backslashes and newlines survive a read back."""
    properties = {"z.key": "plain", "a=b:c#d": "x", "path": "C:\\dir\\file", "lead": " spaced", "multi": "1\n2"}
    spec = proc.JvmSpec(
        component="t", marker="m", main_class="X", classpath_dir="/x", run_dir=str(tmp_path), properties=properties
    )
    proc.prepare_run_dir(spec)
    assert parse_properties(spec.properties_file.read_text()) == sorted(properties.items())


def test_jvm_options_reach_the_command_line_before_the_main_class() -> None:
    spec = proc.JvmSpec(
        component="t",
        marker="m",
        main_class="Main",
        classpath_dir="/x",
        run_dir="/r",
        properties={},
        jvm_options=("-Djava.security.auth.login.config=/r/config/rest-jaas.conf",),
    )
    cmd = proc._jvm_command(spec, "Main", [], "256m")
    assert cmd.index("-Djava.security.auth.login.config=/r/config/rest-jaas.conf") < cmd.index("Main")


def test_kafka_jvm_performance_opts_replace_the_default_flags_as_in_kafkas_scripts() -> None:
    assert proc.jvm_flags({}) == proc.JVM_FLAGS
    assert proc.jvm_flags({"KAFKA_JVM_PERFORMANCE_OPTS": "  "}) == proc.JVM_FLAGS
    given = {"KAFKA_JVM_PERFORMANCE_OPTS": "-server -XX:TieredStopAtLevel=1 '-Dname=a b'"}
    assert proc.jvm_flags(given) == ("-server", "-XX:TieredStopAtLevel=1", "-Dname=a b")


def test_the_jvm_command_carries_the_flags_of_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = proc.JvmSpec(component="t", marker="m", main_class="Main", classpath_dir="/x", run_dir="/r", properties={})
    monkeypatch.setenv("KAFKA_JVM_PERFORMANCE_OPTS", "-XX:+UseSerialGC")
    cmd = proc._jvm_command(spec, "Main", [], "256m")
    assert "-XX:+UseSerialGC" in cmd and "-XX:+UseG1GC" not in cmd
    monkeypatch.delenv("KAFKA_JVM_PERFORMANCE_OPTS")
    assert "-XX:+UseG1GC" in proc._jvm_command(spec, "Main", [], "256m")


def test_running_markers_match_by_prefix(marked: tuple[subprocess.Popen[bytes], str]) -> None:
    _, marker = marked  # unique per test run: unit/<random hex>
    assert proc.running_markers(marker[:-2]) == [marker]
    assert marker in proc.running_markers()
    assert proc.running_markers(marker + "0") == []
