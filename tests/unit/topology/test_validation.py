"""Every validation error names the key path and the fix, and all are reported at once."""

from __future__ import annotations

import pytest

from components.topology import TopologyError, parse_topology
from tests.unit.topology.helpers import dev_config, example, problem_at, problems

FLOW = "mm2:flows.primary->dr"


def test_valid_dev_config_parses_with_string_numbers_and_bools() -> None:
    config = dev_config()
    config["clusters"]["primary"]["brokers"] = "1"
    config["clusters"]["primary"]["port"] = "19092"
    config["flows"]["primary->dr"]["disasterRecovery"] = "true"
    config["flows"]["primary->dr"]["tasksMax"] = "2"
    topology = parse_topology(config)
    assert topology.clusters["primary"].port == 19092
    assert topology.flows[0].tasks_max == 2
    assert topology.flows[0].disaster_recovery is True


def test_unknown_cluster_in_flow_suggests_the_close_alias() -> None:
    config = dev_config()
    config["flows"]["primary->dr2"] = config["flows"].pop("primary->dr")
    problem = problem_at(config, "mm2:flows.primary->dr2")
    assert '"dr2"' in problem.message
    assert 'Did you mean "dr"' in problem.fix


def test_unknown_cluster_in_worker_group() -> None:
    config = dev_config()
    config["workerGroups"]["mm2"]["cluster"] = "disaster"
    problem = problem_at(config, "mm2:workerGroups.mm2.cluster")
    assert "disaster" in problem.message


def test_flow_from_a_cluster_to_itself() -> None:
    config = dev_config()
    config["flows"]["dr->dr"] = {"workerGroup": "mm2"}
    assert "into itself" in problem_at(config, "mm2:flows.dr->dr").message


def test_duplicate_flow_after_whitespace_normalisation() -> None:
    config = dev_config()
    config["flows"]["primary -> dr"] = {"workerGroup": "mm2"}
    problem = problem_at(config, "mm2:flows.primary -> dr")
    assert "duplicate flow primary->dr" in problem.message


@pytest.mark.parametrize("key", ["primary=>dr", "primary->dr->x", "->dr", "primary"])
def test_malformed_flow_key(key: str) -> None:
    config = dev_config()
    config["flows"][key] = {}
    problem = problem_at(config, f"mm2:flows.{key}")
    assert "source->target" in problem.message


def test_invalid_regex_names_the_list_index() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["topics"] = ["orders", "payments-(", "ok.*"]
    problem = problem_at(config, f"{FLOW}.topics[1]")
    assert "invalid regex" in problem.message
    assert "payments-(" in problem.message


def test_comma_inside_a_pattern_is_rejected() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["groupsExclude"] = ["a{1,3}"]
    assert "comma" in problem_at(config, f"{FLOW}.groupsExclude[0]").message


def test_replication_factor_above_target_brokers() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {"replication.factor": "3"}
    problem = problem_at(config, f'{FLOW}.settings["replication.factor"]')
    assert "1 broker(s) of cluster dr" in problem.message
    assert "at most 1" in problem.fix


def test_replication_factor_from_defaults_names_the_defaults_key() -> None:
    config = dev_config()
    config["defaults"]["settings"]["checkpoints.topic.replication.factor"] = "2"
    problem_at(config, 'mm2:defaults.settings["checkpoints.topic.replication.factor"]')


def test_offset_syncs_replication_factor_is_checked_where_the_topic_lives() -> None:
    config = dev_config()
    config["clusters"]["dr"]["brokers"] = 3
    config["flows"]["primary->dr"]["settings"] = {"offset-syncs.topic.replication.factor": "3"}
    # default location is the source (1 broker)
    assert "cluster primary" in problem_at(config, f'{FLOW}.settings["offset-syncs.topic.replication.factor"]').message
    config["flows"]["primary->dr"]["settings"]["offset-syncs.topic.location"] = "target"
    parse_topology(config)  # dr has 3 brokers


def test_topic_spec_replication_factor_above_brokers() -> None:
    config = dev_config()
    config["clusters"]["primary"]["topics"]["orders"]["replicationFactor"] = 2
    problem_at(config, "mm2:clusters.primary.topics.orders.replicationFactor")


def test_external_cluster_requires_broker_count_and_bootstrap() -> None:
    config = dev_config()
    config["clusters"]["dr"] = {"platform": "external"}
    problem_at(config, "mm2:clusters.dr.brokers")
    problem_at(config, "mm2:clusters.dr.bootstrap")


def test_unknown_setting_key_suggests_the_right_one() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {"sync.group.offset.enabled": "true"}
    problem = problem_at(config, f'{FLOW}.settings["sync.group.offset.enabled"]')
    assert 'Did you mean "sync.group.offsets.enabled"' in problem.fix


def test_unknown_structural_field_suggests_the_right_one() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["workergroup"] = "mm2"
    assert 'Did you mean "workerGroup"' in problem_at(config, f"{FLOW}.workergroup").fix


def test_plain_text_password_must_be_a_secret_reference() -> None:
    config = dev_config()
    config["clusters"]["primary"]["security"] = {
        "protocol": "SASL_PLAINTEXT",
        "saslMechanism": "PLAIN",
        "username": "mm2",
        "password": "hunter2",
    }
    problem = problem_at(config, "mm2:clusters.primary.security.password")
    assert "plain text" in problem.message
    assert '{secret: "primary.mm2.password"}' in problem.fix
    assert "hunter2" not in str(TopologyError(problems(config)))


@pytest.mark.parametrize(
    ("where", "key"),
    [
        ("settings", "basic.auth.password"),
        ("client", "producer.my.secret"),
    ],
)
def test_plain_text_secret_in_free_form_cluster_config(where: str, key: str) -> None:
    config = dev_config()
    config["clusters"]["primary"][where] = {key: "hunter2"}
    assert "plain text" in problem_at(config, f'mm2:clusters.primary.{where}["{key}"]').message


def test_plain_text_secret_in_worker_config_but_placeholders_pass() -> None:
    config = dev_config()
    config["workerGroups"]["mm2"]["workerConfig"] = {"some.secret": "hunter2"}
    problem_at(config, 'mm2:workerGroups.mm2.workerConfig["some.secret"]')
    config["workerGroups"]["mm2"]["workerConfig"] = {"some.secret": "${file:/etc/mm2/secrets.properties:x}"}
    parse_topology(config)


def test_flows_sharing_a_target_must_agree_on_policy_and_heartbeats() -> None:
    config = example("aggregation.yaml")
    config["clusters"]["k"]["brokers"] = 3
    config["flows"]["b->k"] = {"replicationPolicy": {"separator": "_"}}
    config["flows"]["c->k"] = {"settings": {"heartbeats.topic.replication.factor": "1"}}
    separator = problem_at(config, "mm2:flows.b->k.replicationPolicy.separator")
    assert "share target k" in separator.message
    heartbeats = problem_at(config, 'mm2:flows.c->k.settings["heartbeats.topic.replication.factor"]')
    assert "heartbeats.topic.replication.factor" in heartbeats.message


def test_disabled_flows_do_not_conflict_on_shared_target() -> None:
    config = example("aggregation.yaml")
    config["flows"]["b->k"] = {"enabled": False, "replicationPolicy": {"class": "identity"}}
    parse_topology(config)


def test_unknown_worker_group_in_flow() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["workerGroup"] = "mm3"
    problem = problem_at(config, f"{FLOW}.workerGroup")
    assert 'Did you mean "mm2"' in problem.fix


def test_local_cluster_without_port() -> None:
    config = dev_config()
    del config["clusters"]["dr"]["port"]
    assert "port+2i" in problem_at(config, "mm2:clusters.dr.port").fix


def test_overlapping_local_ports() -> None:
    config = dev_config()
    config["clusters"]["dr"]["port"] = 19093  # primary uses 19092..19093
    config["workerGroups"]["mm2"]["restPort"] = 19095  # dr uses 19093..19094, workers 19095..19096
    config["workerGroups"]["other"] = {"cluster": "dr", "restPort": 19096}
    assert "overlap mm2:clusters.primary.port" in problem_at(config, "mm2:clusters.dr.port").message
    assert "overlap mm2:workerGroups.mm2.restPort" in problem_at(config, "mm2:workerGroups.other.restPort").message


@pytest.mark.parametrize(
    ("section", "key", "path"),
    [
        ("flow-settings", "tasks.max", f'{FLOW}.settings["tasks.max"]'),
        ("flow-settings", "bootstrap.servers", f'{FLOW}.settings["bootstrap.servers"]'),
        ("flow-settings", "connector.class", f'{FLOW}.settings["connector.class"]'),
        ("flow-settings", "name", f'{FLOW}.settings["name"]'),
        ("flow-settings", "source.cluster.alias", f'{FLOW}.settings["source.cluster.alias"]'),
        ("flow-settings", "key.converter", f'{FLOW}.settings["key.converter"]'),
        ("flow-settings", "topics", f'{FLOW}.settings["topics"]'),
        ("client", "producer.bootstrap.servers", 'mm2:clusters.primary.client["producer.bootstrap.servers"]'),
        ("client", "consumer.security.protocol", 'mm2:clusters.primary.client["consumer.security.protocol"]'),
        ("worker", "group.id", 'mm2:workerGroups.mm2.workerConfig["group.id"]'),
        ("worker", "config.storage.topic", 'mm2:workerGroups.mm2.workerConfig["config.storage.topic"]'),
        ("worker", "sasl.mechanism", 'mm2:workerGroups.mm2.workerConfig["sasl.mechanism"]'),
        ("broker", "node.id", 'mm2:clusters.primary.brokerConfig["node.id"]'),
        ("broker", "listeners", 'mm2:clusters.primary.brokerConfig["listeners"]'),
        ("broker", "log.dirs", 'mm2:clusters.primary.brokerConfig["log.dirs"]'),
    ],
)
def test_typed_fields_own_their_kafka_keys(section: str, key: str, path: str) -> None:
    config = dev_config()
    if section == "flow-settings":
        config["flows"]["primary->dr"]["settings"] = {key: "x"}
    elif section == "client":
        config["clusters"]["primary"]["client"] = {key: "x"}
    elif section == "worker":
        config["workerGroups"]["mm2"]["workerConfig"] = {key: "x"}
    else:
        config["clusters"]["primary"]["brokerConfig"] = {key: "x"}
    problem = problem_at(config, path)
    assert "owned by a typed field" in problem.message
    assert problem.fix.startswith("Remove it; set ")


def test_client_override_without_client_prefix() -> None:
    config = dev_config()
    config["clusters"]["primary"]["client"] = {"fetch.min.bytes": "1"}
    assert "producer., consumer. or admin." in problem_at(config, 'mm2:clusters.primary.client["fetch.min.bytes"]').fix


@pytest.mark.parametrize(
    ("removed", "modern"),
    [
        ("topics.blacklist", "topics.exclude"),
        ("groups.blacklist", "groups.exclude"),
        ("config.properties.blacklist", "config.properties.exclude"),
        ("topics.whitelist", "topics"),
        ("groups.whitelist", "groups"),
    ],
)
def test_removed_keys_name_their_replacement(removed: str, modern: str) -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {removed: "x"}
    problem = problem_at(config, f'{FLOW}.settings["{removed}"]')
    assert "removed in Kafka 4" in problem.message
    assert f'"{modern}"' in problem.fix


@pytest.mark.parametrize("key", ["emit.checkpoints.enabled", "emit.offset-syncs.enabled"])
def test_settings_that_stop_the_checkpoint_connector_are_rejected(key: str) -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {key: "false"}
    problem_at(config, f'{FLOW}.settings["{key}"]')


def test_setting_values_are_type_checked() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["settings"] = {
        "sync.topic.acls.enabled": "yes",
        "offset.lag.max": "lots",
        "offset-syncs.topic.location": "middle",
    }
    problem_at(config, f'{FLOW}.settings["sync.topic.acls.enabled"]')
    problem_at(config, f'{FLOW}.settings["offset.lag.max"]')
    problem_at(config, f'{FLOW}.settings["offset-syncs.topic.location"]')


def test_local_tls_stores_come_from_the_stack_not_from_config() -> None:
    config = dev_config()
    config["clusters"]["primary"]["security"] = {"protocol": "SASL_SSL", "truststoreLocation": "/tmp/ts.p12"}
    assert "generates" in problem_at(config, "mm2:clusters.primary.security.truststoreLocation").message
    config["clusters"]["primary"]["security"] = {"protocol": "SSL"}
    assert parse_topology(config).clusters["primary"].security.protocol.value == "SSL"


def test_external_worker_group_needs_a_url() -> None:
    config = dev_config()
    config["clusters"]["dr"] = {"platform": "external", "brokers": 3, "bootstrap": "dr:9092"}
    problem_at(config, "mm2:workerGroups.mm2.url")
    config["workerGroups"]["mm2"] = {"cluster": "dr", "url": "http://connect.dr:8083"}
    assert parse_topology(config).worker_groups["mm2"].url == "http://connect.dr:8083"


def test_every_problem_is_reported_at_once() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["topics"] = ["("]
    config["flows"]["primary->dr"]["settings"] = {"tasks.max": "2", "refresh.topic.interval.seconds": "1"}
    config["flows"]["x->dr"] = {}
    config["clusters"]["dr"]["port"] = 19092
    config["clusters"]["primary"]["security"] = {
        "protocol": "SASL_PLAINTEXT",
        "saslMechanism": "PLAIN",
        "username": "u",
        "password": "pw",
    }
    with pytest.raises(TopologyError) as caught:
        parse_topology(config)
    keys = {p.key for p in caught.value.problems}
    expected = {
        f"{FLOW}.topics[0]",
        f'{FLOW}.settings["tasks.max"]',
        f'{FLOW}.settings["refresh.topic.interval.seconds"]',
        "mm2:flows.x->dr",
        "mm2:clusters.primary.port",
        "mm2:clusters.primary.security.password",
    }
    assert expected <= keys
    text = str(caught.value)
    assert text.startswith(f"{len(caught.value.problems)} problems in the mm2 stack config:")
    for problem in caught.value.problems:
        assert f"  {problem.key}: {problem.message} Fix: {problem.fix}" in text.splitlines()


def test_topology_error_is_a_value_error() -> None:
    assert issubclass(TopologyError, ValueError)


def test_flow_state_and_per_role_overrides() -> None:
    from components.topology import ConnectorState

    config = dev_config()
    assert parse_topology(config).flows[0].state_of("source") is ConnectorState.RUNNING
    config["flows"]["primary->dr"]["state"] = "Paused"
    config["flows"]["primary->dr"]["connectorStates"] = {"heartbeat": "running", "checkpoint": "stopped"}
    flow = parse_topology(config).flows[0]
    states = {role: flow.state_of(role).connect_state for role in ("source", "checkpoint", "heartbeat")}
    assert states == {"source": "PAUSED", "checkpoint": "STOPPED", "heartbeat": "RUNNING"}


def test_unknown_connector_state_and_role_name_the_key_and_the_choices() -> None:
    config = dev_config()
    config["flows"]["primary->dr"]["state"] = "halted"
    config["flows"]["primary->dr"]["connectorStates"] = {"sink": "paused"}
    state = problem_at(config, "mm2:flows.primary->dr.state")
    assert "'halted'" in state.message and "running, paused, stopped" in state.message
    role = problem_at(config, "mm2:flows.primary->dr.connectorStates.sink")
    assert "source, checkpoint, heartbeat" in role.fix
