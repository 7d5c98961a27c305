"""Secret-file text and the secret keys of container deployments."""

from __future__ import annotations

import pytest

from components.platform.secret_files import container_secret_keys, rest_users_text, secrets_file_text

from .helpers import SASL_KUBERNETES, topology


def test_secret_files_render_and_name_missing_keys() -> None:
    assert secrets_file_text(("a.x", "b.y"), {"a.x": "1", "b.y": "2", "c": "3"}) == "a.x=1\nb.y=2\n"
    with pytest.raises(KeyError, match=r"mm2:secrets\[\\?\"b.y\\?\"\]"):
        secrets_file_text(("a.x", "b.y"), {"a.x": "1"})
    topo = topology(SASL_KUBERNETES)
    assert rest_users_text(topo.worker_groups["mm2"], {"mm2.rest.password": "pw"}) == "mm2-admin: pw\n"
    # The brokers read admin's password (their JAAS table), the workers their own user's.
    assert container_secret_keys(topo) == (
        "a.admin.password",
        "a.broker.tls.password",
        "a.mm2.password",
        "a.ssl.truststore.password",
        "b.admin.password",
        "b.broker.tls.password",
        "b.mm2.password",
        "b.ssl.truststore.password",
        "mm2.rest.password",
        "mm2.worker.password",
    )
