"""The stack's TLS material on disk: keytool never sees a password on its command line, files are
owner-only, certificates carry the loopback SANs, and `pulumi up` reissues what expires."""

from __future__ import annotations

import ssl
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from components.connect.client import ConnectClient
from components.connect.errors import ConnectError
from components.platform.local import tls
from components.topology.tls import TlsLayout

PASSWORDS = {
    "tls.ca.password": "ca-password-123",
    "tls.truststore.password": "truststore-password-456",
    "a.ssl.keystore.password": "keystore-password-789",
}
LEAF = {
    "name": "cluster-a",
    "common_name": "mm2 unit a broker",
    "sans": ["IP:127.0.0.1", "DNS:localhost"],
    "validity_days": 90,
    "password_key": "a.ssl.keystore.password",
}


def props(root: Path, **extra: Any) -> dict[str, Any]:
    return {
        "root": str(root),
        "ca": {"common_name": "mm2 unit CA", "validity_days": 3650},
        "leaves": [LEAF],
        "passwords": dict(PASSWORDS),
        "renew_before_days": 30,
        **extra,
    }


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[list[str]]]:
    """Real keytool runs (a few seconds), with every command line recorded."""
    calls: list[list[str]] = []
    real_run = subprocess.run

    def spy(cmd: list[str], **kwargs: Any) -> Any:
        calls.append(list(cmd))
        return real_run(cmd, **kwargs)

    root = tmp_path_factory.mktemp("tls") / "tls"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tls.subprocess, "run", spy)
        outs = tls.TlsMaterialProvider().create(props(root)).outs
    assert outs is not None
    return outs, calls


def test_passwords_never_reach_a_command_line(made: tuple[dict[str, Any], list[list[str]]]) -> None:
    _outs, calls = made
    assert len(calls) >= 7
    for cmd in calls:
        assert not any(pw in arg for pw in PASSWORDS.values() for arg in cmd), cmd[:3]
        assert any(arg.startswith("-storepass:env") for arg in cmd)


def test_files_are_owner_only_and_the_ca_is_public(made: tuple[dict[str, Any], list[list[str]]]) -> None:
    outs, _calls = made
    layout = TlsLayout(outs["root"])
    for path in (layout.ca_keystore, layout.truststore, layout.keystore("cluster-a")):
        assert Path(path).stat().st_mode & 0o077 == 0, path
    assert Path(layout.root).stat().st_mode & 0o077 == 0
    assert outs["ca_pem"] == Path(layout.ca_pem).read_text()
    assert sorted(p.name for p in Path(layout.root).iterdir()) == [
        "ca.p12",
        "ca.pem",
        "cluster-a.p12",
        "truststore.p12",
    ]


def test_leaf_certificate_has_loopback_sans_and_chains_to_the_ca(
    made: tuple[dict[str, Any], list[list[str]]],
) -> None:
    outs, _calls = made
    layout = TlsLayout(outs["root"])
    listing = subprocess.run(
        [tls.keytool(), "-list", "-v", "-keystore", layout.keystore("cluster-a"), "-storepass:env", "PW"],
        env={"PW": PASSWORDS["a.ssl.keystore.password"], "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "IPAddress: 127.0.0.1" in listing and "DNSName: localhost" in listing
    assert "Certificate chain length: 2" in listing and "Issuer: CN=mm2 unit CA" in listing
    not_after = datetime.fromisoformat(outs["not_after"]["cluster-a"])
    assert timedelta(days=89) < not_after - datetime.now(timezone.utc) <= timedelta(days=90, minutes=5)
    assert set(outs["fingerprints"]) == {"ca", "cluster-a"}
    # The PEM CA is usable by Python clients (httpx, the Connect client).
    assert ssl.create_default_context(cadata=outs["ca_pem"]).get_ca_certs()[0]["subject"] == (
        (("commonName", "mm2 unit CA"),),
    )


def test_update_plan(made: tuple[dict[str, Any], list[list[str]]]) -> None:
    outs, _calls = made
    now = datetime.now(timezone.utc)
    same = tls.plan_work(outs, props(Path(outs["root"])), now)
    assert same == {"ca": False, "truststore": False, "leaves": [], "drop": []}
    # A leaf inside its renew window (30 days) is reissued on `pulumi up`, alone.
    assert tls.plan_work(outs, props(Path(outs["root"])), now + timedelta(days=55))["leaves"] == []
    assert tls.plan_work(outs, props(Path(outs["root"])), now + timedelta(days=61))["leaves"] == ["cluster-a"]
    expired = {**outs, "not_after": {"cluster-a": tls.EXPIRED}}
    assert tls.plan_work(expired, props(Path(outs["root"])), now)["ca"] is False
    # A new CA password reissues the whole chain; a new truststore password only the truststore.
    rotated = props(Path(outs["root"]), passwords={**PASSWORDS, "tls.ca.password": "another-ca-password"})
    assert tls.plan_work(outs, rotated, now) == {"ca": True, "truststore": True, "leaves": ["cluster-a"], "drop": []}
    rotated = props(Path(outs["root"]), passwords={**PASSWORDS, "tls.truststore.password": "another-ts-pw"})
    assert tls.plan_work(outs, rotated, now) == {"ca": False, "truststore": True, "leaves": [], "drop": []}
    dropped = props(Path(outs["root"]), leaves=[])
    assert tls.plan_work(outs, dropped, now)["drop"] == ["cluster-a"]
    diff = tls.TlsMaterialProvider().diff("id", outs, props(Path(outs["root"])))
    assert diff.changes is False


def test_read_marks_missing_files_expired(tmp_path: Path) -> None:
    outs = {"root": str(tmp_path), "not_after": {"cluster-a": "2030-01-01T00:00:00+00:00"}, "ca_not_after": "x"}
    read = tls.TlsMaterialProvider().read(str(tmp_path), outs)
    assert read.outs is not None
    assert read.outs["not_after"] == {"cluster-a": tls.EXPIRED}
    assert read.outs["ca_not_after"] == tls.EXPIRED


def test_keytool_failure_names_the_step_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(tls.TlsError, match=r"(?s)create the stack CA .*at least 6 characters.*Fix:"):
        tls.make_ca(TlsLayout(str(tmp_path / "tls")), "x", 10, "short")


def test_connect_client_trusts_exactly_the_given_ca(made: tuple[dict[str, Any], list[list[str]]]) -> None:
    outs, _calls = made
    client = ConnectClient("https://127.0.0.1:1", ca_pem=outs["ca_pem"])
    client.close()
    with pytest.raises(ConnectError, match="not usable PEM"):
        ConnectClient("https://127.0.0.1:1", ca_pem="not a certificate")
