"""Kafka and Connect clients for a stack's clusters and worker groups, from its outputs.

Two rules hold for every client built here, so the operator commands work on plain-text and on
secured stacks alike:

- a Kafka client for cluster `alias` merges the cluster's exported `client` (librdkafka settings
  such as `security.protocol`, `sasl.mechanisms`, `sasl.username`) into its config;
- a Connect REST client for worker group `name` uses basic auth when the outputs carry
  credentials for it, and verifies an https:// URL against its `caPem` (the stack CA, restTls).

On a local TLS cluster `client` already carries `ssl.ca.location` (the stack CA as PEM).

Secrets from the outputs stay in memory: nothing here prints a client config.
"""

from __future__ import annotations

from typing import Any

from components.ops.errors import OpsError
from components.outputs.contract import ClusterExport, FlowExport, StackExports


def cluster(outputs: StackExports, alias: str) -> ClusterExport:
    if alias not in outputs.clusters:
        raise OpsError(
            f"cluster {alias!r} is not in the stack outputs (clusters: {', '.join(sorted(outputs.clusters))}). "
            "Next step: use one of those aliases."
        )
    return outputs.clusters[alias]


def kafka_config(outputs: StackExports, alias: str, **extra: Any) -> dict[str, Any]:
    """librdkafka config for cluster `alias`: bootstrap, its security settings, then `extra`."""
    c = cluster(outputs, alias)
    conf: dict[str, Any] = {"bootstrap.servers": c.bootstrap}
    if c.security_protocol:
        conf["security.protocol"] = c.security_protocol
    conf.update(c.client)
    conf.update(extra)
    return conf


def flow(outputs: StackExports, name: str) -> FlowExport:
    if name not in outputs.flows:
        raise OpsError(
            f"flow {name!r} is not in the stack outputs (flows: {', '.join(sorted(outputs.flows)) or 'none'}). "
            "Next step: name an enabled flow of the stack, e.g. --flow primary->dr."
        )
    return outputs.flows[name]


def connect_auth(outputs: StackExports, group: str) -> tuple[str, str] | None:
    """(username, password) for the group's REST API; None when the API has no auth."""
    entry = outputs.connect.get(group)
    if not entry or not entry.auth:
        return None
    return (entry.auth["username"], entry.auth["password"])


def connect_url(outputs: StackExports, group: str) -> str:
    entry = outputs.connect.get(group)
    if not entry or not entry.url:
        raise OpsError(
            f"Connect worker group {group!r} has no url in the stack outputs "
            f"(groups: {', '.join(sorted(outputs.connect))}). Next step: run `bin/pulumi up` for the stack."
        )
    return entry.url


def connect_ca_pem(outputs: StackExports, group: str) -> str | None:
    """The CA the group's HTTPS REST listener is verified against (restTls), or None."""
    entry = outputs.connect.get(group)
    return entry.ca_pem if entry else None


def connect_client(outputs: StackExports, group: str, **kwargs: Any) -> Any:
    """A ConnectClient for worker group `group`, with basic auth and the stack CA when the outputs carry them."""
    from components.connect.client import ConnectClient

    kwargs.setdefault("ca_pem", connect_ca_pem(outputs, group))
    return ConnectClient(connect_url(outputs, group), auth=connect_auth(outputs, group), **kwargs)
