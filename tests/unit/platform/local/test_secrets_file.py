"""The worker group's secrets file (SecretsFileProvider): rewritten owner-only, removed on delete."""

from __future__ import annotations

import stat
from pathlib import Path

from components.platform.local.secrets_file import SecretsFileProvider


def test_group_secrets_file_is_rewritten_owner_only_and_removed(tmp_path: Path) -> None:
    provider = SecretsFileProvider()
    path = tmp_path / "connect-mm2" / "secrets.properties"
    provider.create({"path": str(path), "content": "a=1\n"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert provider.diff(
        str(path), {"path": str(path), "content": "a=1\n"}, {"path": str(path), "content": "a=2\n"}
    ).changes
    provider.update(str(path), {}, {"path": str(path), "content": "a=2\n"})
    assert path.read_text() == "a=2\n" and stat.S_IMODE(path.stat().st_mode) == 0o600
    provider.delete(str(path), {"path": str(path)})
    assert not path.exists() and not path.parent.exists()
