"""Passwords that reach Kafka inside JAAS strings, and how they are written so they arrive intact.

Brokers, workers and connectors name SASL passwords as `password="${file:<file>:<key>}"` in a
`sasl.jaas.config`. The FileConfigProvider substitutes the file's value before Kafka's JaasConfig
parses the string, so a `"` or `\\` in the value would end or corrupt the quoted string. The files
the stack writes therefore hold those keys' values JAAS-quoted (`jaas_ready`): after substitution
the string parses back to the password exactly. Every other reader of the password (the stack's
own librdkafka clients, SCRAM user creation, the outputs) gets it as it is.

Pure: no pulumi, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from components.topology.jaas_quoting import jaas_quote
from components.topology.model import Platform, Topology
from components.topology.security import cluster_users

# What a password may never hold: a line break ends the properties line it is written on.
LINE_BREAKS = ("\n", "\r")


def sasl_password_keys(topology: Topology) -> frozenset[str]:
    """Secret keys substituted into JAAS strings: the SASL password of every cluster's client
    identity and of every user the stack creates (admin, MM2, workers)."""
    keys: set[str] = set()
    for alias, cluster in topology.clusters.items():
        if not cluster.security.protocol.uses_sasl:
            continue
        if cluster.security.password is not None:
            keys.add(cluster.security.password.key)
        keys.update(user.password.key for user in cluster_users(topology, alias))
    return frozenset(keys)


def quotable_password_keys(topology: Topology) -> frozenset[str]:
    """The SASL password keys that may hold `"` and `\\` on this stack: all of them when every file
    they are substituted from is one the local platform writes (`jaas_ready`), none otherwise.
    Docker and Kubernetes write their secret files their own way, and adopted Connect workers
    (`workerGroups.<g>.url`) read a file the user keeps, so those stacks keep the plain alphabet."""
    platforms = {c.platform for c in topology.clusters.values()} | {g.platform for g in topology.worker_groups.values()}
    if Platform.DOCKER in platforms or Platform.KUBERNETES in platforms:
        return frozenset()
    if any(g.url for g in topology.worker_groups.values()):
        return frozenset()
    return sasl_password_keys(topology)


def jaas_ready(values: Mapping[str, str], jaas_keys: frozenset[str]) -> dict[str, str]:
    """`values` as a secrets file holds them: the keys substituted into JAAS strings quoted."""
    return {key: jaas_quote(value) if key in jaas_keys else value for key, value in values.items()}
