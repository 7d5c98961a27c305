"""Kafka's config-provider placeholders, written and read in one place.

A value `${<provider>:<path>:<key>}` is resolved by the worker or broker that reads the config;
the stack writes FileConfigProvider's `${file:<file>:<key>}` (a key of a properties file), so
configs and outputs hold references, never the secret. Users may also give other providers'
placeholders (`${env:...}`), which parse accepts wherever a secret is expected.
"""

from __future__ import annotations

import re

FILE_CONFIG_PROVIDER = "org.apache.kafka.common.config.provider.FileConfigProvider"
# What a broker, worker or dedicated MM2 needs in its properties to resolve `${file:...}`.
FILE_PROVIDER_PROPERTIES: dict[str, str] = {
    "config.providers": "file",
    "config.providers.file.class": FILE_CONFIG_PROVIDER,
}
# Not anchored: JAAS strings hold several placeholders. `body` is `<path>:<key>` for `file`.
PLACEHOLDER = re.compile(r"\$\{(?P<provider>[A-Za-z0-9_.-]+):(?P<body>[^}]*)\}")


def file_placeholder(path: str, key: str) -> str:
    """`${file:<path>:<key>}`: the value of `key` in the properties file at `path`."""
    return f"${{file:{path}:{key}}}"


def is_placeholder(value: str) -> bool:
    """A config-provider reference (e.g. `${file:/etc/mm2/secrets.properties:key}`), not a value."""
    return PLACEHOLDER.fullmatch(value.strip()) is not None


def file_reference(value: str) -> tuple[str, str] | None:
    """(file, key) when `value` is exactly one `${file:<file>:<key>}` placeholder, else None."""
    match = PLACEHOLDER.fullmatch(value.strip())
    if match is None or match["provider"] != "file":
        return None
    path, colon, key = match["body"].partition(":")
    return (path, key) if path and colon and key else None
