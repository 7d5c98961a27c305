"""The stack's TLS material on this machine (type ``pulumi-python:dynamic/local:TlsMaterial``).

What to issue comes from the pure plan (`components/topology/tls.py`); this module makes it with
`keytool`, which ships with the JDK Kafka already needs (no openssl, no extra Python package):

- the CA: a PKCS12 keystore `ca.p12` (EC P-256 key, basic constraints CA) and its public `ca.pem`;
- the truststore: `truststore.p12`, the CA certificate only;
- per leaf (a local TLS cluster's brokers, a worker group's HTTPS REST listener): a PKCS12
  keystore `<leaf>.p12` holding the key, the certificate the CA signed (SANs from the plan) and
  the CA certificate.

Passwords reach keytool through its environment (`-storepass:env NAME`), never its command line;
the files are owner-only (0600) in an owner-only directory. `passwords` is a secret input and the
provider object holds no value (it is pickled into state).

Regeneration: `pulumi up` reissues a leaf whose certificate expires within its renew window (or
whose spec, password or file changed) and the whole chain when the CA does; outputs carry each
certificate's fingerprint, which the processes using it take as a restart trigger.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import ssl
import subprocess
import tempfile
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider, UpdateResult
from pulumi.runtime import rpc

from components.platform.errors import PlatformError
from components.platform.local.layout import tls_dir
from components.platform.local.process import find_java
from components.topology.model import Topology
from components.topology.tls import (
    CA_PASSWORD,
    RENEW_BEFORE_DAYS,
    TRUSTSTORE_PASSWORD,
    TlsLayout,
    TlsPlan,
    needs_renewal,
    tls_plan,
)

KEYTOOL_TIMEOUT_S = 120.0
# Short-lived JVMs: skip the optimizing compiler, they run for a second.
_KEYTOOL_JVM = ("-J-XX:TieredStopAtLevel=1", "-J-Xshare:auto")
_KEY = ("-keyalg", "EC", "-groupname", "secp256r1", "-sigalg", "SHA256withECDSA")
EXPIRED = "1970-01-01T00:00:00+00:00"


class TlsError(PlatformError):
    """keytool could not make the stack's TLS material."""


def keytool() -> str:
    java = Path(find_java())
    beside = java.resolve().parent / "keytool"
    if beside.exists():
        return str(beside)
    found = shutil.which("keytool")
    if found is None:
        raise TlsError(
            "TLS material: keytool not found next to java or on PATH. Fix: install a full JDK 17+ "
            "(keytool is part of it), as bin/bootstrap asks for."
        )
    return found


def _run(what: str, args: list[str], passwords: Mapping[str, str]) -> None:
    """Run keytool with `passwords` as environment variables (referenced as `-...:env NAME`)."""
    env = {**os.environ, **passwords}
    try:
        out = subprocess.run(
            [keytool(), *_KEYTOOL_JVM, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=KEYTOOL_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise TlsError(f"TLS material: keytool ({what}) did not finish in {KEYTOOL_TIMEOUT_S:g}s") from exc
    if out.returncode != 0:
        # keytool never echoes a password; its output names the store and the cause.
        detail = (out.stderr or out.stdout).strip()[-1500:]
        raise TlsError(
            f"TLS material: keytool failed to {what} (exit {out.returncode}): {detail}\n"
            "Fix: check the disk and the JDK; `pulumi up` regenerates the stack's TLS material."
        )


def _private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)


def _fingerprint(pem: str) -> str:
    return hashlib.sha256(pem.strip().encode()).hexdigest()


def _not_after(pem_file: Path, fallback_days: int) -> str:
    """The certificate's notAfter as ISO 8601 UTC (computed from its validity if unreadable)."""
    try:
        decoded = ssl._ssl._test_decode_cert(str(pem_file))  # type: ignore[attr-defined]
        stamp = datetime.strptime(decoded["notAfter"], "%b %d %H:%M:%S %Y %Z").replace(tzinfo=timezone.utc)
    except Exception:
        stamp = datetime.now(timezone.utc) + timedelta(days=fallback_days)
    return stamp.isoformat()


def _ca_store(layout: TlsLayout) -> tuple[str, ...]:
    return ("-keystore", layout.ca_keystore, "-storepass:env", "MM2_CA_PASSWORD")


def make_ca(layout: TlsLayout, common_name: str, days: int, password: str) -> dict[str, str]:
    root = Path(layout.root)
    _private_dir(root)
    for stale in (layout.ca_keystore, layout.ca_pem):
        Path(stale).unlink(missing_ok=True)
    env = {"MM2_CA_PASSWORD": password}
    _run(
        "create the stack CA",
        [
            "-genkeypair",
            "-alias",
            "ca",
            *_KEY,
            "-dname",
            f"CN={common_name}",
            "-validity",
            str(days),
            "-ext",
            "bc:c=ca:true,pathlen:0",
            "-ext",
            "KeyUsage:c=keyCertSign,cRLSign",
            "-keystore",
            layout.ca_keystore,
            "-storetype",
            "PKCS12",
            "-storepass:env",
            "MM2_CA_PASSWORD",
        ],
        env,
    )
    _run(
        "export the CA certificate",
        ["-exportcert", "-rfc", "-alias", "ca", "-file", layout.ca_pem, *_ca_store(layout)],
        env,
    )
    Path(layout.ca_keystore).chmod(0o600)
    Path(layout.ca_pem).chmod(0o644)  # public: tools read it to trust the brokers
    pem = Path(layout.ca_pem).read_text()
    return {"pem": pem, "fingerprint": _fingerprint(pem), "not_after": _not_after(Path(layout.ca_pem), days)}


def make_truststore(layout: TlsLayout, password: str) -> None:
    Path(layout.truststore).unlink(missing_ok=True)
    _run(
        "create the truststore",
        [
            *("-importcert", "-noprompt", "-alias", "ca", "-file", layout.ca_pem, "-keystore", layout.truststore),
            *("-storetype", "PKCS12", "-storepass:env", "MM2_TRUSTSTORE_PASSWORD"),
        ],
        {"MM2_TRUSTSTORE_PASSWORD": password},
    )
    Path(layout.truststore).chmod(0o600)


def make_leaf(layout: TlsLayout, leaf: Mapping[str, Any], password: str, ca_password: str) -> dict[str, str]:
    """A keystore with a fresh key and the certificate the CA signs for it (SANs from the plan)."""
    name = str(leaf["name"])
    keystore = layout.keystore(name)
    Path(keystore).unlink(missing_ok=True)
    days = str(int(leaf["validity_days"]))
    env = {"MM2_LEAF_PASSWORD": password, "MM2_CA_PASSWORD": ca_password}
    store = ["-keystore", keystore, "-storetype", "PKCS12", "-storepass:env", "MM2_LEAF_PASSWORD"]
    sans = ",".join(str(s).replace("IP:", "ip:").replace("DNS:", "dns:") for s in leaf["sans"])
    with tempfile.TemporaryDirectory(dir=layout.root) as work:
        csr, crt = f"{work}/{name}.csr", f"{work}/{name}.crt"
        _run(
            f"create the key of {name}",
            ["-genkeypair", "-alias", name, *_KEY, "-dname", f"CN={leaf['common_name']}", "-validity", days, *store],
            env,
        )
        _run(f"request a certificate for {name}", ["-certreq", "-alias", name, "-file", csr, *store], env)
        _run(
            f"sign the certificate of {name} with the stack CA",
            [
                *("-gencert", "-rfc", "-alias", "ca", *_ca_store(layout)),
                *("-infile", csr, "-outfile", crt, "-validity", days, "-ext", f"san={sans}"),
                *("-ext", "KeyUsage:c=digitalSignature,keyAgreement", "-ext", "ExtendedKeyUsage=serverAuth,clientAuth"),
            ],
            env,
        )
        _run(f"add the CA to {name}", ["-importcert", "-noprompt", "-alias", "ca", "-file", layout.ca_pem, *store], env)
        _run(f"install the certificate of {name}", ["-importcert", "-alias", name, "-file", crt, *store], env)
        pem = Path(crt).read_text()
        not_after = _not_after(Path(crt), int(days))
    Path(keystore).chmod(0o600)
    return {"fingerprint": _fingerprint(pem), "not_after": not_after}


# ---- provider --------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    value = rpc.unwrap_rpc_secret(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _leaves(props: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for leaf in _plain(props.get("leaves")) or []:
        spec = dict(leaf)
        spec["validity_days"] = int(spec["validity_days"])  # protobuf carries numbers as floats
        out[str(spec["name"])] = spec
    return out


def _password(props: Mapping[str, Any], key: str) -> str:
    value = (_plain(props.get("passwords")) or {}).get(key)
    if not value:
        raise TlsError(f"TLS material: no password for {key!r}. Fix: run `pulumi up` again (it generates it).")
    return str(value)


def _expiring(not_after: str | None, now: datetime, renew_before_days: int) -> bool:
    if not not_after:
        return True
    try:
        stamp = datetime.fromisoformat(str(not_after))
    except ValueError:
        return True
    return needs_renewal(stamp, now, renew_before_days)


def _renew_days(props: Mapping[str, Any]) -> int:
    return int(props.get("renew_before_days") or RENEW_BEFORE_DAYS)


def plan_work(olds: Mapping[str, Any], news: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """What an update must (re)make: {"ca": bool, "truststore": bool, "leaves": [names], "drop": [names]}.

    Pure but for file-existence checks: the CA when missing, expiring, renamed or re-passworded
    (then everything under it too); the truststore when the CA or its password changed; a leaf when
    missing, expiring, changed or re-passworded.
    """
    layout = TlsLayout(str(news["root"]))
    renew = _renew_days(news)
    old_pw, new_pw = _plain(olds.get("passwords")) or {}, _plain(news.get("passwords")) or {}
    old_ca, new_ca = _plain(olds.get("ca")) or {}, _plain(news.get("ca")) or {}
    ca = (
        not Path(layout.ca_keystore).exists()
        or not Path(layout.ca_pem).exists()
        or old_ca != new_ca
        or old_pw.get(CA_PASSWORD.key) != new_pw.get(CA_PASSWORD.key)
        or _expiring(olds.get("ca_not_after"), now, renew)
    )
    truststore = (
        ca
        or not Path(layout.truststore).exists()
        or old_pw.get(TRUSTSTORE_PASSWORD.key) != new_pw.get(TRUSTSTORE_PASSWORD.key)
    )
    old_leaves, new_leaves = _leaves(olds), _leaves(news)
    not_after = _plain(olds.get("not_after")) or {}
    leaves = [
        name
        for name, spec in sorted(new_leaves.items())
        if ca
        or old_leaves.get(name) != spec
        or not Path(layout.keystore(name)).exists()
        or old_pw.get(spec["password_key"]) != new_pw.get(spec["password_key"])
        or _expiring(not_after.get(name), now, renew)
    ]
    drop = sorted(set(old_leaves) - set(new_leaves))
    return {"ca": ca, "truststore": truststore, "leaves": leaves, "drop": drop}


def _make(olds: Mapping[str, Any], news: Mapping[str, Any], work: Mapping[str, Any]) -> dict[str, Any]:
    layout = TlsLayout(str(news["root"]))
    _private_dir(Path(layout.root))
    ca_pem, ca_not_after = olds.get("ca_pem"), olds.get("ca_not_after")
    not_after: dict[str, str] = dict(_plain(olds.get("not_after")) or {})
    fingerprints: dict[str, str] = dict(_plain(olds.get("fingerprints")) or {})
    ca_password = _password(news, CA_PASSWORD.key)
    if work["ca"]:
        ca_spec = _plain(news["ca"])
        made = make_ca(layout, str(ca_spec["common_name"]), int(ca_spec["validity_days"]), ca_password)
        ca_pem, ca_not_after, fingerprints["ca"] = made["pem"], made["not_after"], made["fingerprint"]
    if work["truststore"]:
        make_truststore(layout, _password(news, TRUSTSTORE_PASSWORD.key))
    leaves = _leaves(news)
    for name in work["leaves"]:
        made = make_leaf(layout, leaves[name], _password(news, leaves[name]["password_key"]), ca_password)
        not_after[name], fingerprints[name] = made["not_after"], made["fingerprint"]
    for name in work["drop"]:
        Path(layout.keystore(name)).unlink(missing_ok=True)
        not_after.pop(name, None)
        fingerprints.pop(name, None)
    return {
        **news,
        "ca_pem": ca_pem,
        "ca_not_after": ca_not_after,
        "not_after": not_after,
        "fingerprints": fingerprints,
    }


class TlsMaterialProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        work = plan_work({}, props, datetime.now(timezone.utc))
        try:
            outs = _make({}, props, {**work, "ca": True, "truststore": True})
        except BaseException:
            shutil.rmtree(str(props["root"]), ignore_errors=True)
            raise
        return CreateResult(id_=str(props["root"]), outs=outs)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        if olds.get("root") != news.get("root"):
            return DiffResult(changes=True, replaces=["root"], delete_before_replace=True)
        work = plan_work(olds, news, datetime.now(timezone.utc))
        changed = bool(work["ca"] or work["truststore"] or work["leaves"] or work["drop"])
        changed = changed or _plain(olds.get("renew_before_days")) != _plain(news.get("renew_before_days"))
        return DiffResult(changes=changed, replaces=[], delete_before_replace=False)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        work = plan_work(olds, news, datetime.now(timezone.utc))
        return UpdateResult(outs=_make(olds, news, work))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        # Files removed by hand show as expired, so the next `pulumi up` makes them again.
        layout = TlsLayout(str(props.get("root") or id_))
        outs = dict(props)
        if not Path(layout.ca_keystore).exists():
            outs["ca_not_after"] = EXPIRED
        not_after = dict(_plain(props.get("not_after")) or {})
        for name in list(not_after):
            if not Path(layout.keystore(name)).exists():
                not_after[name] = EXPIRED
        outs["not_after"] = not_after
        return ReadResult(id_=id_, outs=outs)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        root = Path(str(props["root"]))
        shutil.rmtree(root, ignore_errors=True)
        # Leave no empty run directory behind once the stack's processes are gone too.
        with contextlib.suppress(OSError):
            root.parent.rmdir()


class TlsMaterial(Resource, module="local", name="TlsMaterial"):
    """The stack CA, its truststore and the keystores of `plan`, under `layout.root`.

    `ca_pem` (public) is the CA certificate; `fingerprints` maps "ca" and each leaf name to its
    certificate's SHA-256, a restart trigger for the processes using it; `not_after` maps each
    leaf to its expiry (ISO 8601).
    """

    ca_pem: pulumi.Output[str]
    ca_not_after: pulumi.Output[str]
    not_after: pulumi.Output[dict[str, str]]
    fingerprints: pulumi.Output[dict[str, str]]

    def __init__(
        self,
        resource_name: str,
        *,
        layout: TlsLayout,
        plan: TlsPlan,
        passwords: pulumi.Input[Mapping[str, str]],
        renew_before_days: int = RENEW_BEFORE_DAYS,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        opts = pulumi.ResourceOptions.merge(pulumi.ResourceOptions(additional_secret_outputs=["passwords"]), opts)
        super().__init__(
            TlsMaterialProvider(),
            resource_name,
            {
                "root": layout.root,
                "ca": {"common_name": plan.ca_common_name, "validity_days": plan.ca_validity_days},
                "leaves": [leaf.as_dict() for leaf in plan.leaves],
                "passwords": pulumi.Output.secret(passwords),
                "renew_before_days": renew_before_days,
                "ca_pem": None,
                "ca_not_after": None,
                "not_after": None,
                "fingerprints": None,
            },
            opts,
        )


class StackTls:
    """The stack's TLS material as the components use it: file layout, CA and restart triggers."""

    def __init__(self, layout: TlsLayout, material: TlsMaterial) -> None:
        self.layout = layout
        self.material = material
        self.ca_pem: pulumi.Output[str] = material.ca_pem

    def restart_on(self, *leaves: str) -> pulumi.Output[dict[str, str]]:
        """Fingerprints of the CA and `leaves`: a process loading them restarts when one changes."""
        return self.material.fingerprints.apply(
            lambda f: {name: str((f or {}).get(name, "")) for name in ("ca", *leaves)}
        )


def tls_layout(run_root: str) -> TlsLayout:
    """Where a stack whose local run directory is `run_root` keeps its TLS material."""
    return TlsLayout(tls_dir(run_root))


def stack_tls(
    stack: str, topology: Topology, run_root: str, secrets: pulumi.Output[Mapping[str, str]]
) -> StackTls | None:
    """The stack's CA, truststore and keystores, when a local cluster or worker group uses TLS."""
    plan = tls_plan(topology, stack)
    if not plan.leaves:
        return None
    keys = plan.secret_keys
    layout = tls_layout(run_root)
    material = TlsMaterial(
        "tls", layout=layout, plan=plan, passwords=secrets.apply(lambda v: {k: str(v[k]) for k in keys})
    )
    return StackTls(layout, material)
