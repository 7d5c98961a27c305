"""Restart a flow's connectors when the credentials they resolve change
(type ``pulumi-python:dynamic/connect:CredentialRollout``).

Connector configs only hold `${file:...}` placeholders, so a rotated password changes no
connector config and Connect would keep running tasks with the old one until they reconnect
and fail. This resource's `credentials` input is the flow's passwords (a secret): when they
change, `update` restarts every connector of the flow with its tasks (which re-resolves the
placeholders) and waits until they run again. It depends on the connectors, which depend on the
worker group and clusters, so by then the brokers accept the new password and the secrets file
holds it. Create and delete do nothing: a new connector already starts with current values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider, UpdateResult

from components.connect.client import ConnectClient
from components.connect.errors import ConnectError
from components.rpc_values import plain

# Checkpoint connectors may run without tasks (no consumer group on the source yet).
_MAY_RUN_WITHOUT_TASKS = ("-checkpoint",)


class RolloutError(ConnectError):
    """Connectors could not be restarted after a credential change."""


def _auth(props: Mapping[str, Any]) -> tuple[str, str] | None:
    auth = plain(props.get("auth"))
    return (str(auth["username"]), str(auth["password"])) if auth else None


class CredentialRolloutProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=f"{props['flow']}/rollout", outs=props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = plain(olds.get("credentials")) != plain(news.get("credentials")) or plain(olds.get("auth")) != plain(
            news.get("auth")
        )
        return DiffResult(changes=changed, replaces=[], delete_before_replace=False)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        if plain(olds.get("credentials")) == plain(news.get("credentials")):
            return UpdateResult(outs=news)  # only the REST credential changed: nothing to restart
        timeout = float(news.get("timeout_seconds") or 180)
        url = str(news["connect_url"])
        try:
            ca_pem = plain(news.get("ca_pem")) or None
            # A stopped connector has no task to restart: it resolves the new values when it runs
            # again. A paused one restarts into PAUSED, its tasks re-resolved.
            states = {name: str(state) for name, state in (plain(news.get("states")) or {}).items()}
            restart = [name for name in news["connectors"] if states.get(name, "RUNNING") != "STOPPED"]
            with ConnectClient(url, auth=_auth(news), retry_budget_s=60.0, ca_pem=ca_pem) as client:
                for name in restart:
                    client.restart(name, include_tasks=True)
                for name in restart:
                    min_tasks = 0 if name.endswith(_MAY_RUN_WITHOUT_TASKS) else 1
                    client.wait_state(name, states.get(name, "RUNNING"), timeout, 1.0, min_tasks=min_tasks)
        except ConnectError as exc:
            raise RolloutError(
                f"flow {news['flow']}: restarting its connectors at {url} after a credential change failed: {exc}\n"
                "The brokers and the secrets file already hold the new credentials. Fix: check the worker "
                "logs, then run `pulumi up` again or restart the connectors with "
                "`POST /connectors/<name>/restart?includeTasks=true`."
            ) from exc
        return UpdateResult(outs=news)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_=id_, outs=props)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None


class CredentialRollout(Resource, module="connect", name="CredentialRollout"):
    """Restarts `connectors` at `connect_url` whenever `credentials` (secret) change."""

    def __init__(
        self,
        resource_name: str,
        *,
        flow: str,
        connect_url: pulumi.Input[str],
        connectors: list[str],
        credentials: pulumi.Input[Mapping[str, str]],
        auth: pulumi.Input[Mapping[str, str]] | None = None,
        timeout_seconds: int = 180,
        ca_pem: pulumi.Input[str] | None = None,
        states: Mapping[str, str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`ca_pem`: the CA an https:// `connect_url` is verified against (restTls groups).
        `states`: the declared state per connector name (RUNNING when absent), what a restart
        must come back to."""
        opts = pulumi.ResourceOptions.merge(
            pulumi.ResourceOptions(additional_secret_outputs=["credentials", "auth"]), opts
        )
        super().__init__(
            CredentialRolloutProvider(),
            resource_name,
            {
                "flow": flow,
                "connect_url": connect_url,
                "connectors": connectors,
                "credentials": pulumi.Output.secret(credentials),
                "auth": pulumi.Output.secret(auth) if auth is not None else None,
                "timeout_seconds": timeout_seconds,
                "ca_pem": ca_pem,
                "states": dict(states or {}),
            },
            opts,
        )
