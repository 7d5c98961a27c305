"""Maven resolves Spark's Kafka source with its own settings and the user's, none of the project's."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from spark import jars


def test_maven_runs_with_its_own_and_the_users_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    commands: list[list[str]] = []

    def run(cmd: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        commands.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(jars.shutil, "which", lambda _: "/usr/bin/mvn")
    monkeypatch.setattr(jars.subprocess, "run", run)
    jars._mvn(tmp_path, "4.2.0", "4.2.0", "2.13")
    (cmd,) = commands
    assert not {"-s", "-gs", "--settings", "--global-settings"} & set(cmd)
    assert not any("://" in arg for arg in cmd)  # no repository of ours either
    assert cmd[cmd.index("-f") + 1] == str(jars.POM)
