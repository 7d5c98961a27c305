"""Security of the stack: TLS between datacenters, an authenticated Connect REST API outside dev,
and no plain-text secret in a connector config."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from graph import flow_label
from model_facts import CONNECTOR_TYPE, WORKER_GROUP_TYPE
from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from rule_config import DEV_STACKS_SCHEMA, config_schema, config_strings, current_stack_name, is_dev_stack, string_array
from stack_view import UNKNOWN, StackView, as_bool, as_text, plain

DEFAULT_TLS_PROTOCOLS: Final = ("SSL", "SASL_SSL")
DEFAULT_SECRET_KEY_FRAGMENTS: Final = (
    "password",
    "secret",
    "sasl.jaas.config",
    "ssl.key.password",
    "basic.auth.user.info",
    "token",
)
# Keys that contain a fragment above but hold no secret (sasl.oauthbearer.token.endpoint.url).
DEFAULT_NON_SECRET_KEYS: Final = (r".*\.url", r".*\.class", r".*\.ms", r".*\.seconds")


_PLACEHOLDER: Final = r"\$\{[A-Za-z0-9_.\-]+:[^}]+\}"
_ONLY_PLACEHOLDERS: Final = re.compile(rf"\s*(?:{_PLACEHOLDER}\s*)+")
_JAAS: Final = re.compile(
    r"\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)(?P<options>.*?);?\s*",
    re.DOTALL,
)
_JAAS_OPTION: Final = re.compile(r'\s*(?P<name>[\w.\-]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s;"]+))')
_JAAS_SECRET_OPTIONS: Final = ("password", "secret", "token")


def is_placeholder_only(value: str) -> bool:
    """True when the value is nothing but config-provider references like `${file:/path:key}`."""
    return _ONLY_PLACEHOLDERS.fullmatch(value) is not None


def is_safe_jaas(value: str) -> bool:
    """A JAAS config whose secret options are all placeholders (the usual way to write one).

    `...PlainLoginModule required username="${file:/p:user}" password="${file:/p:pw}";` is safe;
    a literal password, or text we can't parse as options, is not.
    """
    match = _JAAS.fullmatch(value)
    if match is None:
        return False
    options = match["options"]
    position = 0
    while position < len(options):
        if not options[position:].strip():
            break
        option = _JAAS_OPTION.match(options, position)
        if option is None:
            return False
        position = option.end()
        option_value = option["quoted"] if option["quoted"] is not None else option["bare"]
        if any(word in option["name"].lower() for word in _JAAS_SECRET_OPTIONS) and not is_placeholder_only(
            option_value
        ):
            return False
    return True


def is_secret_key(key: str, fragments: Sequence[str], non_secret: Sequence[str]) -> bool:
    lowered = key.lower()
    if not any(fragment.lower() in lowered for fragment in fragments):
        return False
    for pattern in non_secret:
        try:
            if re.fullmatch(pattern, lowered):
                return False
        except re.error:  # a bad exception pattern must not switch the rule off
            continue
    return True


def plaintext_secret_keys(config: Mapping[str, Any], fragments: Sequence[str], non_secret: Sequence[str]) -> list[str]:
    """Keys of `config` that hold a secret in plain text. Looks at values, never returns them."""
    found: list[str] = []
    for key in sorted(config):
        if not is_secret_key(key, fragments, non_secret):
            continue
        value = as_text(config[key])
        if value is None or not value.strip():  # unknown, or nothing to leak
            continue
        if is_placeholder_only(value):
            continue
        if "jaas" in key.lower() and is_safe_jaas(value):
            continue
        found.append(key)
    return found


# --------------------------------------------------------------------------------------------
# Flows across datacenters use TLS
# --------------------------------------------------------------------------------------------


def check_cross_datacenter_tls(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    tls = {p.upper() for p in config_strings(args.get_config(), "tlsProtocols", DEFAULT_TLS_PROTOCOLS)}
    view = StackView.from_resources(args.resources)
    for flow in view.enabled_flows():
        source = view.clusters.get(flow[0])
        target = view.clusters.get(flow[1])
        if source is None or target is None or source.datacenter is None or target.datacenter is None:
            continue
        if source.datacenter == target.datacenter:
            continue
        connectors = [c for c in view.connectors if c.flow == flow and c.config is not None]
        problems: list[str] = []
        urn: str | None = None
        for side, cluster in (("source", source), ("target", target)):
            key = f"{side}.cluster.security.protocol"
            explicit = [(c, c.raw(key)) for c in connectors if c.raw(key) is not None]
            if explicit:
                for connector, value in explicit:
                    if value is not UNKNOWN and str(value).strip().upper() not in tls:
                        problems.append(f"{connector.name} sets {key}={value}")
                        urn = urn or connector.urn
            elif cluster.security_protocol is not None and cluster.security_protocol.upper() not in tls:
                problems.append(f"cluster '{cluster.alias}' uses {cluster.security_protocol}")
                urn = urn or cluster.urn
        if problems:
            report_violation(
                f"Flow {flow_label(flow)} crosses datacenters ({source.alias} in {source.datacenter}, "
                f"{target.alias} in {target.datacenter}) without TLS: {'; '.join(problems)}. Records and "
                f"credentials would cross the inter-datacenter network in clear text. Fix: give both clusters "
                f"security.protocol SSL or SASL_SSL (cluster `security: {{protocol: SASL_SSL}}` in stack config).",
                urn or view.flow_urn(flow),
            )


# --------------------------------------------------------------------------------------------
# Connect REST API requires authentication outside dev (resource validation)
# --------------------------------------------------------------------------------------------


def check_rest_auth(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type != WORKER_GROUP_TYPE or is_dev_stack(args.get_config()):
        return
    props = plain(args.props)
    if not isinstance(props, Mapping):
        return
    raw = props.get("restAuth")
    if raw is UNKNOWN:
        return
    if as_bool(raw) is True:
        return
    name = as_text(props.get("name")) or args.name
    state = "is not set" if raw is None else "is false"
    report_violation(
        f"Connect worker group '{name}' ({args.urn}): restAuth {state} on stack '{current_stack_name()}', so "
        f"anyone who reaches the REST API can read connector configs and create, change or delete connectors. "
        f"Fix: enable REST basic auth for worker group '{name}' (restAuth with a username and a password "
        f"secret in mm2:workerGroups), or add this stack to the rule's devStacks if it really is a dev stack.",
        None,
    )


# --------------------------------------------------------------------------------------------
# No plain-text secret in a connector config (resource validation)
# --------------------------------------------------------------------------------------------


def check_no_plaintext_secrets(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type != CONNECTOR_TYPE:
        return
    config_args = args.get_config()
    fragments = config_strings(config_args, "secretKeyFragments", DEFAULT_SECRET_KEY_FRAGMENTS)
    non_secret = config_strings(config_args, "nonSecretKeys", DEFAULT_NON_SECRET_KEYS)
    props = plain(args.props)
    if not isinstance(props, Mapping):
        return
    config = props.get("config")
    if not isinstance(config, Mapping):
        return
    name = as_text(props.get("name")) or args.name
    for key in plaintext_secret_keys(config, fragments, non_secret):
        # Never echo the value, not even part of it: violations end up in CI logs.
        report_violation(
            f"Connector {name} ({args.urn}): config key '{key}' holds a secret in plain text (value withheld). "
            f"It would be stored in the Pulumi state, sent to the Connect REST API and shown by "
            f"GET /connectors/{name}/config. Fix: keep the secret in a file or environment variable on the "
            f"workers and reference it with a config-provider placeholder such as "
            f"${{file:/etc/mm2/secrets.properties:<name>}} or ${{env:<VAR>}} (in a JAAS config, for each "
            f"password option).",
            None,
        )


cross_datacenter_flows_use_tls = StackValidationPolicy(
    name="cross-datacenter-flows-use-tls",
    description="Flows between clusters in different datacenters use TLS on both clusters.",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=check_cross_datacenter_tls,
    config_schema=config_schema(
        tlsProtocols=string_array(DEFAULT_TLS_PROTOCOLS, "security.protocol values that encrypt traffic.")
    ),
)

connect_rest_requires_auth = ResourceValidationPolicy(
    name="connect-rest-requires-auth",
    description="The Kafka Connect REST API of every worker group requires authentication outside dev stacks.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=check_rest_auth,
    config_schema=config_schema(devStacks=DEV_STACKS_SCHEMA),
)

no_plaintext_secrets_in_connector_config = ResourceValidationPolicy(
    name="no-plaintext-secrets-in-connector-config",
    description="Connector configs hold secrets only as config-provider placeholders (${file:...}, ${env:...}).",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=check_no_plaintext_secrets,
    config_schema=config_schema(
        secretKeyFragments=string_array(
            DEFAULT_SECRET_KEY_FRAGMENTS, "A config key containing one of these (case-insensitive) holds a secret."
        ),
        nonSecretKeys=string_array(
            DEFAULT_NON_SECRET_KEYS, "Regexes of keys that contain a fragment but hold no secret (full match)."
        ),
    ),
)
