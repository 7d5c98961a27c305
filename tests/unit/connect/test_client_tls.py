"""The Connect client over HTTPS: a certificate that does not verify fails at once, with the fix."""

from __future__ import annotations

import httpx
import pytest

from components.connect.client import ConnectClient
from components.connect.errors import ConnectTlsError, ConnectUnavailable


def test_certificate_failure_is_not_retried_and_names_the_fix() -> None:
    sleeps: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in chain",
            request=request,
        )

    client = ConnectClient(
        "https://127.0.0.1:18083",
        auth=("mm2-admin", "s3cret-password"),
        transport=httpx.MockTransport(handler),
        sleep=sleeps.append,
    )
    with client, pytest.raises(ConnectTlsError) as err:
        client.get_status("mm2-primary-to-dr-source")
    assert sleeps == []
    text = str(err.value)
    assert "ca_pem" in text and "connect.<group>.caPem" in text and "GET /connectors/" in text
    assert "s3cret-password" not in text


def test_other_connection_failures_are_still_retried() -> None:
    sleeps: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    client = ConnectClient(
        "https://127.0.0.1:18083", transport=httpx.MockTransport(handler), sleep=sleeps.append, retry_budget_s=2
    )
    with client, pytest.raises(ConnectUnavailable):
        client.get_status("x")
    assert sleeps
