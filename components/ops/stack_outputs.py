"""Stack outputs for the operator commands: load them, and turn them into Kafka and Connect clients.

The operator commands (failover, drill, connectors) read only what `pulumi stack output --json
--show-secrets` prints (docs/architecture.md, "Stack outputs"). Two rules hold for every client
built here, so the commands work on plain-text and on secured stacks alike:

- a Kafka client for cluster `alias` merges `outputs["clusters"][alias]["client"]` (librdkafka
  settings such as `security.protocol`, `sasl.mechanisms`, `sasl.username`) into its config;
- a Connect REST client for worker group `name` uses basic auth when
  `outputs["connect"][name]` carries `auth: {username, password}` (or top-level `username`,
  `password`), and verifies an https:// URL against `caPem` (the stack CA, restTls) when given.

On a local TLS cluster `client` already carries `ssl.ca.location` (the stack CA as PEM).

Secrets from the outputs stay in memory: nothing here prints a client config.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


class OpsError(RuntimeError):
    """An operator command cannot go on; the message names the component, the cause and the next step."""


def load_outputs(stack: str | None, outputs_file: str | None) -> dict[str, Any]:
    """The stack outputs, from a JSON file or from `bin/pulumi stack output` for `stack`."""
    if outputs_file:
        try:
            data = json.loads(Path(outputs_file).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise OpsError(
                f"stack outputs: cannot read {outputs_file}: {exc}. Next step: write it with "
                "`bin/pulumi stack output --stack <stack> --json --show-secrets > outputs.json`."
            ) from exc
    elif stack:
        cmd = [str(ROOT / "bin" / "pulumi"), "stack", "output", "--stack", stack, "--json", "--show-secrets"]
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False, env=os.environ.copy())
        if out.returncode != 0:
            raise OpsError(
                f"stack outputs: `bin/pulumi stack output --stack {stack}` failed ({out.returncode}): "
                f"{out.stderr.strip()[-1500:]}\nNext step: check that the stack exists and is deployed "
                "(`bin/pulumi stack ls`), or pass --outputs with a saved copy."
            )
        data = json.loads(out.stdout or "{}")
    else:
        raise OpsError("stack outputs: give --stack NAME or --outputs FILE")
    missing = [k for k in ("clusters", "connect", "flows") if k not in data]
    if missing:
        raise OpsError(
            f"stack outputs: {', '.join(missing)} missing (have {sorted(data)}). Next step: run "
            "`bin/pulumi up` for the stack so it exports clusters, connect and flows."
        )
    return dict(data)


def cluster(outputs: Mapping[str, Any], alias: str) -> Mapping[str, Any]:
    clusters = outputs["clusters"]
    if alias not in clusters:
        raise OpsError(
            f"cluster {alias!r} is not in the stack outputs (clusters: {', '.join(sorted(clusters))}). "
            "Next step: use one of those aliases."
        )
    return dict(clusters[alias])


def kafka_config(outputs: Mapping[str, Any], alias: str, **extra: Any) -> dict[str, Any]:
    """librdkafka config for cluster `alias`: bootstrap, its security settings, then `extra`."""
    c = cluster(outputs, alias)
    conf: dict[str, Any] = {"bootstrap.servers": str(c["bootstrap"])}
    protocol = c.get("securityProtocol")
    if protocol:
        conf["security.protocol"] = str(protocol)
    conf.update(dict(c.get("client") or {}))
    conf.update(extra)
    return conf


def flow(outputs: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    flows = outputs["flows"]
    if name not in flows:
        raise OpsError(
            f"flow {name!r} is not in the stack outputs (flows: {', '.join(sorted(flows)) or 'none'}). "
            "Next step: name an enabled flow of the stack, e.g. --flow primary->dr."
        )
    return dict(flows[name])


def connect_auth(outputs: Mapping[str, Any], group: str) -> tuple[str, str] | None:
    """(username, password) for the group's REST API: from `auth: {username, password}` (what the
    program exports) or top-level `username`/`password`; None when the API has no auth."""
    entry = outputs["connect"].get(group) or {}
    auth = entry.get("auth") or entry
    if auth.get("username") and auth.get("password") is not None:
        return (str(auth["username"]), str(auth["password"]))
    return None


def connect_url(outputs: Mapping[str, Any], group: str) -> str:
    entry = outputs["connect"].get(group)
    if not entry or not entry.get("url"):
        raise OpsError(
            f"Connect worker group {group!r} has no url in the stack outputs "
            f"(groups: {', '.join(sorted(outputs['connect']))}). Next step: run `bin/pulumi up` for the stack."
        )
    return str(entry["url"])


def connect_ca_pem(outputs: Mapping[str, Any], group: str) -> str | None:
    """The CA the group's HTTPS REST listener is verified against (restTls), or None."""
    entry = outputs["connect"].get(group) or {}
    ca = entry.get("caPem")
    return str(ca) if ca else None


def connect_client(outputs: Mapping[str, Any], group: str, **kwargs: Any) -> Any:
    """A ConnectClient for worker group `group`, with basic auth and the stack CA when the outputs carry them."""
    from components.connect.client import ConnectClient

    kwargs.setdefault("ca_pem", connect_ca_pem(outputs, group))
    return ConnectClient(connect_url(outputs, group), auth=connect_auth(outputs, group), **kwargs)
