"""Rules 2-11, each with input that passes and input that fails, asserting the exact findings."""

from __future__ import annotations

import pytest
import rules

from .builders import (
    DEFAULT_POLICY,
    IDENTITY_POLICY,
    UNKNOWN,
    UNKNOWN_MAP,
    cluster,
    connector,
    flow,
    jaas,
    messages,
    replication_flow,
    resource,
    run_resource,
    run_stack,
    worker_group,
)

# --- replication-factor-within-broker-count -------------------------------------------------


def test_replication_factor_above_target_broker_count() -> None:
    resources = [cluster("a", brokers=3), cluster("b", brokers=1), *replication_flow("a", "b")]
    found = run_stack(rules.replication_factor_within_broker_count, resources)
    # Remote topics, checkpoints and heartbeats live on b (1 broker); offset syncs on a (3 brokers).
    assert [(m.split(":")[0], where) for m, where in found] == [
        ("Connector mm2-a-to-b-source (flow a->b)", resources[3].urn),
        ("Connector mm2-a-to-b-checkpoint (flow a->b)", resources[4].urn),
        ("Connector mm2-a-to-b-heartbeat (flow a->b)", resources[5].urn),
    ]
    assert (
        "replication.factor is 3, but it creates the remote topics on cluster 'b', which has 1 broker(s)"
        in (found[0][0])
    )
    assert "Fix: set replication.factor to at most 1" in found[0][0]
    assert "checkpoints.topic.replication.factor is 3" in found[1][0]
    assert "heartbeats.topic.replication.factor is 3" in found[2][0]


def test_replication_factors_that_fit() -> None:
    resources = [cluster("a", brokers=3), cluster("b", brokers=3.0), *replication_flow("a", "b")]
    assert run_stack(rules.replication_factor_within_broker_count, resources) == []


def test_offset_syncs_topic_follows_its_location() -> None:
    resources = [
        cluster("a", brokers=1),
        cluster("b", brokers=3),
        *replication_flow("a", "b", **{"offset-syncs.topic.location": "source"}),
    ]
    [message] = messages(run_stack(rules.replication_factor_within_broker_count, resources))
    assert "offset-syncs.topic.replication.factor is 3, but it creates the offset-syncs topic on cluster 'a'" in message
    moved = [
        cluster("a", brokers=1),
        cluster("b", brokers=3),
        *replication_flow("a", "b", **{"offset-syncs.topic.location": "target"}),
    ]
    assert run_stack(rules.replication_factor_within_broker_count, moved) == []


def test_unset_replication_factor_uses_mm2_default_unless_configured_off() -> None:
    resources = [
        cluster("a", brokers=1),
        cluster("b", brokers=1),
        connector("a", "b", "heartbeat", **{"heartbeats.topic.replication.factor": None}),
    ]
    [message] = messages(run_stack(rules.replication_factor_within_broker_count, resources))
    assert "heartbeats.topic.replication.factor is not set, so MM2's default 3" in message
    assert run_stack(rules.replication_factor_within_broker_count, resources, {"applyMm2Defaults": False}) == []


def test_replication_factor_minus_one_and_unknowns_are_skipped() -> None:
    resources = [
        cluster("a", brokers=1),
        cluster("b", brokers=UNKNOWN),
        cluster("c", brokers=1),
        connector("a", "c", "source", **{"replication.factor": "-1", "offset-syncs.topic.replication.factor": "1"}),
        connector("a", "c", "heartbeat", **{"heartbeats.topic.replication.factor": UNKNOWN}),
        connector("a", "b", "source"),
        connector("a", "c", "checkpoint", config=UNKNOWN_MAP),
    ]
    found = messages(run_stack(rules.replication_factor_within_broker_count, resources))
    # Only a->b's offset-syncs topic on a (1 broker) can be judged, and it is too big.
    assert len(found) == 1 and "mm2-a-to-b-source" in found[0] and "offset-syncs" in found[0]


# --- flow-has-all-connectors ----------------------------------------------------------------


def test_flow_without_heartbeat_and_checkpoint_connectors() -> None:
    resources = replication_flow("a", "b", kinds=("source",))
    [(message, where)] = run_stack(rules.flow_has_all_connectors, resources)
    assert message.startswith(f"Flow a->b ({resources[0].urn}): no MirrorCheckpointConnector")
    assert "no MirrorHeartbeatConnector" in message
    assert "no MirrorSourceConnector" not in message
    assert "expected mm2-a-to-b-checkpoint, mm2-a-to-b-heartbeat" in message
    assert where == resources[0].urn


def test_connectors_without_a_component_still_need_all_three() -> None:
    resources = [connector("a", "b", "checkpoint"), connector("a", "b", "heartbeat")]
    [(message, where)] = run_stack(rules.flow_has_all_connectors, resources)
    assert "no MirrorSourceConnector (no records are replicated)" in message
    assert where == resources[0].urn


def test_complete_flows_and_preview_unknown_configs_pass() -> None:
    resources = [
        *replication_flow("a", "b"),
        flow("b", "a"),
        *(connector("b", "a", kind, config=UNKNOWN_MAP) for kind in ("source", "checkpoint", "heartbeat")),
        flow("c", "a", enabled=False),
    ]
    assert run_stack(rules.flow_has_all_connectors, resources) == []


# --- flow-connectors-agree ------------------------------------------------------------------


def test_source_and_checkpoint_disagree_on_separator() -> None:
    component = flow("a", "b")
    resources = [
        component,
        connector("a", "b", "source", parent=component),
        connector("a", "b", "checkpoint", parent=component, **{"replication.policy.separator": "_"}),
        connector("a", "b", "heartbeat", parent=component),
    ]
    [(message, where)] = run_stack(rules.flow_connectors_agree, resources)
    assert message.startswith(
        "Flow a->b: replication.policy.separator differs between mm2-a-to-b-source ('.') and "
        "mm2-a-to-b-checkpoint ('_')."
    )
    assert "Fix: set replication.policy.separator once at the flow level" in message
    assert where == resources[2].urn


def test_default_versus_explicit_policy_and_topic_lists() -> None:
    resources = [
        connector("a", "b", "source", **{"replication.policy.class": None, "topics": "orders,payments"}),
        connector("a", "b", "checkpoint", **{"topics": " orders ,  payments "}),
    ]
    assert run_stack(rules.flow_connectors_agree, resources) == []
    resources.append(connector("a", "b", "checkpoint", **{"offset-syncs.topic.location": "target"}))
    [message] = messages(run_stack(rules.flow_connectors_agree, resources))
    assert "offset-syncs.topic.location differs between mm2-a-to-b-source ('source')" in message


def test_identity_on_source_only_is_reported_with_default_marker() -> None:
    resources = [
        connector("a", "b", "source", IDENTITY_POLICY),
        connector("a", "b", "checkpoint", **{"replication.policy.class": None}),
    ]
    [message] = messages(run_stack(rules.flow_connectors_agree, resources))
    assert f"('{IDENTITY_POLICY}') and mm2-a-to-b-checkpoint ('{DEFAULT_POLICY}' by default)" in message


# --- disaster-recovery-syncs-group-offsets --------------------------------------------------


def test_dr_flow_without_offset_sync() -> None:
    resources = replication_flow("a", "b", disaster_recovery=True, **{"sync.group.offsets.enabled": None})
    [(message, where)] = run_stack(rules.disaster_recovery_syncs_group_offsets, resources)
    assert message.startswith(
        "Flow a->b is marked disasterRecovery but its checkpoint connector mm2-a-to-b-checkpoint: "
        "sync.group.offsets.enabled is not true."
    )
    assert 'Fix: set sync.group.offsets.enabled: "true"' in message
    assert where == resources[2].urn


def test_dr_flow_without_checkpoints() -> None:
    resources = replication_flow("a", "b", disaster_recovery=True, **{"emit.checkpoints.enabled": "false"})
    [message] = messages(run_stack(rules.disaster_recovery_syncs_group_offsets, resources))
    assert "emit.checkpoints.enabled is false" in message


def test_dr_flow_with_offset_sync_and_non_dr_flow_pass() -> None:
    resources = [
        *replication_flow("a", "b", disaster_recovery=True),
        *replication_flow("b", "a", **{"sync.group.offsets.enabled": "false"}),
    ]
    assert run_stack(rules.disaster_recovery_syncs_group_offsets, resources) == []


def test_dr_flow_falls_back_to_the_component_when_connector_config_is_unknown() -> None:
    component = flow("a", "b", disaster_recovery=True, sync_group_offsets=False)
    resources = [component, connector("a", "b", "checkpoint", config=UNKNOWN_MAP)]
    [(message, where)] = run_stack(rules.disaster_recovery_syncs_group_offsets, resources)
    assert "syncGroupOffsets is false" in message and where == component.urn
    unknown = [flow("a", "b", disaster_recovery=True, sync_group_offsets=UNKNOWN), resources[1]]
    assert run_stack(rules.disaster_recovery_syncs_group_offsets, unknown) == []


# --- internal-topics-excluded ---------------------------------------------------------------


def test_replicate_everything_with_mm2_default_excludes_leaks_connect_and_heartbeat_topics() -> None:
    resources = [connector("a", "b", "source", topics=".*", **{"topics.exclude": None})]
    [(message, where)] = run_stack(rules.internal_topics_excluded, resources)
    assert message.startswith(
        "Source connector mm2-a-to-b-source (flow a->b) would replicate internal topics "
        "connect-configs, connect-offsets, connect-status, heartbeats, b.heartbeats: topics='.*' matches them"
    )
    assert r"Fix: add connect-.*, heartbeats, .*\.heartbeats to topics.exclude for flow a->b" in message
    assert where == resources[0].urn


def test_no_exclude_at_all_leaks_kafka_internal_topics() -> None:
    resources = [connector("a", "b", "source", topics=".*", **{"topics.exclude": ""})]
    [message] = messages(run_stack(rules.internal_topics_excluded, resources))
    assert "__consumer_offsets, __transaction_state, mm2-offset-syncs.b.internal" in message
    assert r"__.*, .*[\-\.]internal, connect-.*" in message


def test_explicit_topics_or_complete_excludes_pass() -> None:
    complete = r"__.*, .*[\-\.]internal, connect-.*, heartbeats, .*\.heartbeats"
    resources = [
        connector("a", "b", "source"),  # topics: orders, payments
        connector("b", "a", "source", topics=".*", **{"topics.exclude": complete}),
        connector("c", "a", "source", topics=".*", **{"topic.filter.class": "com.example.MyFilter"}),
        connector("d", "a", "source", topics="[", **{"topics.exclude": ""}),  # won't compile: not judged
        connector("e", "a", "source", topics=UNKNOWN),
    ]
    assert run_stack(rules.internal_topics_excluded, resources) == []


def test_internal_topic_samples_are_configurable() -> None:
    resources = [connector("a", "b", "source", topics="orders.*", **{"topics.exclude": ""})]
    assert run_stack(rules.internal_topics_excluded, resources) == []
    [message] = messages(
        run_stack(rules.internal_topics_excluded, resources, {"internalTopics": ["orders-{source}-internal"]})
    )
    assert "internal topics orders-a-internal:" in message


# --- cross-datacenter-flows-use-tls ---------------------------------------------------------


def test_cross_datacenter_flow_over_plaintext() -> None:
    resources = [
        cluster("a", datacenter="dc1", protocol="PLAINTEXT"),
        cluster("b", datacenter="dc2", protocol="SASL_SSL"),
        *replication_flow("a", "b", **{"source.cluster.security.protocol": None}),
    ]
    [(message, where)] = run_stack(rules.cross_datacenter_flows_use_tls, resources)
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
    found = messages(run_stack(rules.cross_datacenter_flows_use_tls, resources))
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
    assert run_stack(rules.cross_datacenter_flows_use_tls, resources) == []


# --- connect-rest-requires-auth -------------------------------------------------------------


def test_rest_without_auth_outside_dev(prod_stack: str) -> None:
    group = worker_group("mm2", rest_auth=False)
    [message] = run_resource(rules.connect_rest_requires_auth, group)
    assert message.startswith(f"Connect worker group 'mm2' ({group.urn}): restAuth is false on stack 'prod'")
    assert "Fix: enable REST basic auth for worker group 'mm2'" in message
    [unset] = run_resource(rules.connect_rest_requires_auth, worker_group("mm2", rest_auth=None))
    assert "restAuth is not set" in unset


def test_rest_auth_enabled_dev_or_unknown_pass(prod_stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_resource(rules.connect_rest_requires_auth, worker_group(rest_auth=True)) == []
    assert run_resource(rules.connect_rest_requires_auth, worker_group(rest_auth=UNKNOWN)) == []
    assert run_resource(rules.connect_rest_requires_auth, cluster("a")) == []
    assert run_resource(rules.connect_rest_requires_auth, worker_group(rest_auth=False), {"devStacks": ["prod"]}) == []
    monkeypatch.setenv("PULUMI_STACK", "organization/mm2-replication/dev")
    assert run_resource(rules.connect_rest_requires_auth, worker_group(rest_auth=False)) == []


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
    found = run_resource(rules.no_plaintext_secrets_in_connector_config, res)
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
    assert run_resource(rules.no_plaintext_secrets_in_connector_config, res) == []


def test_jaas_with_unparseable_options_is_not_trusted() -> None:
    res = connector("a", "b", "heartbeat", **{"source.cluster.sasl.jaas.config": f"Module required {LEAKED}"})
    [message] = run_resource(rules.no_plaintext_secrets_in_connector_config, res)
    assert "'source.cluster.sasl.jaas.config'" in message and LEAKED not in message


def test_secret_key_fragments_are_configurable() -> None:
    res = connector("a", "b", "source", **{"source.cluster.api.credential": LEAKED})
    assert run_resource(rules.no_plaintext_secrets_in_connector_config, res) == []
    [message] = run_resource(
        rules.no_plaintext_secrets_in_connector_config, res, {"secretKeyFragments": ["credential"]}
    )
    assert "'source.cluster.api.credential'" in message and LEAKED not in message


def test_whole_config_unknown_during_preview() -> None:
    res = connector("a", "b", "source", config=UNKNOWN_MAP)
    assert run_resource(rules.no_plaintext_secrets_in_connector_config, res) == []


# --- source-connector-min-tasks -------------------------------------------------------------


def test_single_task_source_connector_outside_dev(prod_stack: str) -> None:
    [message] = run_resource(rules.source_connector_min_tasks, connector("a", "b", "source", **{"tasks.max": "1"}))
    assert message.startswith("Source connector mm2-a-to-b-source (flow a->b): tasks.max is 1 on stack 'prod'")
    assert "Fix: set tasksMax (tasks.max) to at least 2 for the flow." in message
    [unset] = run_resource(rules.source_connector_min_tasks, connector("a", "b", "source", **{"tasks.max": None}))
    assert "tasks.max is not set (Connect's default 1)" in unset
    [higher] = run_resource(rules.source_connector_min_tasks, connector("a", "b", "source"), {"minTasks": 8})
    assert "at least 8" in higher


def test_enough_tasks_dev_and_other_connectors_pass(prod_stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_resource(rules.source_connector_min_tasks, connector("a", "b", "source", **{"tasks.max": "2"})) == []
    assert run_resource(rules.source_connector_min_tasks, connector("a", "b", "checkpoint", **{"tasks.max": "1"})) == []
    assert run_resource(rules.source_connector_min_tasks, connector("a", "b", "source", **{"tasks.max": UNKNOWN})) == []
    monkeypatch.setenv("PULUMI_STACK", "dev")
    assert run_resource(rules.source_connector_min_tasks, connector("a", "b", "source", **{"tasks.max": "1"})) == []


# --- shared-target-settings-consistent ------------------------------------------------------


def test_flows_into_one_target_with_different_separators() -> None:
    target = cluster("c")
    resources = [
        target,
        *replication_flow("a", "c"),
        *replication_flow("b", "c", **{"replication.policy.separator": "_"}),
    ]
    [(message, where)] = run_stack(rules.shared_target_settings_consistent, resources)
    assert message.startswith(
        "Flows into cluster 'c' disagree on replication.policy.separator: "
        "a->c: '.' (mm2-a-to-c-source); b->c: '_' (mm2-b-to-c-source)."
    )
    assert "Fix: set replication.policy.separator once in mm2:defaults.settings" in message
    assert where == target.urn


def test_heartbeat_settings_and_policy_class_must_match() -> None:
    resources = [
        *replication_flow("a", "c", IDENTITY_POLICY, **{"emit.heartbeats.interval.seconds": "5"}),
        *replication_flow("b", "c", **{"heartbeats.topic.replication.factor": None}),
    ]
    found = messages(run_stack(rules.shared_target_settings_consistent, resources))
    assert [m.split(":")[0] for m in found] == [
        "Flows into cluster 'c' disagree on replication.policy.class",
        "Flows into cluster 'c' disagree on emit.heartbeats.interval.seconds",
    ]  # heartbeats RF: unset means MM2's 3, the same as a->c's explicit 3


def test_consistent_flows_and_distinct_targets_pass() -> None:
    resources = [
        *replication_flow("a", "c"),
        *replication_flow("b", "c", **{"replication.policy.separator": None}),
        *replication_flow("c", "a", **{"replication.policy.separator": "_"}),
        flow("d", "c", UNKNOWN),
    ]
    assert run_stack(rules.shared_target_settings_consistent, resources) == []


def test_shared_keys_are_configurable() -> None:
    resources = [
        *replication_flow("a", "c", **{"sync.topic.acls.enabled": "false"}),
        *replication_flow("b", "c"),
    ]
    assert run_stack(rules.shared_target_settings_consistent, resources) == []
    [message] = messages(
        run_stack(rules.shared_target_settings_consistent, resources, {"sharedKeys": ["sync.topic.acls.enabled"]})
    )
    assert "a->c: 'false' (mm2-a-to-c-source); b->c: '(unset)' (mm2-b-to-c-source)" in message


# --- unknowns everywhere --------------------------------------------------------------------


def test_every_rule_survives_a_preview_full_of_unknowns(prod_stack: str) -> None:
    resources = [
        cluster(UNKNOWN, brokers=UNKNOWN, datacenter=UNKNOWN, protocol=UNKNOWN),
        cluster("b", brokers=UNKNOWN),
        resource("mm2:index:KafkaCluster", "kafka-empty", {}),
        resource("mm2:index:ReplicationFlow", "flow-unknown", {"source": UNKNOWN, "target": UNKNOWN}),
        flow("a", "b", UNKNOWN, name_preserving=UNKNOWN, disaster_recovery=UNKNOWN, sync_group_offsets=UNKNOWN),
        worker_group(rest_auth=UNKNOWN, name=UNKNOWN),
        resource(
            "pulumi-python:dynamic/connect:Connector", "mm2-a-to-b-source", {"name": UNKNOWN, "config": UNKNOWN_MAP}
        ),
        connector("a", "b", "checkpoint", config={k: UNKNOWN for k in ("connector.class", "topics", "tasks.max")}),
        connector("a", "b", "heartbeat", config={"connector.class": UNKNOWN, "source.cluster.alias": UNKNOWN}),
    ]
    for policy in rules.ALL_POLICIES:
        if isinstance(policy, rules.StackValidationPolicy):
            assert run_stack(policy, resources) == [], policy.name
        else:
            for res in resources:
                assert run_resource(policy, res) == [], policy.name
