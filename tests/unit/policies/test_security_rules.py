"""security_rules: cross-datacenter-flows-use-tls, connect-rest-requires-auth and
no-plaintext-secrets-in-connector-config, each with input that passes and input that fails, asserting the
exact findings."""

from __future__ import annotations

import pytest
from security_rules import (
    connect_rest_requires_auth,
    cross_datacenter_flows_use_tls,
    no_plaintext_secrets_in_connector_config,
)

from .builders import (
    UNKNOWN,
    UNKNOWN_MAP,
    cluster,
    connector,
    jaas,
    messages,
    replication_flow,
    run_resource,
    run_stack,
    worker_group,
)

# --- cross-datacenter-flows-use-tls ---------------------------------------------------------


def test_cross_datacenter_flow_over_plaintext() -> None:
    resources = [
        cluster("a", datacenter="dc1", protocol="PLAINTEXT"),
        cluster("b", datacenter="dc2", protocol="SASL_SSL"),
        *replication_flow("a", "b", **{"source.cluster.security.protocol": None}),
    ]
    [(message, where)] = run_stack(cross_datacenter_flows_use_tls, resources)
    assert message.startswith(
        "Flow a->b crosses datacenters (a in dc1, b in dc2) without TLS: cluster 'a' uses PLAINTEXT."
    )
    assert "Fix: give both clusters security.protocol SSL or SASL_SSL" in message
    assert where == resources[0].urn


def test_connector_level_protocol_is_what_runs() -> None:
    resources = [
        cluster("a", datacenter="dc1"),
        cluster("b", datacenter="dc2"),
        *replication_flow("a", "b", **{"target.cluster.security.protocol": "SASL_PLAINTEXT"}),
    ]
    found = messages(run_stack(cross_datacenter_flows_use_tls, resources))
    assert len(found) == 1
    assert (
        "mm2-a-to-b-source sets target.cluster.security.protocol=SASL_PLAINTEXT; "
        "mm2-a-to-b-checkpoint sets target.cluster.security.protocol=SASL_PLAINTEXT; "
        "mm2-a-to-b-heartbeat sets target.cluster.security.protocol=SASL_PLAINTEXT."
    ) in found[0]


def test_tls_across_datacenters_or_plaintext_inside_one_pass() -> None:
    resources = [
        cluster("a", datacenter="dc1", protocol="SSL"),
        cluster("b", datacenter="dc2", protocol="SASL_SSL"),
        cluster("c", datacenter="dc1", protocol="PLAINTEXT"),
        cluster("d", datacenter=UNKNOWN, protocol="PLAINTEXT"),
        *replication_flow(
            "a", "b", **{"source.cluster.security.protocol": None, "target.cluster.security.protocol": None}
        ),
        *replication_flow("c", "a", **{"source.cluster.security.protocol": None}),
        *replication_flow("d", "b", **{"source.cluster.security.protocol": None}),
    ]
    assert run_stack(cross_datacenter_flows_use_tls, resources) == []


# --- connect-rest-requires-auth -------------------------------------------------------------


def test_rest_without_auth_outside_dev(prod_stack: str) -> None:
    group = worker_group("mm2", rest_auth=False)
    [message] = run_resource(connect_rest_requires_auth, group)
    assert message.startswith(f"Connect worker group 'mm2' ({group.urn}): restAuth is false on stack 'prod'")
    assert "Fix: enable REST basic auth for worker group 'mm2'" in message
    [unset] = run_resource(connect_rest_requires_auth, worker_group("mm2", rest_auth=None))
    assert "restAuth is not set" in unset


def test_rest_auth_enabled_dev_or_unknown_pass(prod_stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_resource(connect_rest_requires_auth, worker_group(rest_auth=True)) == []
    assert run_resource(connect_rest_requires_auth, worker_group(rest_auth=UNKNOWN)) == []
    assert run_resource(connect_rest_requires_auth, cluster("a")) == []
    assert run_resource(connect_rest_requires_auth, worker_group(rest_auth=False), {"devStacks": ["prod"]}) == []
    monkeypatch.setenv("PULUMI_STACK", "organization/mm2-replication/dev")
    assert run_resource(connect_rest_requires_auth, worker_group(rest_auth=False)) == []


# --- no-plaintext-secrets-in-connector-config -----------------------------------------------

LEAKED = "hunter2-Sup3rSecret"


def test_plaintext_password_is_reported_without_its_value() -> None:
    res = connector(
        "a",
        "b",
        "source",
        **{
            "source.cluster.ssl.keystore.password": LEAKED,
            "target.cluster.sasl.jaas.config": jaas("mm2.user", LEAKED),
            "source.cluster.basic.auth.user.info": f"mm2:{LEAKED}",
        },
    )
    found = run_resource(no_plaintext_secrets_in_connector_config, res)
    assert all(m.startswith(f"Connector mm2-a-to-b-source ({res.urn}): config key '") for m in found)
    keys = [m.split("config key '")[1].split("'")[0] for m in found]
    assert keys == [
        "source.cluster.basic.auth.user.info",
        "source.cluster.ssl.keystore.password",
        "target.cluster.sasl.jaas.config",
    ]
    for message in found:
        assert LEAKED not in message
        assert "hunter2" not in message and "Sup3r" not in message
        assert "(value withheld)" in message
        assert "${file:/etc/mm2/secrets.properties:<name>}" in message


def test_placeholders_pass() -> None:
    res = connector(
        "a",
        "b",
        "source",
        **{
            "source.cluster.ssl.keystore.password": "${env:KEYSTORE_PASSWORD}",
            "source.cluster.sasl.jaas.config": "${file:/etc/mm2/jaas.properties:source.jaas}",
            "source.cluster.sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/token",
            "target.cluster.ssl.key.password": "",
            "target.cluster.sasl.jaas.config": UNKNOWN,
        },
    )
    assert run_resource(no_plaintext_secrets_in_connector_config, res) == []


def test_jaas_with_unparseable_options_is_not_trusted() -> None:
    res = connector("a", "b", "heartbeat", **{"source.cluster.sasl.jaas.config": f"Module required {LEAKED}"})
    [message] = run_resource(no_plaintext_secrets_in_connector_config, res)
    assert "'source.cluster.sasl.jaas.config'" in message and LEAKED not in message


def test_secret_key_fragments_are_configurable() -> None:
    res = connector("a", "b", "source", **{"source.cluster.api.credential": LEAKED})
    assert run_resource(no_plaintext_secrets_in_connector_config, res) == []
    [message] = run_resource(no_plaintext_secrets_in_connector_config, res, {"secretKeyFragments": ["credential"]})
    assert "'source.cluster.api.credential'" in message and LEAKED not in message


def test_whole_config_unknown_during_preview() -> None:
    res = connector("a", "b", "source", config=UNKNOWN_MAP)
    assert run_resource(no_plaintext_secrets_in_connector_config, res) == []
