"""The stack's passwords (type ``pulumi-python:dynamic/security:Credentials``).

One resource per stack holds every password the deployment resolves, by secret key
(`primary.mm2.password`, `mm2.rest.password`, ...):

- given in the stack config as Pulumi secrets (`pulumi config set --secret --path
  'mm2:secrets["primary.mm2.password"]' ...`): used as given, so changing one rotates it;
- otherwise generated once (`secrets.token_urlsafe`, 192 bits) when first needed and kept;
  `mm2:rotate` (key -> any label) regenerates a key whenever its label changes.

Keys that name credentials of clusters the stack does not run (external clusters) cannot be
generated: a missing one fails the preview naming the key and the command that sets it.

`given` and `values` are secret inputs and outputs, so state holds them encrypted; the provider
object holds no value (it is pickled into state).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from typing import Any

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult
from pulumi.runtime import rpc

from components.rpc_values import plain_map
from components.topology.jaas import LINE_BREAKS

TOKEN_BYTES = 24
# A line break ends the properties line a password is written on. A quote or a backslash would
# end or corrupt the JAAS string a SASL password is substituted into, unless every file it is
# substituted from holds it JAAS-quoted: the keys the program lists as `quotable`
# (components/topology/jaas.py).
_FORBIDDEN = ('"', "\\", "\n", "\r")
# keytool refuses store passwords shorter than this (components/platform/local/tls.py).
_MIN_STORE_PASSWORD = 6
_STORE_PASSWORD_SUFFIXES = ("keystore.password", "truststore.password", "tls.ca.password")


def _keys(props: Mapping[str, Any]) -> list[str]:
    return sorted({*(props.get("generated") or []), *(props.get("required") or [])})


def _given(props: Mapping[str, Any]) -> dict[str, str]:
    wanted = set(_keys(props))
    return {k: str(v) for k, v in plain_map(props.get("given")).items() if k in wanted and v is not None}


def generate() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def resolve(
    keys: list[str],
    given: Mapping[str, str],
    rotate: Mapping[str, Any],
    old_values: Mapping[str, str],
    old_given: Mapping[str, str],
    old_rotate: Mapping[str, Any],
) -> dict[str, str]:
    """Each key's password: given wins; a key no longer given, or whose rotation label changed,
    gets a new one; otherwise the previous value is kept. Pure but for `generate`."""
    values: dict[str, str] = {}
    for key in keys:
        if key in given:
            values[key] = given[key]
        elif key in old_given or str(rotate.get(key)) != str(old_rotate.get(key)) or key not in old_values:
            values[key] = generate()
        else:
            values[key] = old_values[key]
    return values


def given_only(given: pulumi.Input[Mapping[str, str]] | None, keys: Iterable[str]) -> pulumi.Output[dict[str, str]]:
    """The passwords of `keys` as given in `mm2:secrets` (a missing one as ""), a secret known at
    preview, unlike `Credentials.values` on a new stack. What the clusters and Connect endpoints the
    stack does not run (`external`) authenticate with: their keys are never generated, and the
    Credentials resource fails the preview naming any that is missing. With them known, the
    preview's checks against those clusters and endpoints run on the first preview too."""
    wanted = sorted(keys)
    values = pulumi.Output.from_input(given or {}).apply(lambda g: {k: str((g or {}).get(k) or "") for k in wanted})
    return pulumi.Output.secret(values)


class CredentialsProvider(ResourceProvider):
    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures: list[CheckFailure] = []
        given_raw = rpc.unwrap_rpc_secret(news.get("given"))
        if given_raw is not None and given_raw != rpc.UNKNOWN and not isinstance(given_raw, Mapping):
            failures.append(
                CheckFailure(
                    "given",
                    "mm2:secrets must be a map of secret key to password. Fix: "
                    "`pulumi config set --secret --path 'mm2:secrets[\"<key>\"]' <password>`.",
                )
            )
        given = plain_map(given_raw)
        for key in news.get("required") or []:
            if key not in given and key not in (news.get("generated") or []):
                failures.append(
                    CheckFailure(
                        "given",
                        f"secret {key!r} is needed (it is a credential of a cluster or Connect endpoint this "
                        "stack does not run, so it cannot be generated) but mm2:secrets has no such key. Fix: "
                        f"`pulumi config set --secret --path 'mm2:secrets[\"{key}\"]' <password>`.",
                    )
                )
        for key, value in given.items():
            if value == rpc.UNKNOWN:
                continue
            if not isinstance(value, str) or not value:
                failures.append(CheckFailure("given", f"mm2:secrets[{key!r}] must be a non-empty string."))
            elif key.endswith(_STORE_PASSWORD_SUFFIXES) and len(value) < _MIN_STORE_PASSWORD:
                failures.append(
                    CheckFailure(
                        "given",
                        f"mm2:secrets[{key!r}] protects a TLS keystore or truststore and keytool needs at least "
                        f"{_MIN_STORE_PASSWORD} characters. Fix: set a longer one, or remove it to have it generated.",
                    )
                )
            elif any(c in value for c in (LINE_BREAKS if key in (news.get("quotable") or []) else _FORBIDDEN)):
                # Never echo the value.
                failures.append(
                    CheckFailure(
                        "given",
                        f"mm2:secrets[{key!r}] contains a quote, backslash or line break, which would break the "
                        "configuration it is substituted into (quotes and backslashes are kept intact only in "
                        "SASL passwords of stacks whose brokers and workers all run on the local platform). "
                        "Fix: choose a password without them.",
                    )
                )
        return CheckResult(news, failures)

    def create(self, props: dict[str, Any]) -> CreateResult:
        values = resolve(_keys(props), _given(props), plain_map(props.get("rotate")), {}, {}, {})
        return CreateResult(id_="credentials", outs={**props, "values": values})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = (
            _keys(olds) != _keys(news)
            or _given(olds) != _given(news)
            or plain_map(olds.get("rotate")) != plain_map(news.get("rotate"))
        )
        return DiffResult(changes=changed, replaces=[], delete_before_replace=False)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        values = resolve(
            _keys(news),
            _given(news),
            plain_map(news.get("rotate")),
            plain_map(olds.get("values")),
            _given(olds),
            plain_map(olds.get("rotate")),
        )
        return UpdateResult(outs={**news, "values": values})


class Credentials(Resource, module="security", name="Credentials"):
    """Every password of the stack, by secret key; `values` is a secret output."""

    values: pulumi.Output[dict[str, str]]

    def __init__(
        self,
        resource_name: str,
        *,
        generated: list[str],
        required: list[str],
        given: pulumi.Input[Mapping[str, str]] | None,
        rotate: Mapping[str, Any] | None = None,
        quotable: list[str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        opts = pulumi.ResourceOptions.merge(pulumi.ResourceOptions(additional_secret_outputs=["values", "given"]), opts)
        super().__init__(
            CredentialsProvider(),
            resource_name,
            {
                "generated": sorted(generated),
                "required": sorted(required),
                "given": pulumi.Output.secret(given or {}),
                "rotate": {str(k): str(v) for k, v in (rotate or {}).items()},
                # keys whose given value may hold `"` and `\` (SASL passwords the stack quotes)
                "quotable": sorted(quotable or []),
                "values": None,
            },
            opts,
        )
