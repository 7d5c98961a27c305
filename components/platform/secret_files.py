"""Which `mm2:secrets` keys the container platforms (kubernetes, docker) read, and the text of
the secret files they mount: FileConfigProvider secrets files and the REST users file.

Pure: no pulumi import and no I/O. The text returned is secret; callers render it from Pulumi
secrets and keep it secret.
"""

from __future__ import annotations

from collections.abc import Mapping

from components.platform.container_broker import container_broker_secret_keys
from components.platform.topology_facts import group_clusters
from components.topology.model import Platform, Topology, WorkerGroup
from components.topology.security import worker_security

SECRETS_KEY = "secrets.properties"  # the one key of every secrets-file Secret
REST_USERS_KEY = "users.properties"
BASIC_AUTH_LOGIN_MODULE = "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"


def rest_jaas_text(users_file: str) -> str:
    """The JAAS file naming Connect's basic-auth users file (a path only, never a secret)."""
    return f'KafkaConnect {{\n  {BASIC_AUTH_LOGIN_MODULE} required\n  file="{users_file}";\n}};\n'


def container_group_secret_keys(topology: Topology, group: WorkerGroup) -> tuple[str, ...]:
    """Every key a container worker group's secrets file must hold: the credentials of every
    cluster it talks to (storage cluster included), which its worker and connector configs name.

    On a stack-managed storage cluster the workers are their own user (`worker_security`), whose
    password is there too. Not `components.topology.security.group_secret_keys`, which is what the
    group's connectors alone resolve (the clusters of its flows)."""
    keys = {ref.key for cluster in group_clusters(topology, group) for ref in cluster.security.secret_refs()}
    keys |= {ref.key for ref in worker_security(topology, group).secret_refs()}
    return tuple(sorted(keys))


def rest_password_key(group: WorkerGroup) -> str | None:
    return group.rest_password.key if group.rest_auth and group.rest_password else None


def secrets_file_text(keys: tuple[str, ...], values: Mapping[str, str]) -> str:
    """`key=value` lines for a FileConfigProvider secrets file; KeyError names a missing key."""
    missing = [k for k in keys if k not in values]
    if missing:
        raise KeyError(
            "missing secret(s) "
            + ", ".join(missing)
            + ". Fix: "
            + "; ".join(f"pulumi config set --secret --path 'mm2:secrets[\"{k}\"]' <value>" for k in missing)
        )
    return "".join(f"{k}={values[k]}\n" for k in keys)


def rest_users_text(group: WorkerGroup, values: Mapping[str, str]) -> str:
    """PropertyFileLoginModule's users file: `<user>: <password>`."""
    key = rest_password_key(group)
    if key is None:
        return ""
    if key not in values:
        raise KeyError(f"missing secret {key}. Fix: pulumi config set --secret --path 'mm2:secrets[\"{key}\"]' <value>")
    return f"{group.rest_username or 'mm2-admin'}: {values[key]}\n"


def container_secret_keys(topology: Topology) -> tuple[str, ...]:
    """Every `mm2:secrets` key a container deployment of this topology reads (brokers, workers,
    REST users). The operator gives them, but for the passwords of the users the stack creates on
    a stack-managed cluster (`admin`, `connect-<group>`: `generated_secret_keys`), made if not given.

    Not `components.topology.security.required_secret_keys`, which covers every platform."""
    keys: set[str] = set()
    for cluster in topology.clusters.values():
        if cluster.platform in (Platform.KUBERNETES, Platform.DOCKER):
            keys.update(container_broker_secret_keys(cluster))
    for group in topology.worker_groups.values():
        if group.platform in (Platform.KUBERNETES, Platform.DOCKER):
            keys.update(container_group_secret_keys(topology, group))
            if (key := rest_password_key(group)) is not None:
                keys.add(key)
    return tuple(sorted(keys))
