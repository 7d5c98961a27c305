"""Progress lines: one whole line per call, even from many threads; cluster lines hold no property map."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from spark.console import log
from spark.outputs import ClusterAccess


def test_lines_of_threads_never_run_together(capsys: pytest.CaptureFixture[str]) -> None:
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: log(f"flow {i}: caught up"), range(400)))
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 400
    assert all(re.fullmatch(r"\[validate \d\d:\d\d:\d\d\] flow \d+: caught up", line) for line in lines)


def test_a_cluster_reads_as_address_and_authentication_never_as_properties() -> None:
    client = {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u", "sasl.password": "s3cret"}
    c = ClusterAccess("a", "127.0.0.1:29975", "SASL_SSL", {**client, "ssl.ca.location": "/x/ca.pem"})
    assert c.describe() == "127.0.0.1:29975 (SASL_SSL, SCRAM-SHA-512, stack CA)"
    assert ClusterAccess("b", "h:1").describe() == "h:1 (PLAINTEXT)"
