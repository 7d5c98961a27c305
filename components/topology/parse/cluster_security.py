"""`mm2:clusters.<alias>.security`: protocol, the MM2 user's SASL login, and TLS stores.

Secure by default where the stack creates the users: a local cluster without a `security`
block runs SASL_PLAINTEXT + SCRAM-SHA-512; PLAINTEXT only when asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.topology.model import (
    DEFAULT_MM2_USER,
    Platform,
    SaslMechanism,
    SecretRef,
    Security,
    SecurityProtocol,
)
from components.topology.parse.problems import Problems
from components.topology.parse.values import as_mapping, as_secret, as_str, unknown_fields

SECURITY_FIELDS = (
    "protocol",
    "saslMechanism",
    "username",
    "password",
    "truststoreLocation",
    "truststorePassword",
    "keystoreLocation",
    "keystorePassword",
    "keyPassword",
    "caLocation",
)
# The secret keys of a local TLS cluster's store passwords (components/topology/tls.py).
_LOCAL_TLS_KEYS = {
    "truststorePassword": "tls.truststore.password",
    "keystorePassword": "{alias}.ssl.keystore.password",
    "keyPassword": "{alias}.ssl.keystore.password",
}
_STORE_FIELDS = ("truststoreLocation", "truststorePassword", "keystoreLocation", "keystorePassword", "keyPassword")
_STORE_PASSWORDS = (
    ("truststorePassword", "truststore.password"),
    ("keystorePassword", "keystore.password"),
    ("keyPassword", "key.password"),
)


def parse_security(problems: Problems, raw: Any, where: str, alias: str, platform: Platform) -> Security | None:
    local = platform is Platform.LOCAL
    if raw is None and local:
        raw = {"protocol": SecurityProtocol.SASL_PLAINTEXT.value}
    mapping = as_mapping(problems, raw, where)
    if mapping is None:
        return None
    unknown_fields(problems, mapping, SECURITY_FIELDS, where)
    protocol = SecurityProtocol.SASL_PLAINTEXT if local else SecurityProtocol.PLAINTEXT
    if "protocol" in mapping:
        try:
            protocol = SecurityProtocol(str(mapping["protocol"]).strip().upper())
        except ValueError:
            problems.add(
                f"{where}.protocol",
                f"unknown security protocol {mapping['protocol']!r}.",
                f"Use one of {', '.join(p.value for p in SecurityProtocol)}.",
            )
            return None
    mechanism, username, password = _sasl_login(problems, mapping, where, alias, protocol, local)
    truststore, keystore, refs = _stores(problems, mapping, where, alias, protocol, local)
    ca_location = _ca_location(problems, mapping, where, protocol, local)
    return Security(
        protocol=protocol,
        sasl_mechanism=mechanism,
        username=username,
        password=password,
        truststore_location=truststore,
        truststore_password=refs["truststorePassword"],
        keystore_location=keystore,
        keystore_password=refs["keystorePassword"],
        key_password=refs["keyPassword"],
        ca_location=ca_location,
    )


def _ca_location(
    problems: Problems, mapping: Mapping[str, Any], where: str, protocol: SecurityProtocol, local: bool
) -> str | None:
    """The PEM CA this machine's clients (the stack's topic and user providers, the bin/ tools,
    the Spark stage) verify a kubernetes, docker or external TLS cluster with."""
    if "caLocation" not in mapping:
        return None
    if local:
        problems.add(
            f"{where}.caLocation",
            "a local cluster's brokers have certificates from the stack's own CA, which its clients already trust.",
            "Remove caLocation.",
        )
        return None
    if not protocol.uses_tls:
        problems.add(
            f"{where}.caLocation",
            f"caLocation has no effect with protocol {protocol.value}.",
            "Use protocol SSL or SASL_SSL, or remove it.",
        )
        return None
    return as_str(problems, mapping["caLocation"], f"{where}.caLocation")


def _sasl_login(
    problems: Problems, mapping: Mapping[str, Any], where: str, alias: str, protocol: SecurityProtocol, local: bool
) -> tuple[SaslMechanism | None, str | None, SecretRef | None]:
    """The MM2 user's mechanism, name and password reference (all None without SASL)."""
    if not protocol.uses_sasl:
        for field_name in ("saslMechanism", "username", "password"):
            if field_name in mapping:
                if field_name == "password":
                    # still catch the plain-text secret even where it is unused
                    as_secret(problems, mapping["password"], f"{where}.password", f"{alias}.mm2.password")
                problems.add(
                    f"{where}.{field_name}",
                    f"{field_name} has no effect with protocol {protocol.value}.",
                    "Use protocol SASL_PLAINTEXT or SASL_SSL, or remove it.",
                )
        return None, None, None
    mechanism: SaslMechanism | None = None
    username: str | None = None
    password: SecretRef | None = None
    raw_mech = mapping.get("saslMechanism", SaslMechanism.SCRAM_SHA_512.value if local else None)
    if raw_mech is None:
        problems.add(
            f"{where}.saslMechanism",
            f"{protocol.value} needs a SASL mechanism.",
            "Set saslMechanism to PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.",
        )
    else:
        try:
            mechanism = SaslMechanism(str(raw_mech).strip().upper())
        except ValueError:
            problems.add(
                f"{where}.saslMechanism",
                f"unknown SASL mechanism {raw_mech!r}.",
                "Use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.",
            )
    if "username" in mapping:
        username = as_str(problems, mapping["username"], f"{where}.username")
    elif local:
        username = DEFAULT_MM2_USER  # the stack creates it
    else:
        problems.add(f"{where}.username", f"{protocol.value} needs the MM2 user name.", "Set username, e.g. mm2.")
    if "password" in mapping:
        password = as_secret(problems, mapping["password"], f"{where}.password", f"{alias}.mm2.password")
    elif local:
        password = SecretRef(f"{alias}.mm2.password")  # generated unless mm2:secrets has it
    else:
        problems.add(
            f"{where}.password",
            f"{protocol.value} needs the MM2 user's password reference.",
            f'Set password: {{secret: "{alias}.mm2.password"}}.',
        )
    return mechanism, username, password


def _stores(
    problems: Problems, mapping: Mapping[str, Any], where: str, alias: str, protocol: SecurityProtocol, local: bool
) -> tuple[str | None, str | None, dict[str, SecretRef | None]]:
    """(truststore location, keystore location, store password references by field)."""
    refs: dict[str, SecretRef | None] = {}
    for field_name, suffix in _STORE_PASSWORDS:
        refs[field_name] = (
            as_secret(problems, mapping[field_name], f"{where}.{field_name}", f"{alias}.ssl.{suffix}")
            if field_name in mapping
            else None
        )
    truststore = (
        as_str(problems, mapping["truststoreLocation"], f"{where}.truststoreLocation")
        if "truststoreLocation" in mapping
        else None
    )
    keystore = (
        as_str(problems, mapping["keystoreLocation"], f"{where}.keystoreLocation")
        if "keystoreLocation" in mapping
        else None
    )
    if not protocol.uses_tls:
        for field_name in _STORE_FIELDS:
            if field_name in mapping:
                problems.add(
                    f"{where}.{field_name}",
                    f"{field_name} has no effect with protocol {protocol.value}.",
                    "Use protocol SSL or SASL_SSL, or remove it.",
                )
    if protocol.uses_tls and local:
        _reject_local_stores(problems, mapping, where, alias, protocol, refs)
        truststore, keystore = None, None
        refs = {"truststorePassword": None, "keystorePassword": None, "keyPassword": None}
    if protocol.uses_tls and not local and refs["truststorePassword"] is not None and truststore is None:
        problems.add(
            f"{where}.truststorePassword",
            "a truststore password without truststoreLocation has no store to open.",
            "Set truststoreLocation to the truststore the Connect workers read, or remove truststorePassword "
            "(clients then trust the JVM's default CAs).",
        )
    if keystore is not None and refs["keystorePassword"] is None:
        problems.add(
            f"{where}.keystorePassword",
            "a keystore needs its password reference.",
            f'Set keystorePassword: {{secret: "{alias}.ssl.keystore.password"}}.',
        )
    return truststore, keystore, refs


def _reject_local_stores(
    problems: Problems,
    mapping: Mapping[str, Any],
    where: str,
    alias: str,
    protocol: SecurityProtocol,
    refs: Mapping[str, SecretRef | None],
) -> None:
    # The stack's CA issues the brokers' certificates and the truststore (see
    # components/topology/tls.py); stores brought from elsewhere would not match it.
    for field_name in ("truststoreLocation", "keystoreLocation"):
        if field_name in mapping:
            problems.add(
                f"{where}.{field_name}",
                f"a local {protocol.value} cluster uses the keystore and truststore the stack "
                "generates from its own CA; a store given here would not match its certificates.",
                f"Remove {field_name} (for your own certificates, use platform: external).",
            )
    for field_name in ("truststorePassword", "keystorePassword", "keyPassword"):
        if field_name in mapping and refs[field_name] is not None:
            problems.add(
                f"{where}.{field_name}",
                "the passwords of the stores a local cluster uses are generated by the stack.",
                f"Remove {field_name}; to choose one yourself, set it with `pulumi config set --secret "
                f"--path 'mm2:secrets[\"{_LOCAL_TLS_KEYS[field_name].format(alias=alias)}\"]' <password>`.",
            )
