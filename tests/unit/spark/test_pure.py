"""The driver's pure helpers: outputs contract, loop detection, catch-up arithmetic, jar picking, report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.outputs.contract import OutputsError, StackExports
from spark.catchup import records_short_of_cut
from spark.jars import artifact_name, jars_to_add
from spark.loops import illegal_topics
from spark.outputs import ValidationScope, validation_view
from spark.report import Check, FlowReport, Report, Status, TopicReport, render_table

FLOW: dict[str, Any] = {
    "source": "primary",
    "target": "dr",
    "workerGroup": "mm2",
    "topics": {"orders": "primary.orders", "payments": "primary.payments"},
    "checkpointsTopic": "primary.checkpoints.internal",
    "offsetSyncsTopic": "mm2-offset-syncs.dr.internal",
    "heartbeatsTopic": "heartbeats",
    "exactlyOnce": False,
    "offsetLagMax": 100,
}
CLUSTERS = {
    "primary": {"bootstrap": "127.0.0.1:19092", "securityProtocol": "PLAINTEXT"},
    "dr": {"bootstrap": "127.0.0.1:19094", "securityProtocol": "PLAINTEXT"},
}


def outputs(**flows: dict[str, Any]) -> Any:
    return _scope({"clusters": CLUSTERS, "flows": flows or {"primary->dr": FLOW}})


def test_architecture_doc_example_parses() -> None:
    doc = (Path(__file__).resolve().parents[3] / "docs" / "architecture.md").read_text()
    block = doc.split("## Stack outputs", 1)[1].split("```json", 1)[1].split("```", 1)[0]
    data = json.loads(block)
    data["clusters"].setdefault("dr", CLUSTERS["dr"])  # the doc abbreviates the cluster map
    parsed = _scope(data)
    (flow,) = parsed.flows
    assert (flow.source, flow.target, flow.topics) == ("primary", "dr", {"orders": "primary.orders"})
    assert flow.offset_syncs_cluster == "primary" and flow.separator == "." and not flow.name_preserving


def test_flow_details_are_derived() -> None:
    (flow,) = outputs().flows
    assert flow.replicated_heartbeats_topic == "primary.heartbeats"
    assert flow.source_topic_of("primary.payments") == "payments"
    target_syncs = {**FLOW, "offsetSyncsTopic": "mm2-offset-syncs.primary.internal"}
    assert outputs(**{"primary->dr": target_syncs}).flows[0].offset_syncs_cluster == "dr"
    dashed = {**FLOW, "checkpointsTopic": "primary-checkpoints-internal", "topics": {"orders": "primary-orders"}}
    assert outputs(**{"primary->dr": dashed}).flows[0].separator == "-"
    identity = {**FLOW, "topics": {"orders": "orders"}}
    assert outputs(**{"primary->dr": identity}).flows[0].name_preserving


def test_disabled_flows_are_skipped_and_problems_are_listed_together() -> None:
    assert outputs(**{"primary->dr": {**FLOW, "enabled": False}}).flows == ()
    with pytest.raises(OutputsError) as err:
        _scope({"clusters": {"primary": {}}, "flows": {"a->b": {"source": "a"}}})
    assert 'clusters["primary"] has no "bootstrap"' in str(err.value)
    assert 'flows["a->b"] lacks target, topics' in str(err.value)


def test_flows_paused_or_stopped_by_config_are_not_validated() -> None:
    paused = {**FLOW, "desiredStates": {"source": "PAUSED", "checkpoint": "RUNNING", "heartbeat": "RUNNING"}}
    assert outputs(**{"primary->dr": paused}).flows == ()
    checkpoint_only = {**FLOW, "desiredStates": {"source": "RUNNING", "checkpoint": "STOPPED"}}
    assert [f.name for f in outputs(**{"primary->dr": checkpoint_only}).flows] == ["primary->dr"]


def test_a_stopped_flow_still_explains_the_remote_topics_it_made() -> None:
    # A cluster pair's standby flow (or a flow declared stopped) made its remote topics before it
    # stopped: the loops check must not call them stray.
    stopped = {**FLOW, "desiredStates": {"source": "STOPPED", "checkpoint": "STOPPED", "heartbeat": "STOPPED"}}
    scope = outputs(**{"primary->dr": stopped})
    assert scope.flows == () and [f.name for f in scope.enabled_flows] == ["primary->dr"]
    assert illegal_topics({"dr": ["primary.orders", "primary.checkpoints.internal"]}, scope.enabled_flows) == []


def test_client_settings_never_show_secrets() -> None:
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="mm2" password="s3cret";'
    clusters = {
        **CLUSTERS,
        "primary": {
            "bootstrap": "h:1",
            "securityProtocol": "SASL_PLAINTEXT",
            "sasl": {"mechanism": "SCRAM-SHA-512", "jaasConfig": jaas},
        },
    }
    c = _scope({"clusters": clusters, "flows": {}}).clusters["primary"]
    assert c.java_client_properties()["sasl.jaas.config"] == jaas
    assert c.librdkafka_config() == {
        "bootstrap.servers": "h:1",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "mm2",
        "sasl.password": "s3cret",
    }
    assert "s3cret" not in repr(c.redacted())


def test_loops_one_way() -> None:
    flows = outputs().flows
    found = illegal_topics(
        {
            "primary": ["orders", "dr.primary.orders", "mm2-offset-syncs.dr.internal", "__consumer_offsets"],
            "dr": [
                "primary.orders",
                "primary.other",
                "primary.heartbeats",
                "primary.checkpoints.internal",
                "heartbeats",
                "dr.primary.orders",
                "primary.dr.orders",
            ],
        },
        flows,
    )
    assert [(f.cluster, f.topic) for f in found] == [
        ("dr", "dr.primary.orders"),
        ("dr", "primary.dr.orders"),
        ("primary", "dr.primary.orders"),
    ]
    assert "no flow dr->primary" in found[2].reason


def test_loops_two_way_and_chains() -> None:
    back = {
        **FLOW,
        "source": "dr",
        "target": "primary",
        "topics": {"orders": "dr.orders"},
        "checkpointsTopic": "dr.checkpoints.internal",
        "offsetSyncsTopic": "mm2-offset-syncs.primary.internal",
    }
    chain = {
        **FLOW,
        "source": "dr",
        "target": "backup",
        "topics": {},
        "checkpointsTopic": "dr.checkpoints.internal",
        "offsetSyncsTopic": "mm2-offset-syncs.backup.internal",
    }
    clusters = {**CLUSTERS, "backup": {"bootstrap": "h:3"}}
    flows = _scope(
        {"clusters": clusters, "flows": {"primary->dr": FLOW, "dr->primary": back, "dr->backup": chain}}
    ).flows
    found = illegal_topics(
        {
            "primary": ["dr.orders", "dr.primary.orders"],
            "dr": ["primary.orders"],
            "backup": ["dr.primary.orders", "primary.orders"],
        },
        flows,
    )
    # MM2's cycle check never writes primary's own data back to primary; backup only hears from dr.
    assert [(f.cluster, f.topic) for f in found] == [("backup", "primary.orders"), ("primary", "dr.primary.orders")]


@pytest.mark.parametrize(
    ("cut", "target", "sync", "lag"),
    [
        ((0, 0), None, None, 0),  # empty range
        ((0, 10), None, None, 10),  # no remote partition
        ((0, 10), (0, 10), None, 0),  # counts
        ((0, 10), (0, 7), None, 3),
        ((5, 10), (0, 5), None, 0),  # source deleted its first records, target still has them
        ((0, 10), (0, 4), (9, 3), 0),  # the sync proves the last record before the cut landed
        ((0, 10), (0, 6), (4, 4), 4),  # 5 more needed after the sync point, 1 there
        ((0, 10), (0, 12), (4, 6), 0),  # duplicates after the sync point
    ],
)
def test_records_short_of_cut(
    cut: tuple[int, int], target: tuple[int, int] | None, sync: tuple[int, int] | None, lag: int
) -> None:
    assert records_short_of_cut(cut, target, sync) == lag


def test_jar_names_and_what_spark_already_ships() -> None:
    assert artifact_name("spark-sql-kafka-0-10_2.13-4.2.0.jar") == "spark-sql-kafka-0-10_2.13"
    assert (
        artifact_name("spark-token-provider-kafka-0-10_2.13-4.1.0-preview1.jar")
        == "spark-token-provider-kafka-0-10_2.13"
    )
    assert artifact_name("jackson-datatype-jsr310-2.21.2.jar") == "jackson-datatype-jsr310"
    resolved = [
        "kafka-clients-3.9.2.jar",
        "commons-pool2-2.13.1.jar",
        "scala-library-2.13.15.jar",
        "slf4j-api-1.7.36.jar",
        "spark-sql-kafka-0-10_2.13-4.3.0.jar",
        "spark-tags_2.13-4.3.0.jar",
        "lz4-java-1.10.1.jar",
    ]
    shipped = {
        "scala-library-2.13.18.jar",
        "slf4j-api-2.0.17.jar",
        "spark-tags_2.13-4.3.0.jar",
        "lz4-java-1.11.0.jar",
        "commons-pool-1.5.4.jar",
    }
    assert jars_to_add(resolved, shipped) == [
        "commons-pool2-2.13.1.jar",
        "kafka-clients-3.9.2.jar",
        "spark-sql-kafka-0-10_2.13-4.3.0.jar",
    ]


def test_report_names_failed_checks_and_renders() -> None:
    topic = TopicReport(
        "orders",
        "primary.orders",
        partitions=[{"partition": 0, "sourceRecords": 3, "missing": 1}],
        checks=[Check("completeness", Status.FAIL, "1 missing"), Check("duplicates", Status.WARN, "2")],
    )
    flow = FlowReport("primary->dr", "primary", "dr", False, topics=[topic], checks=[Check("heartbeats", Status.PASS)])
    report = Report(meta={}, flows=[flow], checks=[Check("loops", Status.FAIL, "x")])
    assert report.failed_checks() == ["loops", "primary->dr: orders: completeness"]
    assert not report.passed
    text = render_table(report)
    assert "RESULT: FAIL (2 failed check(s))" in text and "WARN  duplicates" in text
    assert report.to_dict()["flows"]["primary->dr"]["topics"]["orders"]["checks"]["duplicates"]["status"] == "warn"


def test_stack_client_settings_become_java_sasl_settings_and_back() -> None:
    outputs = {
        "clusters": {
            "primary": {
                "bootstrap": "127.0.0.1:19092",
                "securityProtocol": "SASL_PLAINTEXT",
                "client": {
                    "security.protocol": "SASL_PLAINTEXT",
                    "sasl.mechanism": "SCRAM-SHA-512",
                    "sasl.username": "admin",
                    "sasl.password": 'p"w',
                },
            }
        },
        "flows": {},
    }
    access = _scope(outputs).clusters["primary"]
    java = access.java_client_properties()
    assert java["sasl.mechanism"] == "SCRAM-SHA-512"
    assert java["sasl.jaas.config"] == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="p\\"w";'
    )
    assert "sasl.username" not in java and "sasl.password" not in java
    rd = access.librdkafka_config()
    assert rd["sasl.mechanisms"] == "SCRAM-SHA-512"
    assert rd["sasl.username"] == "admin"
    assert rd["sasl.password"] == 'p"w'
    assert "***" in str(access.redacted()) and 'p"w' not in str(access.redacted())


@pytest.mark.parametrize("password", ['a"b', "a\\b", 'x\\"y\\\\', '\\"', "plain"])
def test_a_password_reaches_both_clients_exactly_as_exported(password: str) -> None:
    """The librdkafka settings are the source: librdkafka gets the password untouched, and the
    Java JAAS string, read back as Kafka's JaasConfig reads it, yields the same password."""
    client = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": 'ad"m\\in',
        "sasl.password": password,
    }
    out = {"clusters": {"primary": {"bootstrap": "h:1", "securityProtocol": "SASL_PLAINTEXT", "client": client}}}
    access = _scope({**out, "flows": {}}).clusters["primary"]
    rd = access.librdkafka_config()
    assert (rd["sasl.username"], rd["sasl.password"]) == ('ad"m\\in', password)
    jaas = access.java_client_properties()["sasl.jaas.config"]
    assert _jaas_options(jaas) == {"username": 'ad"m\\in', "password": password}


def _jaas_options(jaas: str) -> dict[str, str]:
    """Kafka's JaasConfig tokenizer (a StreamTokenizer with `"` as quote char) in miniature: a
    quoted value ends at the first unescaped `"`, and `\\x` stands for `x`."""
    head = "org.apache.kafka.common.security.plain.PlainLoginModule required "
    assert jaas.startswith(head) and jaas.endswith(";")
    options, i, body = {}, 0, jaas[len(head) : -1]
    while i < len(body):
        eq = body.index("=", i)
        name, i = body[i:eq].strip(), eq + 2
        assert body[eq + 1] == '"'
        value = []
        while body[i] != '"':
            if body[i] == "\\":
                i += 1
            value.append(body[i])
            i += 1
        options[name], i = "".join(value), i + 1
    return options


def test_a_hand_written_jaas_config_gives_librdkafka_its_unescaped_credentials() -> None:
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p\\"w\\\\";'
    sasl = {"mechanism": "PLAIN", "jaasConfig": jaas}
    out = {"clusters": {"a": {"bootstrap": "h:1", "securityProtocol": "SASL_PLAINTEXT", "sasl": sasl}}, "flows": {}}
    access = _scope(out).clusters["a"]
    assert access.java_client_properties()["sasl.jaas.config"] == jaas
    rd = access.librdkafka_config()
    assert (rd["sasl.mechanisms"], rd["sasl.username"], rd["sasl.password"]) == ("PLAIN", "u", 'p"w\\')


def test_stack_ca_becomes_a_java_pem_truststore_and_back() -> None:
    outputs = {
        "clusters": {
            "primary": {
                "bootstrap": "127.0.0.1:19092",
                "securityProtocol": "SASL_SSL",
                "client": {
                    "security.protocol": "SASL_SSL",
                    "ssl.ca.location": "/run/dev/tls/ca.pem",
                    "sasl.mechanism": "SCRAM-SHA-512",
                    "sasl.username": "admin",
                    "sasl.password": "pw",
                },
            }
        },
        "flows": {},
    }
    access = _scope(outputs).clusters["primary"]
    java = access.java_client_properties()
    assert java["ssl.truststore.type"] == "PEM"
    assert java["ssl.truststore.location"] == "/run/dev/tls/ca.pem"
    assert "ssl.ca.location" not in java  # not a Java client key
    back = access.librdkafka_config()
    assert back["ssl.ca.location"] == "/run/dev/tls/ca.pem" and "ssl.truststore.type" not in back


def _scope(data: dict[str, Any]) -> ValidationScope:
    """The stage's view of outputs already parsed from JSON."""
    return validation_view(StackExports.from_json(data))
