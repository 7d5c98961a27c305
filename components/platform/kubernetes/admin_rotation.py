"""A kubernetes cluster's admin password rotated in one `up`, before its brokers roll onto it.

`admin` logs in two ways: PLAIN, checked against the brokers' JAAS table, which each broker
reads at start (what the stack logs in with before any SCRAM credential exists), and SCRAM, a
credential in the metadata log that every broker takes at once when it is replaced. So before
the roll (broker_roll.py) restarts the brokers one at a time onto the new PLAIN password, admin's
SCRAM credential gets the new password, logged in as the old admin; the roll then logs in with
SCRAM and the new password, which every broker accepts whichever password its JAAS table still
holds. The pure rule of which clusters may rotate is `security.admin_rotation_refusal`.

A rotation that stopped halfway (the roll refused) goes on at the next `up`: the new password
already logs in with SCRAM then, and nothing is set again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from components.kafka.admin import Login, login
from components.kafka.scram import set_passwords
from components.rpc_values import Refused, has_unknown, plain
from components.topology.model import ADMIN_USER

LOG = logging.getLogger("dynamic_provider.admin_rotation")


def _client(props: Mapping[str, Any]) -> dict[str, Any]:
    return dict((plain(props.get("admin")) or {}).get("client") or {})


def rotated(olds: Mapping[str, Any], news: Mapping[str, Any]) -> bool:
    """Whether `news` logs in as the same `admin` as `olds` with another password (unknown at a
    preview where the password is generated anew: the `up` sees it)."""
    if has_unknown(news.get("admin")):
        return False
    old, new = _client(olds), _client(news)
    same_user = old.get("sasl.username") == new.get("sasl.username") == ADMIN_USER
    return same_user and new.get("sasl.password") != old.get("sasl.password")


def scram_login(props: Mapping[str, Any]) -> dict[str, Any]:
    """`props`' admin login (bootstrap and PLAIN client) with SCRAM, the cluster's mechanism, instead."""
    admin = plain(props["admin"])
    return {"bootstrap": admin["bootstrap"], "client": {**admin["client"], "sasl.mechanism": props["mechanism"]}}


def switch_admin(
    olds: Mapping[str, Any],
    news: Mapping[str, Any],
    login: Callable[[Mapping[str, Any]], Login] = login,
    set_passwords: Callable[[Mapping[str, Any], Mapping[str, str]], None] = set_passwords,
) -> dict[str, Any]:
    """Admin's SCRAM credential set to `news`' password, logged in as `olds`' admin (SCRAM, else
    PLAIN) unless the new one already logs in; the login (SCRAM, new password) to roll with."""
    alias, new = news["cluster"], scram_login(news)
    tried = [login(new)]
    if tried[0].accepted:
        LOG.info(f"{alias}: the new admin password already logs in (SCRAM): rolling the brokers onto it")
        return new
    old_plain = plain(olds["admin"])
    for old in (scram_login({**news, "admin": old_plain}), old_plain):
        tried.append(login(old))
        if tried[-1].accepted:
            password = str(_client(news)["sasl.password"])
            set_passwords({"cluster": alias, "mechanism": news["mechanism"], **old}, {ADMIN_USER: password})
            LOG.info(f"{alias}: admin's SCRAM credential has the new password: rolling the brokers onto it")
            return new
    key = f"mm2:secrets.{alias}.admin.password"
    if all(t.accepted is False for t in tried):
        why = "its brokers refuse both. Fix: give the password the brokers hold as the old one's value"
    else:
        said = next((t.said for t in reversed(tried) if t.accepted is None and t.said), "no answer")
        why = (
            f"they could not be reached (librdkafka: {said}). Fix: check that its brokers are up and reachable "
            "from here, and the cluster's TLS settings"
        )
    raise Refused(
        f"{key}: rotating it, neither the new nor the old admin password logs in to kubernetes cluster {alias} at "
        f"{new['bootstrap']}: {why}, then run `pulumi up` again."
    )
