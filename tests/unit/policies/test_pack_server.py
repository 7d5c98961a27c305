"""The pack as the policy host runs it: `runpy.run_path("policies")`, then gRPC.

No Pulumi engine here: the test plays the engine's part over the analyzer protocol, which proves
that `__main__.py` loads the rules the way the host imports them and that the pack reports the
mandatory loop from connector outputs alone, with unknown values present.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

ROOT = Path(__file__).resolve().parents[3]
IDENTITY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
UNKNOWN_STRING = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


@pytest.fixture
def analyzer() -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    env = dict(os.environ, PULUMI_STACK="prod", PULUMI_PROJECT="mm2-replication", PULUMI_DRY_RUN="true")
    proc = subprocess.Popen(
        [sys.executable, "-u", "-c", "import runpy; runpy.run_path('policies', run_name='__main__')"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())  # the pack prints its port, then serves forever
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield analyzer_pb2_grpc.AnalyzerStub(channel)
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _resource(type_: str, name: str, props: dict[str, object]) -> analyzer_pb2.AnalyzerResource:
    properties = struct_pb2.Struct()
    properties.update(props)
    return analyzer_pb2.AnalyzerResource(
        type=type_, urn=f"urn:pulumi:prod::mm2-replication::{type_}::{name}", name=name, properties=properties
    )


def _connector(source: str, target: str, kind: str) -> analyzer_pb2.AnalyzerResource:
    name = f"mm2-{source}-to-{target}-{kind}"
    config = {
        "connector.class": f"org.apache.kafka.connect.mirror.Mirror{kind.capitalize()}Connector",
        "source.cluster.alias": source,
        "target.cluster.alias": target,
        "replication.policy.class": IDENTITY,
        "topics": "orders",
        "tasks.max": UNKNOWN_STRING,
    }
    return _resource("pulumi-python:dynamic/connect:Connector", name, {"name": name, "config": config})


@pytest.mark.timeout(60)
def test_pack_serves_its_policies_and_blocks_an_identity_loop(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == "mm2-replication-safety"
    assert len(info.policies) == 13

    resources = [
        _connector(s, t, k) for s, t in (("a", "b"), ("b", "a")) for k in ("source", "checkpoint", "heartbeat")
    ]
    # A component whose registered outputs replaced its inputs: nothing to read, nothing to crash on.
    resources.append(_resource("mm2:index:ReplicationFlow", "flow-a-to-b", {"summary": {"source": "a"}}))
    response = analyzer.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=resources))
    found = [(d.policyName, d.enforcementLevel) for d in response.diagnostics]
    assert found == [("no-name-preserving-replication-on-cycles", analyzer_pb2.MANDATORY)]
    assert "cycle a -> b -> a" in response.diagnostics[0].message
    assert response.diagnostics[0].urn == resources[0].urn
