"""A secrets file on this machine (type ``pulumi-python:dynamic/local:SecretsFile``).

The file a worker group's connectors resolve `${file:<path>:<key>}` placeholders from: Connect
hands the placeholder to Kafka's FileConfigProvider on whichever worker runs a task, so every
worker of the group must see the same path. Written atomically and owner-only (0600); its
content is a secret input and a secret output, so state holds it encrypted. Rewriting it does
not restart anything: the connectors that read it are restarted by their flow (see
`components/rollout.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider, UpdateResult
from pulumi.runtime import rpc

from components.platform.local.process import write_private


def _content(props: Mapping[str, Any]) -> str:
    return str(rpc.unwrap_rpc_secret(props.get("content")) or "")


class SecretsFileProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        write_private(Path(props["path"]), _content(props))
        return CreateResult(id_=props["path"], outs=props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = ["path"] if olds.get("path") != news.get("path") else []
        changed = bool(replaces) or _content(olds) != _content(news)
        return DiffResult(changes=changed, replaces=replaces, delete_before_replace=True)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        write_private(Path(news["path"]), _content(news))
        return UpdateResult(outs=news)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        path = Path(props.get("path") or id_)
        if not path.exists():
            return ReadResult(id_="", outs={})  # gone: the next `pulumi up` writes it again
        return ReadResult(id_=id_, outs=props)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        path = Path(props["path"])
        path.unlink(missing_ok=True)
        # Leave no empty directory behind (the group's run directory once its workers are gone).
        parent = path.parent
        for _ in range(3):
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent


class SecretsFile(Resource, module="local", name="SecretsFile"):
    """A 0600 file of `key=value` secrets at `path`."""

    path: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        path: str,
        content: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        opts = pulumi.ResourceOptions.merge(pulumi.ResourceOptions(additional_secret_outputs=["content"]), opts)
        super().__init__(
            SecretsFileProvider(),
            resource_name,
            {"path": path, "content": pulumi.Output.secret(content)},
            opts,
        )
