"""A SASL stack whose passwords hold `"` and `\\`, end to end: brokers, workers and connectors
authenticate, records replicate, and the Spark stage reads both clusters with the exported
credentials (its Java properties derived from the librdkafka settings, never parsed back).

One deployment of the dev stack (SASL_PLAINTEXT + SCRAM-SHA-512) with every SASL password given
in `mm2:secrets`; the values are test constants, never printed by the assertions.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from components.kafka.admin import login, logs_in
from tests.integration.harness import TestStack, arrives, deployed, produce_one
from tests.integration.validation_stage import run_validator

pytestmark = pytest.mark.integration

# Each holds a quote and a backslash, one of them next to each other and one at the end, where a
# JAAS string would break first.
PASSWORDS = {
    "primary.admin.password": 'adm"in\\one',
    "dr.admin.password": 'adm\\"in-two\\',
    "primary.mm2.password": 'mm2"\\primary',
    "dr.mm2.password": 'mm2\\dr"',
    "mm2.worker.password": 'work"er\\\\',
}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with deployed(tmp_path_factory.mktemp("quoted")) as s:
        for key, value in PASSWORDS.items():
            s.set_secret(key, value)
        s.up()
        yield s
    assert s.markers() == [], f"processes left behind: {s.markers()}"


def test_the_stack_exports_the_passwords_exactly_as_given(stack: TestStack) -> None:
    out = stack.outputs()
    for alias in ("primary", "dr"):
        client = out["clusters"][alias]["client"]
        assert client["sasl.password"] == PASSWORDS[f"{alias}.admin.password"], f"{alias} admin password changed"
        assert out["clusters"][alias]["users"]["mm2"] == PASSWORDS[f"{alias}.mm2.password"]


def test_the_stack_tells_a_refused_login_from_an_accepted_one(stack: TestStack) -> None:
    """`logs_in` / `login`, which a kubernetes admin rotation asks before it sets the new password."""
    cluster = stack.outputs()["clusters"]["primary"]
    props = {"bootstrap": cluster["bootstrap"], "client": cluster["client"]}
    assert logs_in(props) is True
    assert logs_in({**props, "client": {**props["client"], "sasl.password": "not-the-password"}}) is False
    # Not reached (here TLS spoken to a plaintext listener): no verdict, and librdkafka's reason kept.
    tls = login({**props, "client": {**props["client"], "security.protocol": "SASL_SSL"}}, bound_s=3.0)
    assert tls.accepted is None and "SSL" in tls.said, tls


def test_records_replicate_with_quoted_passwords(stack: TestStack) -> None:
    out = stack.outputs()
    key = f"quoted-{uuid.uuid4().hex[:8]}".encode()
    produce_one(out, "primary", "orders", key, b"a record")
    assert arrives(out, "dr", "primary.orders", key, 180, "it-quoted"), "the record never reached dr"


def test_the_spark_stage_passes_with_quoted_passwords(stack: TestStack, tmp_path: Path) -> None:
    report = run_validator(stack, stack.outputs(), tmp_path)
    assert report["failedChecks"] == []
    assert "primary->dr" in report["flows"]
